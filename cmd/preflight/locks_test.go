//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/locks"
	"github.com/preflight-sqlite/preflight/probe/procfs"
)

// sqlite3Holding makes a database in mode with Debian's sqlite3 and
// starts another sqlite3 (under wrapper) that runs sql on it, waiting
// until it holds a lock of role.
func sqlite3Holding(t *testing.T, mode, sql string, role locks.Role, wrapper ...string) (string, *testdb.SQLite3) {
	t.Helper()
	testdb.NeedSQLite3(t)
	path := filepath.Join(t.TempDir(), mode+".db")
	if out, err := exec.Command("sqlite3", path, "pragma journal_mode="+mode+"; create table t(a); insert into t values (1);").CombinedOutput(); err != nil {
		t.Fatalf("sqlite3: %v\n%s", err, out)
	}
	s := testdb.StartSQLite3(t, path, wrapper...)
	s.Send(t, sql)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		res, _ := locks.Probe(path)
		held := false
		for _, h := range locks.Roles(res.Locks, mode == "wal") {
			held = held || h.Role == role
		}
		if held {
			return path, s
		}
		if time.Now().After(deadline) {
			t.Fatalf("sqlite3 %q on %s: no %s lock within 10s (locks %+v)", sql, path, role, res.Locks)
		}
	}
}

// TestLocksNamesHolders: preflight locks (and check) say who holds which
// lock, in the problem's words, with PID, command line and user: BEGIN
// IMMEDIATE in WAL and rollback mode.
func TestLocksNamesHolders(t *testing.T) {
	for _, tt := range []struct {
		mode string
		role locks.Role
		want string
	}{
		{"wal", locks.RoleWALWrite, "holds the write lock (WAL)"},
		{"delete", locks.RoleReserved, "holds RESERVED (rollback journal"},
	} {
		path, s := sqlite3Holding(t, tt.mode, "begin immediate; insert into t values (2);", tt.role)
		who := "process " + itoa(s.Cmd.Process.Pid) + " (sqlite3 " + path + ", user root)"
		if os.Getuid() != 0 {
			who = "process " + itoa(s.Cmd.Process.Pid) + " (sqlite3 " + path + ", user "
		}
		for _, args := range [][]string{{"locks", "--docker", "off", path}, {"check", "--docker", "off", path}} {
			out, stderr, _ := runMain(t, args...)
			if !strings.Contains(out, "lock: "+who) || !strings.Contains(out, tt.want) {
				t.Errorf("preflight %s with sqlite3 BEGIN IMMEDIATE (%s): want %q and %q in\n%s%s", strings.Join(args, " "), tt.mode, "lock: "+who, tt.want, out, stderr)
			}
		}
		out, _, _ := runMain(t, "locks", "--docker", "off", "--format", "json", path)
		db := decodeReport(t, out).DataDirs[0].Databases[0]
		if len(db.LockHolders) != 1 || db.LockHolders[0].PID != s.Cmd.Process.Pid || db.LockHolders[0].Holds[0].Role != tt.role || db.LockHolders[0].Comm != "sqlite3" {
			t.Errorf("locks --format json (%s): lock_holders = %+v, want one: pid %d, %s first, comm sqlite3", tt.mode, db.LockHolders, s.Cmd.Process.Pid, tt.role)
		}
		s.Stop()
	}
}

// TestLocksWatchWriteLockHeld: a write lock held past --busy-timeout
// during --watch is write-lock-held, naming the holder and the remedy; a
// short one is not.
func TestLocksWatchWriteLockHeld(t *testing.T) {
	path, s := sqlite3Holding(t, "wal", "begin immediate; insert into t values (2);", locks.RoleWALWrite)
	out, _, code := runMain(t, "locks", "--docker", "off", "--watch", "700ms", "--busy-timeout", "300ms", "--format", "json", path)
	r := decodeReport(t, out)
	f := findingOf(r, "write-lock-held")
	if f == nil || code != exitWarn {
		t.Fatalf("locks --watch 700ms --busy-timeout 300ms over a held write lock: exit %d, no write-lock-held in %+v", code, r.Findings)
	}
	pid := itoa(s.Cmd.Process.Pid)
	if !strings.Contains(f.Message, "process "+pid+" (sqlite3") || !strings.Contains(f.Message, "holds the write lock (WAL) for at least") || f.Level != preflight.LevelWarn {
		t.Errorf("write-lock-held message %q (level %s): want the holder, its lock, how long", f.Message, f.Level)
	}
	if rem := strings.Join(f.Remedy, " "); !strings.Contains(rem, "kill "+pid) || !strings.Contains(rem, "short") {
		t.Errorf("write-lock-held remedy %q: want kill %s and short transactions", rem, pid)
	}
	text, _, _ := runMain(t, "locks", "--docker", "off", "--watch", "400ms", "--busy-timeout", "300ms", path)
	if !strings.Contains(text, "lock watch (400ms): process "+pid+" holds the write lock (WAL), longest") || !strings.Contains(text, "still held at the end") {
		t.Errorf("locks --watch text:\n%s", text)
	}
	out, _, _ = runMain(t, "locks", "--docker", "off", "--watch", "400ms", "--busy-timeout", "5s", "--format", "json", path)
	if f := findingOf(decodeReport(t, out), "write-lock-held"); f != nil {
		t.Errorf("locks --watch 400ms --busy-timeout 5s: %s, want none (held less than the busy timeout)", f.Message)
	}
}

// TestLocksOtherPIDNamespace: preflight in a PID namespace of its own
// sees the locks of sqlite3 outside it. With the parent's /proc
// (unshare --pid without --mount-proc, as with the host's /proc mounted
// in) it names the holder through /proc/locks; with its own /proc
// (--mount-proc, a container's) it says the holder is invisible.
func TestLocksOtherPIDNamespace(t *testing.T) {
	unshare := testdb.NeedUnsharePID(t)
	path, s := sqlite3Holding(t, "wal", "begin immediate; insert into t values (2);", locks.RoleWALWrite)
	pid := itoa(s.Cmd.Process.Pid)
	out, err := exec.Command(unshare, "--pid", "--fork", bin, "locks", "--docker", "off", path).Output()
	if !strings.Contains(string(out), "lock: host process "+pid+" (sqlite3 "+path) || !strings.Contains(string(out), "holds the write lock (WAL)") {
		t.Errorf("preflight locks in another PID namespace, the parent's /proc (%v):\n%s\nwant host process %s (sqlite3 ...) holds the write lock (WAL)", err, out, pid)
	}
	out, err = exec.Command(unshare, "--pid", "--fork", "--mount-proc", bin, "locks", "--docker", "off", path).Output()
	if !strings.Contains(string(out), "lock: a process in another PID namespace (another container or the host) that this /proc cannot name holds the write lock (WAL)") ||
		!strings.Contains(string(out), "--pid host") {
		t.Errorf("preflight locks in another PID namespace with its own /proc (%v):\n%s\nwant the holder said to be invisible, and --pid host", err, out)
	}
}

// TestLocksPrintedKill: every command preflight locks prints for a WAL
// write lock held by sqlite3 on this host is run as printed (sh -c, the
// built preflight first on PATH): kill PID stops the holder, after which
// locks finds no lock, and preflight convert, run then as its remedy
// says (once the application is stopped), converts the database.
func TestLocksPrintedKill(t *testing.T) {
	path, s := sqlite3Holding(t, "wal", "begin immediate; insert into t values (2);", locks.RoleWALWrite)
	out, _, _ := runMain(t, "locks", "--docker", "off", "--watch", "400ms", "--busy-timeout", "100ms", path)
	cmds := testdb.PrintedCommands(out)
	kill := "kill " + itoa(s.Cmd.Process.Pid)
	if !slices.Contains(cmds, kill) || !strings.Contains(out, "Stop it (or the service that runs it) before converting or moving the database: "+kill) ||
		!strings.Contains(out, "or stop it (or the service that runs it): "+kill) {
		t.Fatalf("locks printed %q, want %q as the stop command of live-writer-process and write-lock-held:\n%s", cmds, kill, out)
	}
	converted := runPrintedInOrder(t, cmds, func() {
		s.Cmd.Wait()
		if out, _, _ := runMain(t, "locks", "--docker", "off", path); !strings.Contains(out, "no lock held") {
			t.Errorf("locks after %s:\n%s\nwant no lock held", kill, out)
		}
	})
	if out, _, _ := runMain(t, "locks", "--docker", "off", path); converted && !strings.Contains(out, "  delete  ") {
		t.Errorf("locks after the printed commands:\n%s\nwant the database in delete mode (preflight convert ran)", out)
	}
}

// runPrintedInOrder runs the printed commands cmds as printed, each of
// which must succeed: the ones that stop a writer first (docker, kill),
// then stopped (it waits for them to take effect and checks it), then
// the others (preflight convert, which its remedy says to run once the
// application is stopped). It reports whether every command succeeded.
//
// A preflight command may instead refuse as unverified where this
// machine has processes that even root cannot read (a sandbox's PID 1):
// that refusal is accepted when a scan here is unsure too.
func runPrintedInOrder(t *testing.T, cmds []string, stopped func()) bool {
	t.Helper()
	var later []string
	for _, c := range cmds {
		if strings.HasPrefix(c, "preflight ") {
			later = append(later, c)
			continue
		}
		if out, code := testdb.RunPrinted(t, c, bin); code != 0 {
			t.Errorf("%s, as printed: exit %d\n%s", c, code, out)
		}
	}
	stopped()
	ok := true
	for _, c := range later {
		out, code := testdb.RunPrinted(t, c, bin)
		switch {
		case code == 0:
		case code == exitUnsafe && strings.Contains(out, "unverified: a live-writer probe could not run") && unreadableHere(t):
			t.Logf("%s refused as unverified: this machine has processes root cannot read", c)
			ok = false
		default:
			t.Errorf("%s, as printed: exit %d\n%s", c, code, out)
			ok = false
		}
	}
	return ok
}

// unreadableHere reports whether a /proc scan here cannot read every
// process.
func unreadableHere(t *testing.T) bool {
	res, err := procfs.Scan(t.Context(), nil, procfs.Options{})
	return err == nil && res.Denied > 0
}

func findingOf(r preflight.Report, id string) *preflight.Finding {
	for i := range r.Findings {
		if string(r.Findings[i].ID) == id {
			return &r.Findings[i]
		}
	}
	return nil
}

func itoa(n int) string { return strconv.Itoa(n) }
