//go:build linux

package procfs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/procfs"
)

func requireLinux(t testing.TB) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skipf("skipping: /proc scanning needs linux, not %s", runtime.GOOS)
	}
}

func targetFor(t testing.TB, path string) procfs.Target {
	t.Helper()
	tg, err := procfs.TargetFor(path)
	if err != nil {
		t.Fatalf("TargetFor(%q): %v", path, err)
	}
	return tg
}

func scan(t testing.TB, opts procfs.Options, targets ...procfs.Target) procfs.Result {
	t.Helper()
	res, err := procfs.Scan(context.Background(), targets, opts)
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	// Even root may be denied some processes (no CAP_SYS_PTRACE, or a
	// non-dumpable process under a restrictive LSM); Sure must say so.
	if res.Sure != (res.Denied == 0) || res.Scanned == 0 || res.Denied > res.Scanned {
		t.Errorf("Scan: sure=%v denied=%d scanned=%d; want sure == (denied == 0), 0 < scanned",
			res.Sure, res.Denied, res.Scanned)
	}
	return res
}

// holdersOf returns the holders with pid pid, as "file how" strings.
func holdersOf(res procfs.Result, pid int) map[string]procfs.Holder {
	m := map[string]procfs.Holder{}
	for _, h := range res.Holders {
		if h.PID == pid {
			key := h.File + " mmap"
			if h.How != "mmap" {
				key = h.File + " fd"
			}
			m[key] = h
		}
	}
	return m
}

// comm is what /proc/PID/comm shows for a re-executed test binary.
func comm() string {
	c := filepath.Base(os.Args[0])
	if len(c) > 15 {
		c = c[:15]
	}
	return c
}

func TestScanLiveWriter(t *testing.T) {
	requireLinux(t)
	path := filepath.Join(t.TempDir(), "x.db")
	testdb.Make(t, path, "wal", 3)
	c := startChild(t, path)
	c.Do(t, "select count(*) from t")
	c.Do(t, "write-loop")
	tg := targetFor(t, path)
	if tg.DB.IsZero() || tg.WAL.IsZero() || tg.SHM.IsZero() {
		t.Fatalf("TargetFor(%q) = %+v, want all three files", path, tg)
	}
	res := scan(t, procfs.Options{}, tg)
	got := holdersOf(res, c.PID())
	for _, want := range []string{"db fd", "wal fd", "shm fd", "shm mmap"} {
		h, ok := got[want]
		if !ok {
			t.Errorf("Scan: no %q holder for child %d; holders: %+v", want, c.PID(), res.Holders)
			continue
		}
		if h.Comm != comm() || h.Target != tg.Path || h.User != "root" && os.Getuid() == 0 ||
			!strings.Contains(h.Cmdline, "-test.run") {
			t.Errorf("Scan: holder %+v, want comm %q, target %q, user root, cmdline with -test.run",
				h, comm(), tg.Path)
		}
	}
	if len(res.Unlinked) != 0 {
		t.Errorf("Scan: unlinked %+v for live, linked sidecars; want none", res.Unlinked)
	}
}

func TestScanIdleConnectionMapsSHM(t *testing.T) {
	requireLinux(t)
	path := filepath.Join(t.TempDir(), "x.db")
	testdb.Make(t, path, "wal", 3)
	c := startChild(t, path)
	c.Do(t, "select count(*) from t")
	res := scan(t, procfs.Options{}, targetFor(t, path))
	if _, ok := holdersOf(res, c.PID())["shm mmap"]; !ok {
		t.Errorf("Scan: no mmap holder of -shm for idle child %d; holders: %+v", c.PID(), res.Holders)
	}
}

func TestScanExcludes(t *testing.T) {
	requireLinux(t)
	path := filepath.Join(t.TempDir(), "x.db")
	testdb.Make(t, path, "wal", 3)
	// Our own descriptor: plain os.Open, no SQLite in this process.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := startChild(t, path)
	c.Do(t, "select count(*) from t")
	tg := targetFor(t, path)

	res := scan(t, procfs.Options{}, tg)
	if got := holdersOf(res, os.Getpid()); len(got) != 0 {
		t.Errorf("Scan: reported own process %d: %+v", os.Getpid(), got)
	}
	if len(holdersOf(res, c.PID())) == 0 {
		t.Errorf("Scan: child %d not found; holders: %+v", c.PID(), res.Holders)
	}
	res = scan(t, procfs.Options{ExcludePIDs: []int{c.PID()}}, tg)
	if len(res.Holders) != 0 {
		t.Errorf("Scan(ExcludePIDs: [%d]) holders = %+v, want none", c.PID(), res.Holders)
	}
}

func TestScanOtherPaths(t *testing.T) {
	requireLinux(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "a", "x.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}

	t.Run("symlink", func(t *testing.T) {
		testdb.Make(t, path, "wal", 1)
		link := filepath.Join(dir, "link.db")
		if err := os.Symlink(path, link); err != nil {
			t.Fatal(err)
		}
		c := startChild(t, link)
		c.Do(t, "select count(*) from t")
		res := scan(t, procfs.Options{}, targetFor(t, path))
		if got := holdersOf(res, c.PID()); len(got) < 3 {
			t.Errorf("Scan: child %d via symlink holds %v, want db, wal, shm", c.PID(), got)
		}
		if len(res.Unlinked) != 0 {
			t.Errorf("Scan: unlinked %+v, want none (SQLite resolves the symlink)", res.Unlinked)
		}
	})

	t.Run("hardlink-rollback", func(t *testing.T) {
		rb := filepath.Join(dir, "a", "r.db")
		testdb.Make(t, rb, "delete", 1)
		other := filepath.Join(dir, "b", "other.db")
		os.MkdirAll(filepath.Dir(other), 0o755)
		if err := os.Link(rb, other); err != nil {
			t.Fatal(err)
		}
		c := startChild(t, other)
		c.Do(t, "select count(*) from t")
		res := scan(t, procfs.Options{}, targetFor(t, rb))
		if _, ok := holdersOf(res, c.PID())["db fd"]; !ok {
			t.Errorf("Scan: child %d holding %s not found by inode; holders: %+v", c.PID(), other, res.Holders)
		}
	})

	// A WAL database opened through a hard link in another directory gets
	// its own -wal and -shm there: two WALs for one database. Scan reports
	// them as the process's sidecars that are not the target's.
	t.Run("hardlink-wal", func(t *testing.T) {
		wal := filepath.Join(dir, "a", "w.db")
		testdb.Make(t, wal, "wal", 1)
		other := filepath.Join(dir, "c", "other.db")
		os.MkdirAll(filepath.Dir(other), 0o755)
		if err := os.Link(wal, other); err != nil {
			t.Fatal(err)
		}
		c := startChild(t, other)
		c.Do(t, "select count(*) from t")
		res := scan(t, procfs.Options{}, targetFor(t, wal))
		files := map[string]bool{}
		for _, u := range res.Unlinked {
			if u.PID == c.PID() && strings.HasPrefix(u.Link, other) {
				files[u.File] = true
			}
		}
		if !files["wal"] || !files["shm"] {
			t.Errorf("Scan: unlinked = %+v, want child %d's wal and shm under %s", res.Unlinked, c.PID(), other)
		}
	})

	t.Run("bind-mount", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("skipping: mount --bind needs root")
		}
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			t.Skip("skipping: unshare not on PATH")
		}
		testdb.Make(t, path, "wal", 1)
		mnt := filepath.Join(dir, "mnt")
		os.MkdirAll(mnt, 0o755)
		// A private mount namespace in which dir/a is also at dir/mnt; the
		// helper opens the database by the second path only.
		script := `mount --bind "$1" "$2" && exec "$3" -test.run='^$'`
		cmd := exec.Command(unshare, "--mount", "--propagation", "private",
			"sh", "-c", script, "sh", filepath.Dir(path), mnt, os.Args[0])
		cmd.Env = append(os.Environ(), "PROCFS_TEST_HELPER=1", "PROCFS_TEST_DB="+filepath.Join(mnt, "x.db"))
		c := startCmd(t, cmd)
		if _, err := os.Stat(filepath.Join(mnt, "x.db")); err == nil {
			t.Fatalf("bind mount leaked into the test's namespace")
		}
		c.Do(t, "select count(*) from t")
		res := scan(t, procfs.Options{}, targetFor(t, path))
		got := holdersOf(res, c.PID())
		if len(got) < 3 {
			t.Errorf("Scan: child %d in another mount namespace holds %v, want db, wal, shm; holders: %+v",
				c.PID(), got, res.Holders)
		}
		if len(res.Unlinked) != 0 {
			t.Errorf("Scan: unlinked %+v, want none", res.Unlinked)
		}
	})
}

func TestScanReplacedSidecar(t *testing.T) {
	requireLinux(t)
	path := filepath.Join(t.TempDir(), "x.db")
	testdb.Make(t, path, "wal", 3)
	c := startChild(t, path)
	c.Do(t, "pragma wal_autocheckpoint=0")
	c.Do(t, "insert into t(v) values ('in the wal')")
	// Rename a new file over the -wal the child holds open.
	tmp := path + "-wal.new"
	if err := os.WriteFile(tmp, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path+"-wal"); err != nil {
		t.Fatal(err)
	}
	tg := targetFor(t, path)
	res := scan(t, procfs.Options{}, tg)
	var found bool
	for _, u := range res.Unlinked {
		if u.PID == c.PID() && u.File == "wal" && u.Target == tg.Path && strings.HasPrefix(u.How, "fd ") {
			found = true
			if u.Link != path+"-wal (deleted)" || u.Comm != comm() {
				t.Errorf("Scan: unlinked %+v, want link %q, comm %q", u, path+"-wal (deleted)", comm())
			}
		}
		if u.File != "wal" {
			t.Errorf("Scan: unlinked %+v, want only the wal", u)
		}
	}
	if !found {
		t.Errorf("Scan: unlinked = %+v, want child %d's replaced wal", res.Unlinked, c.PID())
	}
	if _, ok := holdersOf(res, c.PID())["wal fd"]; ok {
		t.Errorf("Scan: child %d reported as holding the new wal", c.PID())
	}
	// The child must not checkpoint into the database from a WAL we
	// replaced under it: kill it rather than closing cleanly.
	c.Cmd.Process.Kill()
}

// TestScanChurn scans repeatedly for 3 s while hundreds of short-lived
// processes start and exit.
func TestScanChurn(t *testing.T) {
	requireLinux(t)
	if testing.Short() {
		t.Skip("skipping: 3 s churn in -short mode")
	}
	path := filepath.Join(t.TempDir(), "x.db")
	testdb.Make(t, path, "wal", 1)
	tg := targetFor(t, path)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var spawned [2]int
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				// A burst of ten: half killed at once, half left to exit.
				var cmds []*exec.Cmd
				for i := range 10 {
					cmd := exec.Command("sleep", "0.02")
					if err := cmd.Start(); err != nil {
						continue
					}
					if i%2 == 0 {
						cmd.Process.Kill()
					}
					cmds = append(cmds, cmd)
				}
				for _, cmd := range cmds {
					cmd.Wait()
				}
				spawned[w] += len(cmds)
			}
		}()
	}
	scans := 0
	for ctx.Err() == nil {
		if _, err := procfs.Scan(context.Background(), []procfs.Target{tg}, procfs.Options{}); err != nil {
			t.Errorf("Scan during churn: %v", err)
			break
		}
		scans++
	}
	wg.Wait()
	t.Logf("%d scans while %d processes came and went", scans, spawned[0]+spawned[1])
}

// TestScanDenied runs Scan as an unprivileged user while a root child holds
// the database: the child's fd directory and maps are unreadable, so the
// answer must be unsure rather than "no holders".
func TestScanDenied(t *testing.T) {
	requireLinux(t)
	if os.Getuid() != 0 {
		t.Skip("skipping: needs root to start a helper as another user")
	}
	dir, err := os.MkdirTemp("", "procfs-denied")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	path := filepath.Join(dir, "x.db")
	testdb.Make(t, path, "wal", 1)
	c := startChild(t, path)
	c.Do(t, "select count(*) from t")
	// The test binary may sit in a directory only root can enter.
	bin := filepath.Join(dir, "procfs.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), "PROCFS_TEST_HELPER=scan", "PROCFS_TEST_DB="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scan helper as uid 65534: %v", err)
	}
	var res procfs.Result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("scan helper output %q: %v", out, err)
	}
	if res.Sure || res.Denied == 0 || len(holdersOf(res, c.PID())) != 0 {
		t.Errorf("Scan as uid 65534 = sure %v, denied %d, holders %+v; want unsure, denied > 0, child %d unseen",
			res.Sure, res.Denied, res.Holders, c.PID())
	}
	// The unreadable processes are named, by PID and comm, up to the bound.
	if want := min(res.Denied, procfs.MaxDeniedNamed); len(res.DeniedNamed) != want {
		t.Errorf("Scan as uid 65534: %d processes named of %d denied, want %d", len(res.DeniedNamed), res.Denied, want)
	}
	for _, p := range res.DeniedNamed {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p.PID))
		if err != nil {
			continue // exited since
		}
		if want := strings.TrimSuffix(string(b), "\n"); p.Comm != want {
			t.Errorf("Scan as uid 65534 names PID %d %q, want its comm %q", p.PID, p.Comm, want)
		}
	}
}

func TestScanContext(t *testing.T) {
	requireLinux(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := procfs.Scan(ctx, nil, procfs.Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Scan(canceled ctx) error = %v, want %v", err, context.Canceled)
	}
}

func TestScanMissingProcRoot(t *testing.T) {
	requireLinux(t)
	_, err := procfs.Scan(context.Background(), nil, procfs.Options{ProcRoot: filepath.Join(t.TempDir(), "none")})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Scan(missing ProcRoot) error = %v, want %v", err, os.ErrNotExist)
	}
}

func TestTargetFor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	tg := targetFor(t, path)
	if tg.Path != path || !tg.DB.IsZero() || !tg.WAL.IsZero() || !tg.SHM.IsZero() {
		t.Errorf("TargetFor(%q) = %+v, want zero FileIDs for missing files", path, tg)
	}
	testdb.Make(t, path, "delete", 1)
	tg = targetFor(t, path)
	if tg.DB.IsZero() && runtime.GOOS != "windows" {
		t.Errorf("TargetFor(%q).DB is zero for an existing file", path)
	}
}
