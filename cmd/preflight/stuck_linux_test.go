package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/locks"
)

// runMainWithin is runMain that fails the test when the command has not
// finished within limit.
func runMainWithin(t *testing.T, limit time.Duration, args ...string) (string, int) {
	t.Helper()
	type result struct {
		out  string
		code int
	}
	ch := make(chan result, 1)
	start := time.Now()
	go func() {
		out, _, code := runMain(t, args...)
		ch <- result{out, code}
	}()
	select {
	case r := <-ch:
		t.Logf("preflight %s: exit %d in %v", strings.Join(args, " "), r.code, time.Since(start).Round(time.Millisecond))
		return r.out, r.code
	case <-time.After(limit):
		t.Fatalf("preflight %s did not finish within %v: it hangs", strings.Join(args, " "), limit)
	}
	return "", 0
}

// TestCheckBesideStoppedFUSE: a process elsewhere on the host holds a file
// open on a FUSE mount whose daemon is stopped. check and locks on another
// directory finish at once, name the database's lock holder, and report
// the process probe as run, not unsure and not failed.
func TestCheckBesideStoppedFUSE(t *testing.T) {
	holder, _ := testdb.HoldOnStoppedFUSE(t)
	path, s := sqlite3Holding(t, "wal", "begin immediate; insert into t values (2);", locks.RoleWALWrite)
	dir := filepath.Dir(path)

	out, _ := runMainWithin(t, 20*time.Second, "check", "--docker", "off", "--format", "json", dir)
	r := decodeReport(t, out)
	db := r.DataDirs[0].Databases[0]
	// Ran, or unsure only for processes this sandbox denies even root
	// (its PID 1): never for the FUSE holder, never a stall.
	if got := r.Probes["processes"]; got != preflight.ProbeRan && got != preflight.ProbeUnsure {
		t.Errorf("check: probes.processes = %q, want ran\n%s", got, out)
	}
	for _, why := range db.WriterProbes.Blind {
		if strings.Contains(why, "did not answer") || strings.Contains(why, "PID "+itoa(holder)+" ") {
			t.Errorf("check: blind %q: the FUSE holder (PID %d) must be read from the inode cache", why, holder)
		}
	}
	if len(db.Writers) == 0 || db.Writers[0].PID != s.Cmd.Process.Pid {
		t.Errorf("check: writers %+v, want sqlite3 (PID %d)", db.Writers, s.Cmd.Process.Pid)
	}

	out, _ = runMainWithin(t, 20*time.Second, "locks", "--docker", "off", path)
	if want := "lock: process " + itoa(s.Cmd.Process.Pid) + " (sqlite3 " + path; !strings.Contains(out, want) {
		t.Errorf("locks: want %q in\n%s", want, out)
	}
}

// TestLocksStuckLockQueries: a database on a filesystem that answers
// opens, reads and stats but never a lock query (an NFS mount whose lock
// daemon is gone; here a FUSE server that handles locks and is stuck).
// locks, locks --watch and check finish within their timeouts and say the
// lock probe failed: never "no lock held", never verdict ok, for a
// rollback-mode database (which no other finding flags) too.
func TestLocksStuckLockQueries(t *testing.T) {
	backing := t.TempDir()
	testdb.Make(t, filepath.Join(backing, "app.db"), "wal", 1)
	testdb.Make(t, filepath.Join(backing, "del.db"), "delete", 1)
	mnt := testdb.StuckLocksFUSE(t, backing)
	path := filepath.Join(mnt, "app.db")
	del := filepath.Join(mnt, "del.db")

	for _, args := range [][]string{
		{"locks", "--docker", "off", "--fs-timeout", "1s", path},
		{"locks", "--docker", "off", "--fs-timeout", "1s", "--watch", "1s", path},
		{"locks", "--docker", "off", "--fs-timeout", "1s", del},
	} {
		out, code := runMainWithin(t, 20*time.Second, args...)
		if code == exitOK || strings.Contains(out, "no lock held") || strings.Contains(out, "verdict: ok") || !strings.Contains(out, "locks not probed (failed)") ||
			!strings.Contains(out, "WARN locks-not-probed") || !strings.Contains(out, "did not answer within 1s") {
			t.Errorf("preflight %s: exit %d, want the lock probe failed, a non-zero exit:\n%s", strings.Join(args, " "), code, out)
		}
	}
	out, code := runMainWithin(t, 20*time.Second, "check", "--docker", "off", "--fs-timeout", "1s", "--format", "json", mnt)
	r := decodeReport(t, out)
	db := r.DataDirs[0].Databases[0]
	if code == exitOK || db.WriterProbes.Locks != preflight.ProbeFailed || db.WriterProbes.Sure {
		t.Errorf("check: exit %d, locks %q sure %v, want failed, unsure, non-zero:\n%s", code, db.WriterProbes.Locks, db.WriterProbes.Sure, out)
	}
}
