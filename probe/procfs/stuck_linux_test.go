package procfs_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/procfs"
)

// scanWithin runs Scan for targets and fails the test when it has not
// returned within limit: the scan is hung.
func scanWithin(t *testing.T, limit time.Duration, opts procfs.Options, targets ...procfs.Target) procfs.Result {
	t.Helper()
	type answer struct {
		res procfs.Result
		err error
	}
	ch := make(chan answer, 1)
	start := time.Now()
	go func() {
		res, err := procfs.Scan(context.Background(), targets, opts)
		ch <- answer{res, err}
	}()
	select {
	case a := <-ch:
		if a.err != nil {
			t.Fatalf("Scan: %v", a.err)
		}
		t.Logf("Scan returned in %v: scanned %d, denied %d, stalled %d", time.Since(start).Round(time.Millisecond), a.res.Scanned, a.res.Denied, a.res.Stalled)
		return a.res
	case <-time.After(limit):
		t.Fatalf("Scan did not return within %v: it is blocked", limit)
	}
	return procfs.Result{}
}

// heldDB makes a WAL database held open by a helper process.
func heldDB(t *testing.T) (string, *child) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "app.db")
	testdb.Make(t, db, "wal", 1)
	c := startChild(t, db)
	c.Do(t, "select count(*) from t")
	return db, c
}

// TestScanStoppedFUSEHolder: a process that holds a file open on a FUSE
// mount whose daemon is stopped does not hang the scan for a database
// elsewhere (the descriptor is stat'ed with AT_STATX_DONT_SYNC, answered
// from the kernel's attribute cache): the scan returns at once, finds the
// database's holder, and reads the stuck mount's holder in full (sure).
func TestScanStoppedFUSEHolder(t *testing.T) {
	requireLinux(t)
	pid, _ := testdb.HoldOnStoppedFUSE(t)
	db, c := heldDB(t)

	res := scanWithin(t, 10*time.Second, procfs.Options{}, targetFor(t, db))
	if h := holdersOf(res, c.PID()); h["db fd"].PID == 0 {
		t.Errorf("Scan: holders %+v, want process %d holding the database", res.Holders, c.PID())
	}
	for _, p := range res.DeniedNamed {
		if p.PID == pid {
			t.Errorf("Scan: the FUSE holder %d is counted denied: %+v", pid, res.DeniedNamed)
		}
	}
	if res.Stalled != 0 {
		t.Errorf("Scan: %d processes stalled (%+v), want none: the FUSE holder's descriptor must be read from the cache", res.Stalled, res.StalledNamed)
	}
}

// TestScanStalledProcess: a process whose /proc entries do not answer (a
// ProcRoot entry that is a symlink into a FUSE mount whose daemon is
// stopped, standing in for a read that blocks in the kernel) is left
// behind after Options.Timeout: the scan returns, still finds the
// database's holder through its real /proc entry, counts the stuck one in
// Stalled, names it, and is not sure.
func TestScanStalledProcess(t *testing.T) {
	requireLinux(t)
	_, mnt := testdb.HoldOnStoppedFUSE(t)
	db, c := heldDB(t)

	root := t.TempDir()
	const stuck = 2147483000
	for name, to := range map[string]string{
		strconv.Itoa(c.PID()): "/proc/" + strconv.Itoa(c.PID()),
		strconv.Itoa(stuck):   filepath.Join(mnt, "dir"),
	} {
		if err := os.Symlink(to, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	res := scanWithin(t, 10*time.Second, procfs.Options{ProcRoot: root, Timeout: 500 * time.Millisecond}, targetFor(t, db))
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Scan took %v with a 500ms timeout", took)
	}
	if h := holdersOf(res, c.PID()); h["db fd"].PID == 0 {
		t.Errorf("Scan: holders %+v, want process %d holding the database", res.Holders, c.PID())
	}
	if res.Sure || res.Stalled != 1 || res.Scanned != 2 || len(res.StalledNamed) != 1 || res.StalledNamed[0].PID != stuck {
		t.Errorf("Scan: sure %v, scanned %d, stalled %d %+v; want not sure, 2 scanned, PID %d stalled", res.Sure, res.Scanned, res.Stalled, res.StalledNamed, stuck)
	}
}
