//go:build linux

package locks_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/locks"
)

func requireLinux(t testing.TB) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skipf("skipping: lock probing needs linux, not %s", runtime.GOOS)
	}
}

func probe(t testing.TB, path string) locks.Result {
	t.Helper()
	res, err := locks.Probe(path)
	if err != nil {
		t.Fatalf("Probe(%q): %v", path, err)
	}
	if !res.Sure || res.Err != "" || res.Method != "F_OFD_GETLK" && res.Method != "F_GETLK" {
		t.Errorf("Probe(%q) = sure %v, err %q, method %q; want sure, no error, a method", path, res.Sure, res.Err, res.Method)
	}
	return res
}

// Lock ranges, as SQLite's unix VFS takes them.
func dbLock(name, typ string, pid int) locks.Lock {
	l := locks.Lock{File: "db", Name: name, Type: typ, PID: pid}
	switch name {
	case "pending":
		l.Start, l.Len = 0x40000000, 1
	case "reserved":
		l.Start, l.Len = 0x40000001, 1
	case "shared":
		l.Start, l.Len = 0x40000002, 510
	}
	return l
}

func shmLock(name string, off int64, typ string, pid int) locks.Lock {
	return locks.Lock{File: "shm", Name: name, Start: off, Len: 1, Type: typ, PID: pid}
}

func TestProbe(t *testing.T) {
	requireLinux(t)
	tests := []struct {
		name  string
		mode  string   // journal mode of the database
		lines []string // run by the child; nil: no child
		shm   bool     // leave a -shm behind (as a crashed WAL writer does)
		want  func(pid int) []locks.Lock
	}{
		{
			// (a) Every open WAL connection holds SHARED on the database
			// and a read lock on the -shm DMS byte.
			name:  "wal-idle",
			mode:  "wal",
			lines: []string{"select count(*) from t"},
			want: func(pid int) []locks.Lock {
				return []locks.Lock{dbLock("shared", "read", pid), shmLock("dms", 128, "read", pid)}
			},
		},
		{
			// (b) BEGIN IMMEDIATE in WAL mode: the WAL write lock (byte
			// 120) and, as it opens a read transaction too, read-mark 0.
			name:  "wal-begin-immediate",
			mode:  "wal",
			lines: []string{"begin immediate"},
			want: func(pid int) []locks.Lock {
				return []locks.Lock{
					dbLock("shared", "read", pid),
					shmLock("write", 120, "write", pid),
					shmLock("read-0", 123, "read", pid),
					shmLock("dms", 128, "read", pid),
				}
			},
		},
		{
			// A WAL read transaction after a write holds a read mark
			// other than 0 (the WAL is not empty).
			name: "wal-read-transaction",
			mode: "wal",
			lines: []string{"pragma wal_autocheckpoint=0", "insert into t(v) values ('x')",
				"begin", "select count(*) from t"},
			want: func(pid int) []locks.Lock {
				return []locks.Lock{
					dbLock("shared", "read", pid),
					shmLock("read-1", 124, "read", pid),
					shmLock("dms", 128, "read", pid),
				}
			},
		},
		{
			// (c) EXCLUSIVE in rollback mode: write locks on PENDING,
			// RESERVED and the SHARED range (one merged kernel lock).
			name:  "rollback-exclusive",
			mode:  "delete",
			lines: []string{"begin exclusive", "insert into t(v) values ('x')"},
			want: func(pid int) []locks.Lock {
				return []locks.Lock{
					dbLock("pending", "write", pid),
					dbLock("reserved", "write", pid),
					dbLock("shared", "write", pid),
				}
			},
		},
		{
			// RESERVED in rollback mode: a write transaction that has not
			// begun to commit.
			name:  "rollback-immediate",
			mode:  "delete",
			lines: []string{"begin immediate", "insert into t(v) values ('x')"},
			want: func(pid int) []locks.Lock {
				return []locks.Lock{dbLock("reserved", "write", pid), dbLock("shared", "read", pid)}
			},
		},
		{
			// (d) An idle rollback-mode connection holds no lock: it is
			// invisible to this probe.
			name:  "rollback-idle",
			mode:  "delete",
			lines: []string{"select count(*) from t"},
			want:  func(int) []locks.Lock { return []locks.Lock{} },
		},
		{
			// (e) Nobody has the database open.
			name: "no-holder-wal",
			mode: "wal",
			want: func(int) []locks.Lock { return []locks.Lock{} },
		},
		{
			name: "no-holder-leftover-shm",
			mode: "wal",
			shm:  true,
			want: func(int) []locks.Lock { return []locks.Lock{} },
		},
		{
			name: "no-holder-rollback",
			mode: "delete",
			want: func(int) []locks.Lock { return []locks.Lock{} },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.db")
			testdb.Make(t, path, tt.mode, 3)
			if tt.shm {
				if err := os.WriteFile(path+"-shm", make([]byte, 32768), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			pid := 0
			if tt.lines != nil {
				c := startChild(t, path)
				for _, l := range tt.lines {
					c.Do(t, l)
				}
				pid = c.PID()
			}
			res := probe(t, path)
			if diff := cmp.Diff(tt.want(pid), res.Locks); diff != "" {
				t.Errorf("Probe(%q) locks (-want +got):\n%s", path, diff)
			}
			if mine := procLocksOf(t, path, os.Getpid()); len(mine) != 0 {
				t.Errorf("/proc/locks after Probe has locks of the test process or OFD locks: %q", mine)
			}
		})
	}
}

// TestProbeAcquiresNothing probes without pause while a child takes and
// drops an EXCLUSIVE lock with busy_timeout 0: any lock taken by the probe,
// even briefly, would make a BEGIN EXCLUSIVE fail with SQLITE_BUSY.
func TestProbeAcquiresNothing(t *testing.T) {
	requireLinux(t)
	path := filepath.Join(t.TempDir(), "x.db")
	testdb.Make(t, path, "delete", 1)
	c := startChild(t, path)
	c.Do(t, "pragma busy_timeout=0")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	probes, seen := 0, 0
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			res, err := locks.Probe(path)
			if err != nil {
				t.Errorf("Probe(%q): %v", path, err)
				return
			}
			probes++
			if len(res.Locks) > 0 {
				seen++
			}
		}
	}()
	for range 300 {
		c.Do(t, "begin exclusive")
		c.Do(t, "insert into t(v) values ('x')")
		c.Do(t, "commit")
	}
	close(stop)
	wg.Wait()
	t.Logf("%d probes, %d saw the child's locks, during 300 exclusive transactions", probes, seen)
	if probes == 0 {
		t.Errorf("no probe ran")
	}
}

// TestProbeOwnLocks documents the close pitfall: Probe reports a POSIX lock
// of the calling process (F_OFD_GETLK only) and then, by closing its own
// descriptor, drops it.
func TestProbeOwnLocks(t *testing.T) {
	requireLinux(t)
	path := filepath.Join(t.TempDir(), "x.db")
	testdb.Make(t, path, "delete", 1)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_RDLCK, Start: 0x40000002, Len: 510}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		t.Fatalf("F_SETLK: %v", err)
	}
	if got := procLocksOf(t, path, os.Getpid()); len(got) != 1 {
		t.Fatalf("/proc/locks = %q, want our one lock", got)
	}
	res := probe(t, path)
	if res.Method == "F_OFD_GETLK" {
		want := []locks.Lock{dbLock("shared", "read", os.Getpid())}
		if diff := cmp.Diff(want, res.Locks); diff != "" {
			t.Errorf("Probe(%q) with our own lock (-want +got):\n%s", path, diff)
		}
	}
	if got := procLocksOf(t, path, os.Getpid()); len(got) != 0 {
		t.Errorf("/proc/locks after Probe = %q, want our lock dropped by Probe's close", got)
	}
}

// TestProbeOFD takes an open file description lock in this process (not
// dropped by Probe's close: OFD locks belong to their description).
func TestProbeOFD(t *testing.T) {
	requireLinux(t)
	path := filepath.Join(t.TempDir(), "x.db")
	testdb.Make(t, path, "wal", 1)
	shm := path + "-shm"
	if err := os.WriteFile(shm, make([]byte, 32768), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(shm, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Start: 120, Len: 9}
	if err := syscall.FcntlFlock(f.Fd(), 37 /* F_OFD_SETLK */, &lk); err != nil {
		t.Skipf("skipping: F_OFD_SETLK: %v", err)
	}
	res := probe(t, path)
	want := []locks.Lock{}
	for i, name := range []string{"write", "checkpoint", "recover", "read-0", "read-1", "read-2", "read-3", "read-4", "dms"} {
		want = append(want, locks.Lock{File: "shm", Name: name, Start: 120 + int64(i), Len: 1, Type: "write", OFD: true})
	}
	if diff := cmp.Diff(want, res.Locks); diff != "" {
		t.Errorf("Probe(%q) with an OFD lock on -shm 120..128 (-want +got):\n%s", path, diff)
	}
}

// TestProbeOtherPIDNamespace probes from a new PID namespace while a child
// in ours holds a WAL connection: the kernel reports l_pid 0.
func TestProbeOtherPIDNamespace(t *testing.T) {
	requireLinux(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("skipping: unshare not on PATH")
	}
	path := filepath.Join(t.TempDir(), "x.db")
	testdb.Make(t, path, "wal", 1)
	c := startChild(t, path)
	c.Do(t, "select count(*) from t")
	cmd := exec.Command(unshare, "--pid", "--fork", os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LOCKS_TEST_HELPER=probe", "LOCKS_TEST_DB="+path)
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("skipping: unshare --pid (needs CAP_SYS_ADMIN): %v", err)
	}
	var res locks.Result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("helper output %q: %v", out, err)
	}
	// This /proc is the parent namespace's (no --mount-proc): /proc/locks
	// names the holder there, by device and inode.
	want := []locks.Lock{dbLock("shared", "read", 0), shmLock("dms", 128, "read", 0)}
	for i := range want {
		want[i].OtherNamespace, want[i].ProcPID = true, c.PID()
	}
	if diff := cmp.Diff(want, res.Locks); diff != "" || !res.Sure {
		t.Errorf("Probe(%q) from another PID namespace, the parent's /proc: sure=%v (-want +got):\n%s", path, res.Sure, diff)
	}

	// With its own /proc (--mount-proc, what a container has), the
	// kernel leaves the holder out of /proc/locks: invisible.
	cmd = exec.Command(unshare, "--pid", "--fork", "--mount-proc", os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LOCKS_TEST_HELPER=probe", "LOCKS_TEST_DB="+path)
	if out, err = cmd.Output(); err != nil {
		t.Fatalf("unshare --pid --fork --mount-proc: %v", err)
	}
	res = locks.Result{}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("helper output %q: %v", out, err)
	}
	for i := range want {
		want[i].ProcPID = 0
	}
	if diff := cmp.Diff(want, res.Locks); diff != "" || !res.Sure {
		t.Errorf("Probe(%q) from another PID namespace with its own /proc: sure=%v (-want +got):\n%s", path, res.Sure, diff)
	}
}

func TestProbeErrors(t *testing.T) {
	requireLinux(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.db")
	res, err := locks.Probe(missing)
	if !errors.Is(err, fs.ErrNotExist) || res.Sure || res.Err != err.Error() || res.Locks == nil {
		t.Errorf("Probe(%q) = %+v, %v; want not sure, Err = error text, error wrapping %v",
			missing, res, err, fs.ErrNotExist)
	}
	if os.Getuid() == 0 {
		return // root opens anything; the permission case needs a plain user
	}
	path := filepath.Join(dir, "x.db")
	testdb.Make(t, path, "delete", 1)
	os.Chmod(path, 0)
	if res, err := locks.Probe(path); err == nil || res.Sure {
		t.Errorf("Probe(unreadable %q) = %+v, %v; want not sure and an error", path, res, err)
	}
}

// procLocksOf returns the /proc/locks lines on path or path-shm that belong
// to pid or are OFD locks (pid -1).
func procLocksOf(t testing.TB, path string, pid int) []string {
	t.Helper()
	ids := map[string]bool{}
	for _, p := range []string{path, path + "-shm"} {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err == nil {
			dev := uint64(st.Dev) // glibc's gnu_dev_major/minor encoding
			major, minor := (dev>>8)&0xfff|(dev>>32)&^0xfff, dev&0xff|(dev>>12)&^0xff
			ids[fmt.Sprintf("%02x:%02x:%d", major, minor, st.Ino)] = true
		}
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "1: POSIX  ADVISORY  READ 21906 fe:00:9986383 128 128"
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || !ids[fields[5]] {
			continue
		}
		if fields[4] == fmt.Sprint(pid) || fields[4] == "-1" {
			out = append(out, sc.Text())
		}
	}
	return out
}

// A range chopped into more pieces than Probe queries (here 100 one-byte
// read locks on every other byte of SHARED, held by python3) is not
// reported free past the last piece looked at: Probe fails, not sure, and
// keeps the locks it found.
func TestProbeTooManyPieces(t *testing.T) {
	requireLinux(t)
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	path := filepath.Join(t.TempDir(), "app.db")
	if err := os.WriteFile(path, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
for i in range(100):
    fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, 0x40000002 + 2 * i)
print("held", flush=True)
sys.stdin.read()
`
	cmd := exec.Command(py, "-c", script, path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("python3 holder: %q, %v", line, err)
	}
	res, err := locks.Probe(path)
	if err == nil || res.Sure || !strings.Contains(res.Err, "more than 64 locks chop up the shared lock range") {
		t.Fatalf("Probe = sure %v, err %v (%q); want not sure, the range too chopped up", res.Sure, err, res.Err)
	}
	if len(res.Locks) < 30 { // about two queries a piece: the piece, and the gap before it
		t.Errorf("Probe kept %d locks, want the 30 or so it found", len(res.Locks))
	}
}
