//go:build linux

package testdb

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/fuseloop"
)

// StoppedFUSE mounts backing on a new directory through the fuseloop
// helper (a FUSE loopback shown as fuse.grpcfuse), then stops the helper
// with SIGSTOP: every call into the mount blocks, as on a stuck FUSE
// daemon or a dead NFS server, until cleanup resumes it, kills it and
// detaches the mount. It skips (fails under CI=true) without root or
// /dev/fuse.
func StoppedFUSE(t testing.TB, backing string) (mnt string) {
	t.Helper()
	mnt, stop, _ := StartFUSE(t, backing)
	stop()
	return mnt
}

// StartFUSE is StoppedFUSE without the stop: stop sends SIGSTOP to the
// helper when the caller is ready (a container bound to the mount first),
// resume sends SIGCONT. Cleanup resumes, kills and detaches.
func StartFUSE(t testing.TB, backing string) (mnt string, stop, resume func()) {
	t.Helper()
	NeedFUSE(t)
	bin := filepath.Join(t.TempDir(), "fuseloop")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/preflight-sqlite/preflight/internal/fuseloop/cmd/fuseloop").CombinedOutput(); err != nil {
		t.Fatalf("build fuseloop: %v\n%s", err, out)
	}
	mnt = t.TempDir()
	cmd := exec.Command(bin, "-name", "grpcfuse", backing, mnt)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
		syscall.Unmount(mnt, syscall.MNT_DETACH)
	})
	line, _ := bufio.NewReader(stderr).ReadString('\n')
	if !strings.Contains(line, "mounted") {
		t.Fatalf("fuseloop: %q", line)
	}
	stop = func() {
		if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	resume = func() { cmd.Process.Signal(syscall.SIGCONT) }
	return mnt, stop, resume
}

// HoldOnStoppedFUSE starts a process (sleep) whose standard input is a
// file on a FUSE mount, then stops the mount's daemon (SIGSTOP) and waits
// past go-fuse's 1 s attribute and entry timeouts, so that a stat(2)
// through the process's descriptor, or a lookup on the mount, now asks
// the stopped daemon and blocks. It returns the process's PID and the
// mount, which holds an empty directory "dir"; cleanup resumes the
// daemon, kills the process, then the daemon, and unmounts. It skips
// (fails under CI=true) without root or /dev/fuse.
func HoldOnStoppedFUSE(t testing.TB) (pid int, mnt string) {
	t.Helper()
	backing := t.TempDir()
	if err := os.WriteFile(filepath.Join(backing, "held"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(backing, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	mnt, stop, resume := StartFUSE(t, backing)
	f, err := os.Open(filepath.Join(mnt, "held"))
	if err != nil {
		t.Fatal(err)
	}
	holder := exec.Command("sleep", "600")
	holder.Stdin = f
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Cleanup(func() {
		// The daemon first: a process exiting flushes its FUSE files
		// and would wait for the stopped daemon, uninterruptibly.
		resume()
		holder.Process.Kill()
		holder.Wait()
	})
	stop()
	time.Sleep(1500 * time.Millisecond)
	return holder.Process.Pid, mnt
}

// StuckLocksFUSE mounts backing on a new directory through a FUSE
// loopback served in this process (fuse.nfs-stuck-locks) that forwards
// file locks to its server and never answers a lock query: F_GETLK and
// F_OFD_GETLK there block, as on an NFS mount whose lock daemon is gone,
// while opens, reads and stats answer. Cleanup releases the blocked
// queries and unmounts. It skips (fails under CI=true) without root or
// /dev/fuse.
func StuckLocksFUSE(t testing.TB, backing string) (mnt string) {
	t.Helper()
	NeedFUSE(t)
	mnt = t.TempDir()
	unmount, err := fuseloop.MountStuckLocks(backing, mnt, "nfs-stuck-locks")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unmount(); err != nil {
			t.Error(err)
			syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
	})
	return mnt
}
