//go:build linux

package locks_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/locks"
)

// TestRoles names the lock sets SQLite's unix VFS takes
// (walformat.html, lockingv3.html, os_unix.c).
func TestRoles(t *testing.T) {
	excl := dbLock("shared", "write", 7)
	for _, tt := range []struct {
		name string
		ls   []locks.Lock
		wal  bool
		want []locks.Held
	}{
		{"idle WAL connection", []locks.Lock{dbLock("shared", "read", 7), shmLock("dms", 128, "read", 7)}, true, []locks.Held{{Role: locks.RoleWALOpen}}},
		{"WAL writer", []locks.Lock{dbLock("shared", "read", 7), shmLock("write", 120, "write", 7), shmLock("read-1", 124, "read", 7), shmLock("dms", 128, "read", 7)}, true,
			[]locks.Held{{Role: locks.RoleWALWrite}, {Role: locks.RoleWALRead, ReadMark: 1}}},
		{"checkpointer", []locks.Lock{shmLock("checkpoint", 121, "write", 7), shmLock("read-0", 123, "read", 7), shmLock("read-2", 125, "write", 7), shmLock("dms", 128, "read", 7)}, true,
			[]locks.Held{{Role: locks.RoleCheckpoint}, {Role: locks.RoleWALRead}, {Role: locks.RoleReadMarkReset, ReadMark: 2}}},
		{"recovery", []locks.Lock{shmLock("write", 120, "write", 7), shmLock("checkpoint", 121, "write", 7), shmLock("recover", 122, "write", 7)}, true,
			[]locks.Held{{Role: locks.RoleRecover}, {Role: locks.RoleWALWrite}, {Role: locks.RoleCheckpoint}}},
		{"rollback reader", []locks.Lock{dbLock("shared", "read", 7)}, false, []locks.Held{{Role: locks.RoleShared}}},
		{"WAL connection seen by its SHARED lock only", []locks.Lock{dbLock("shared", "read", 7)}, true, []locks.Held{{Role: locks.RoleWALOpen}}},
		{"RESERVED", []locks.Lock{dbLock("reserved", "write", 7), dbLock("shared", "read", 7)}, false, []locks.Held{{Role: locks.RoleReserved}}},
		{"PENDING", []locks.Lock{dbLock("pending", "write", 7), dbLock("reserved", "write", 7), dbLock("shared", "read", 7)}, false, []locks.Held{{Role: locks.RolePending}}},
		{"EXCLUSIVE", []locks.Lock{dbLock("pending", "write", 7), dbLock("reserved", "write", 7), excl}, false, []locks.Held{{Role: locks.RoleExclusive}}},
		{"OFD", []locks.Lock{{File: "db", Name: "shared", Type: "read", OFD: true}}, false, []locks.Held{{Role: locks.RoleForeign}}},
	} {
		got := locks.Roles(tt.ls, tt.wal)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Roles(%s) (-want +got):\n%s", tt.name, diff)
		}
	}
	if got := locks.Phrase([]locks.Held{{Role: locks.RoleWALWrite}, {Role: locks.RoleWALRead, ReadMark: 3}}); got != "holds the write lock (WAL), reads (read mark 3)" {
		t.Errorf("Phrase(wal-write, wal-read 3) = %q", got)
	}
}

// sqlite3DB makes path with Debian's sqlite3 in journal mode mode.
func sqlite3DB(t *testing.T, path, mode string) {
	t.Helper()
	testdb.NeedSQLite3(t)
	if out, err := exec.Command("sqlite3", path, "pragma journal_mode="+mode+"; create table t(a); insert into t values (1);").CombinedOutput(); err != nil {
		t.Fatalf("sqlite3 %s: %v\n%s", path, err, out)
	}
}

// rolesOf polls Probe(path) until a holder holds role, and returns that
// holder's PID and roles; it fails after 10 s.
func rolesOf(t *testing.T, path string, role locks.Role, wal bool) (int, []locks.Held) {
	t.Helper()
	return rolesWhere(t, path, wal, func(hs []locks.Held) bool {
		return slices.ContainsFunc(hs, func(h locks.Held) bool { return h.Role == role })
	})
}

// rolesWhere polls Probe(path) until a holder's roles satisfy ok (a
// connection takes its locks one after another, so the first sight of
// one may be without the others), and returns that holder's PID and
// roles; it fails after 10 s.
func rolesWhere(t *testing.T, path string, wal bool, ok func([]locks.Held) bool) (int, []locks.Held) {
	t.Helper()
	var last []locks.Lock
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		res, err := locks.Probe(path)
		if err != nil {
			t.Fatalf("Probe(%q): %v", path, err)
		}
		last = res.Locks
		by := map[int][]locks.Lock{}
		for _, l := range res.Locks {
			by[l.HolderPID()] = append(by[l.HolderPID()], l)
		}
		for pid, ls := range by {
			if hs := locks.Roles(ls, wal); ok(hs) {
				return pid, hs
			}
		}
	}
	t.Fatalf("Probe(%q): no holder with the roles wanted within 10s; last locks %+v", path, last)
	return 0, nil
}

// TestRolesSQLite3: Debian's sqlite3 holding real locks, named by what
// they mean: BEGIN IMMEDIATE in WAL and rollback mode, EXCLUSIVE, and
// readers (each of two WAL readers named, through /proc/locks).
func TestRolesSQLite3(t *testing.T) {
	requireLinux(t)
	dir := t.TempDir()
	wal, del := filepath.Join(dir, "wal.db"), filepath.Join(dir, "del.db")
	sqlite3DB(t, wal, "wal")
	sqlite3DB(t, del, "delete")

	w := testdb.StartSQLite3(t, wal)
	w.Send(t, "begin immediate; insert into t values (2);")
	const writing = "holds the write lock (WAL), reads (read mark 0)"
	pid, hs := rolesWhere(t, wal, true, func(hs []locks.Held) bool { return locks.Phrase(hs) == writing })
	if pid != w.Cmd.Process.Pid || locks.Phrase(hs) != writing {
		t.Errorf("WAL BEGIN IMMEDIATE: holder %d %q, want %d \"holds the write lock (WAL), reads (read mark 0)\"", pid, locks.Phrase(hs), w.Cmd.Process.Pid)
	}
	r1, r2 := testdb.StartSQLite3(t, wal), testdb.StartSQLite3(t, wal)
	for _, r := range []*testdb.SQLite3{r1, r2} {
		r.Send(t, "begin; select count(*) from t;")
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		res, _ := locks.Probe(wal)
		readers := map[int]bool{}
		for _, l := range res.Locks {
			if l.Name == "read-0" && l.Type == "read" {
				readers[l.PID] = true
			}
		}
		if readers[r1.Cmd.Process.Pid] && readers[r2.Cmd.Process.Pid] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Probe(%q) with two readers: read-0 holders %v, want %d and %d", wal, readers, r1.Cmd.Process.Pid, r2.Cmd.Process.Pid)
		}
	}

	d := testdb.StartSQLite3(t, del)
	d.Send(t, "begin immediate; insert into t values (2);")
	if pid, hs := rolesOf(t, del, locks.RoleReserved, false); pid != d.Cmd.Process.Pid || len(hs) != 1 {
		t.Errorf("rollback BEGIN IMMEDIATE: holder %d %v, want %d RESERVED only", pid, hs, d.Cmd.Process.Pid)
	}
	d.Send(t, "commit; begin exclusive;")
	if pid, hs := rolesOf(t, del, locks.RoleExclusive, false); pid != d.Cmd.Process.Pid || locks.Phrase(hs) != (locks.Held{Role: locks.RoleExclusive}).String() {
		t.Errorf("rollback BEGIN EXCLUSIVE: holder %d %v, want %d EXCLUSIVE only", pid, hs, d.Cmd.Process.Pid)
	}
	d.Send(t, "commit; begin; select count(*) from t;")
	rolesOf(t, del, locks.RoleShared, false)
}

// TestRolesCheckpointInProgress: a checkpoint of a big WAL is seen as
// "is checkpointing" while it copies the frames.
func TestRolesCheckpointInProgress(t *testing.T) {
	requireLinux(t)
	path := filepath.Join(t.TempDir(), "big.db")
	sqlite3DB(t, path, "wal")
	// About 48 MB of frames the checkpoint has to copy back, synced.
	fill := "pragma wal_autocheckpoint=0; pragma cache_size=-200000; begin; " +
		"with recursive n(i) as (select 1 union all select i+1 from n where i < 12000) insert into t select randomblob(4000) from n; commit;"
	w := testdb.StartSQLite3(t, path)
	w.Send(t, fill)
	w.Send(t, ".shell touch "+path+".filled")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path + ".filled"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sqlite3 did not fill the WAL within 60s")
		}
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() < 40<<20 {
		t.Fatalf("-wal after the fill: %v, %v; want 40 MB or more", fi, err)
	}
	c := testdb.StartSQLite3(t, path)
	c.Send(t, "pragma synchronous=full; pragma wal_checkpoint(full);")
	pid, hs := rolesOf(t, path, locks.RoleCheckpoint, true)
	if pid != c.Cmd.Process.Pid || !strings.Contains(locks.Phrase(hs), "is checkpointing") {
		t.Errorf("checkpoint: holder %d %q, want %d is checkpointing", pid, locks.Phrase(hs), c.Cmd.Process.Pid)
	}
}

// TestRolesOtherPIDNamespace: a sqlite3 in a PID namespace of its own
// (unshare --pid --fork --mount-proc, as in a container) holding the WAL
// write lock is seen from ours (the parent) under its PID here, which
// /proc describes.
func TestRolesOtherPIDNamespace(t *testing.T) {
	requireLinux(t)
	unshare := testdb.NeedUnsharePID(t)
	path := filepath.Join(t.TempDir(), "ns.db")
	sqlite3DB(t, path, "wal")
	s := testdb.StartSQLite3(t, path, unshare, "--pid", "--fork", "--mount-proc", "--kill-child")
	s.Send(t, "begin immediate; insert into t values (2);")
	pid, hs := rolesOf(t, path, locks.RoleWALWrite, true)
	if pid == s.Cmd.Process.Pid || pid <= 0 {
		t.Fatalf("holder pid %d, want sqlite3's (a child of unshare %d)", pid, s.Cmd.Process.Pid)
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || !strings.HasPrefix(string(cmdline), "sqlite3\x00") {
		t.Errorf("/proc/%d/cmdline = %q, %v; want sqlite3", pid, cmdline, err)
	}
	if len(hs) == 0 || hs[0].Role != locks.RoleWALWrite {
		t.Errorf("roles %v, want wal-write first", hs)
	}
}

// TestWatch measures how long a real sqlite3 held the write lock: one
// hold released inside the window, one held past its end.
func TestWatch(t *testing.T) {
	requireLinux(t)
	path := filepath.Join(t.TempDir(), "w.db")
	sqlite3DB(t, path, "wal")
	s := testdb.StartSQLite3(t, path)
	ctx := context.Background()
	done := make(chan locks.Watched)
	go func() {
		w, err := locks.Watch(ctx, path, 3*time.Second, 10*time.Millisecond, 0)
		if err != nil {
			t.Error(err)
		}
		done <- w
	}()
	time.Sleep(100 * time.Millisecond)
	s.Send(t, "begin immediate; insert into t values (2);")
	s.Send(t, ".shell sleep 0.5")
	s.Send(t, "commit;")
	w := <-done
	if len(w.Holds) != 1 {
		t.Fatalf("Watch(3s, a 0.5s BEGIN IMMEDIATE) holds = %+v, want one", w.Holds)
	}
	h := w.Holds[0]
	if h.PID != s.Cmd.Process.Pid || h.Role != locks.RoleWALWrite || h.AtEnd || h.Times != 1 || h.Longest < 450*time.Millisecond || h.Longest > 2*time.Second {
		t.Errorf("Watch hold = %+v, want pid %d wal-write once, about 500ms, not at the end", h, s.Cmd.Process.Pid)
	}

	s.Send(t, "begin immediate; insert into t values (3);")
	rolesOf(t, path, locks.RoleWALWrite, true)
	w, err := locks.Watch(ctx, path, 400*time.Millisecond, 10*time.Millisecond, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Holds) != 1 || !w.Holds[0].AtEnd || w.Holds[0].Longest < 350*time.Millisecond || w.Samples < 10 {
		t.Errorf("Watch(0.4s) over a held write lock = %+v, want one hold to the end, about 400ms, 10 samples or more", w)
	}
}
