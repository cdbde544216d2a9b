package health_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/fuseloop"
	"github.com/preflight-sqlite/preflight/probe/health"
)

func requireLinux(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skipf("ProbeFS is implemented on Linux only (GOOS=%s)", runtime.GOOS)
	}
}

// probeFiles lists the probe files in dir.
func probeFiles(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if strings.HasPrefix(e.Name(), health.FSProbePrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestProbeFSLocal(t *testing.T) {
	requireLinux(t)
	dirs := []string{t.TempDir()}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "health-test-")
		if err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			dirs = append(dirs, d)
		}
	}
	for _, dir := range dirs {
		got := health.ProbeFS(dir)
		want := health.FSResult{Dir: dir, Ran: true}
		if got != want {
			t.Errorf("ProbeFS(%s) = %+v, want %+v", dir, got, want)
		}
		if left := probeFiles(t, dir); len(left) != 0 {
			t.Errorf("ProbeFS(%s) left %q", dir, left)
		}
	}
}

func TestProbeFSCannotCreate(t *testing.T) {
	requireLinux(t)
	dir := filepath.Join(t.TempDir(), "missing")
	got := health.ProbeFS(dir)
	if got.Ran || got.CreateErr == "" || got.MmapErr != "" || got.LockErr != "" {
		t.Errorf("ProbeFS(missing dir) = %+v, want CreateErr only", got)
	}
}

func TestCleanupFSProbes(t *testing.T) {
	dir := t.TempDir()
	// A pid that is certainly dead: a process that has exited and been reaped.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid
	name := func(pid int, hex string) string { return fmt.Sprintf("%s%d-%s", health.FSProbePrefix, pid, hex) }
	files := map[string]time.Duration{ // name -> age
		name(dead, "0123456789abcdef"):          0,
		name(os.Getpid(), "0123456789abcdef"):   0,
		name(os.Getppid(), "fedcba9876543210"):  0,
		name(os.Getppid(), "00000000000000aa"):  2 * time.Minute,
		name(dead, "short"):                     0,
		".preflight-fsprobe-x-0123456789abcdef": 0,
		"app.db":                                0,
	}
	for n, age := range files {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if age > 0 {
			old := time.Now().Add(-age)
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	os.Mkdir(filepath.Join(dir, name(dead, "1111111111111111")), 0o755)

	removed, err := health.CleanupFSProbes(dir)
	if err != nil {
		t.Fatalf("CleanupFSProbes: %v", err)
	}
	var got []string
	for _, p := range removed {
		got = append(got, filepath.Base(p))
	}
	slices.Sort(got)
	want := []string{name(os.Getppid(), "00000000000000aa")}
	if runtime.GOOS == "linux" {
		want = append(want, name(dead, "0123456789abcdef"))
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("CleanupFSProbes removed %q, want %q", got, want)
	}
}

// TestProbeFSFUSE runs the probe on a go-fuse loopback mount named
// "grpcfuse", like Docker Desktop's file sharing. Whether go-fuse's loopback
// supports shared writable mappings and POSIX locks is recorded, not
// asserted: the test only requires that the probe ran and left no file.
func TestProbeFSFUSE(t *testing.T) {
	requireLinux(t)
	why := ""
	if os.Geteuid() != 0 {
		why = "not root"
	} else if f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0); err != nil {
		why = fmt.Sprintf("/dev/fuse not usable: %v", err)
	} else {
		f.Close()
	}
	if why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("FUSE test needs root and /dev/fuse (CI=true): %s", why)
		}
		t.Skipf("FUSE test needs root and /dev/fuse: %s", why)
	}
	backing, mnt := t.TempDir(), t.TempDir()
	unmount, err := fuseloop.Mount(backing, mnt, "grpcfuse")
	if err != nil {
		t.Fatalf("fuseloop.Mount: %v", err)
	}
	t.Cleanup(func() {
		if err := unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	got := health.ProbeFS(mnt)
	t.Logf("ProbeFS on fuse.grpcfuse loopback: %+v", got)
	if !got.Ran || got.CreateErr != "" || got.RemoveErr != "" {
		t.Errorf("ProbeFS(fuse) = %+v, want Ran without create or remove errors", got)
	}
	if left := probeFiles(t, backing); len(left) != 0 {
		t.Errorf("ProbeFS(fuse) left %q in the backing directory", left)
	}
}
