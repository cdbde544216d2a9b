//go:build linux && !(386 || arm || mips || mipsle)

package fuseloop_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/preflight-sqlite/preflight/internal/fuseloop"
	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// mountEntry returns the filesystem type and source of the mount at
// mountpoint in /proc/self/mountinfo (proc(5): fields after " - ").
func mountEntry(t *testing.T, mountpoint string) (fstype, source string) {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		left, right, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		lf, rf := strings.Fields(left), strings.Fields(right)
		if len(lf) >= 5 && len(rf) >= 2 && lf[4] == mountpoint {
			fstype, source = rf[0], rf[1] // the last mount on a point wins
		}
	}
	if fstype == "" {
		t.Fatalf("no mountinfo line for %s", mountpoint)
	}
	return fstype, source
}

func TestMount(t *testing.T) {
	testdb.NeedFUSE(t)
	backing, mnt := t.TempDir(), t.TempDir()
	unmount, err := fuseloop.Mount(backing, mnt, "grpcfuse")
	if err != nil {
		t.Fatalf("Mount(%q, %q, grpcfuse): %v", backing, mnt, err)
	}
	mounted := true
	t.Cleanup(func() {
		if mounted {
			if err := unmount(); err != nil {
				t.Errorf("unmount: %v", err)
			}
		}
	})

	if fstype, source := mountEntry(t, mnt); fstype != "fuse.grpcfuse" || source != "grpcfuse" {
		t.Errorf("mountinfo for %s: type %q source %q, want fuse.grpcfuse grpcfuse", mnt, fstype, source)
	}

	// Data crosses the share.
	if err := os.WriteFile(filepath.Join(backing, "a.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(mnt, "a.txt"))
	if err != nil || string(got) != "hello" {
		t.Errorf("ReadFile through mount = %q, %v; want %q", got, err, "hello")
	}

	// Locks do not: another process holds a write lock on the backing file.
	db := filepath.Join(backing, "app.db")
	if err := os.WriteFile(db, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	holder := exec.Command(os.Args[0], "-test.run=^TestHelperLockHolder$")
	holder.Env = append(os.Environ(), "FUSELOOP_LOCK_FILE="+db)
	stdin, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	holder.Stderr = os.Stderr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); holder.Wait() })
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line
	}()
	select {
	case line := <-ready:
		if strings.TrimSpace(line) != "locked" {
			t.Fatalf("lock holder said %q, want \"locked\"", line)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("lock holder did not take its lock within 10s")
	}

	if typ := getlk(t, db); typ != unix.F_WRLCK {
		t.Fatalf("F_GETLK on backing file = %d, want F_WRLCK (%d): control failed", typ, unix.F_WRLCK)
	}
	if typ := getlk(t, filepath.Join(mnt, "app.db")); typ != unix.F_UNLCK {
		t.Errorf("F_GETLK through the mount = %d, want F_UNLCK (%d): locks should not cross the share", typ, unix.F_UNLCK)
	}

	mounted = false
	if err := unmount(); err != nil {
		t.Fatalf("unmount: %v", err)
	}
}

// getlk asks whether a write lock on the first 4096 bytes of path would be
// blocked, and returns the type of the conflicting lock or F_UNLCK.
func getlk(t *testing.T, path string) int16 {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 4096}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil {
		t.Fatalf("F_GETLK %s: %v", path, err)
	}
	return lk.Type
}

// TestHelperLockHolder is not a test: TestMount runs it in a child process
// to hold a POSIX write lock (POSIX locks are per process, so the test's own
// process would not see its own lock with F_GETLK).
func TestHelperLockHolder(t *testing.T) {
	path := os.Getenv("FUSELOOP_LOCK_FILE")
	if path == "" {
		t.Skip("helper process for TestMount")
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 4096}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
		t.Fatalf("F_SETLK %s: %v", path, err)
	}
	fmt.Println("locked")
	// Hold the lock until the parent closes our stdin.
	_, _ = bufio.NewReader(os.Stdin).ReadString(0)
}

// MountDirectIO: data crosses the mount, a shared mmap of a file on it is
// refused (mergerfs with cache.files=off), a private one is not needed.
func TestMountDirectIO(t *testing.T) {
	testdb.NeedFUSE(t)
	backing, mnt := t.TempDir(), t.TempDir()
	unmount, err := fuseloop.MountDirectIO(backing, mnt, "mergerfs")
	if err != nil {
		t.Fatalf("MountDirectIO(%q, %q, mergerfs): %v", backing, mnt, err)
	}
	t.Cleanup(func() {
		if err := unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	if fstype, _ := mountEntry(t, mnt); fstype != "fuse.mergerfs" {
		t.Errorf("mountinfo for %s: type %q, want fuse.mergerfs", mnt, fstype)
	}
	p := filepath.Join(mnt, "a.shm")
	if err := os.WriteFile(p, make([]byte, 32<<10), 0o644); err != nil {
		t.Fatalf("write through the mount: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(backing, "a.shm")); err != nil || fi.Size() != 32<<10 {
		t.Fatalf("backing file after a write through the mount: %v, %v", fi, err)
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := unix.Mmap(int(f.Fd()), 0, 32<<10, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err == nil {
		unix.Munmap(data)
		t.Fatalf("mmap(MAP_SHARED) of %s succeeded, want it refused (direct I/O)", p)
	}
	if err != unix.ENODEV {
		t.Errorf("mmap(MAP_SHARED) through the direct I/O mount: %v, want ENODEV", err)
	}

	// The same files through the plain loopback map fine: the refusal is
	// the direct I/O's.
	mnt2 := t.TempDir()
	unmount2, err := fuseloop.Mount(backing, mnt2, "mergerfs")
	if err != nil {
		t.Fatal(err)
	}
	defer unmount2()
	g, err := os.OpenFile(filepath.Join(mnt2, "a.shm"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	data, err = unix.Mmap(int(g.Fd()), 0, 32<<10, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap(MAP_SHARED) through the plain loopback: %v", err)
	}
	unix.Munmap(data)
}
