//go:build linux

package health_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/preflight-sqlite/preflight/probe/health"
)

// staleCopy makes a copy directory in tmp as a run of CheckIntegrity
// leaves it when it is killed: named CopyDirPrefix+name, holding a copy.
func staleCopy(t *testing.T, tmp, name string) string {
	t.Helper()
	dir := filepath.Join(tmp, health.CopyDirPrefix+name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "copy.db"), make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func exists(t *testing.T, p string) bool {
	t.Helper()
	_, err := os.Lstat(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

// TestRemoveStaleCopies: a copy directory whose lock holder is gone
// (killed) is removed; one whose holder is alive (another process) is
// kept until that process ends; anything else is left alone.
func TestRemoveStaleCopies(t *testing.T) {
	tmp := t.TempDir()
	alive := staleCopy(t, tmp, "alive")
	gone := staleCopy(t, tmp, "gone")
	never := staleCopy(t, tmp, "never-locked") // its owner died before it locked: gone too
	other := filepath.Join(tmp, "not-ours")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	holder := startSibling(t, "lock-dir", alive)
	killed := startSibling(t, "lock-dir", gone)
	killed.kill()

	removed, err := health.RemoveStaleCopies(tmp)
	if err != nil {
		t.Fatalf("RemoveStaleCopies(%s): %v", tmp, err)
	}
	slices.Sort(removed)
	if want := []string{gone, never}; !slices.Equal(removed, want) {
		t.Errorf("RemoveStaleCopies removed %q, want %q", removed, want)
	}
	for p, want := range map[string]bool{alive: true, gone: false, never: false, other: true} {
		if got := exists(t, p); got != want {
			t.Errorf("after RemoveStaleCopies: %s exists = %v, want %v", p, got, want)
		}
	}

	holder.stop()
	if removed, err := health.RemoveStaleCopies(tmp); err != nil || !slices.Equal(removed, []string{alive}) {
		t.Errorf("RemoveStaleCopies after the holder ended = %q, %v; want [%s]", removed, err, alive)
	}
}

// TestCheckIntegrityCopyDir: a copied check removes copies left by killed
// runs, and leaves nothing of its own, also when ctx ends before the copy.
func TestCheckIntegrityCopyDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	makeDB(t, path, "wal", 100)
	tmp := t.TempDir()
	staleCopy(t, tmp, "left")

	in := health.CheckIntegrity(context.Background(), path, health.Options{Copy: true, TempDir: tmp})
	if !in.Ran || !in.OK || !in.CheckedCopy {
		t.Errorf("CheckIntegrity(Copy, TempDir) = ran %v ok %v copy %v (%s), want a checked copy", in.Ran, in.OK, in.CheckedCopy, in.Err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("TempDir after CheckIntegrity holds %v, want nothing", left)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	in = health.CheckIntegrity(ctx, path, health.Options{Copy: true, TempDir: tmp})
	if in.Ran || !strings.Contains(in.Err, "interrupted") {
		t.Errorf("CheckIntegrity(ended ctx) = ran %v, err %q; want not run, interrupted", in.Ran, in.Err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("TempDir after an interrupted CheckIntegrity holds %v, want nothing", left)
	}
}

// TestCheckIntegrityNoRoom: a copy that would not fit in TempDir (a 1 MiB
// tmpfs) is not started: integrity not checked, and nothing left there.
func TestCheckIntegrityNoRoom(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	path := filepath.Join(t.TempDir(), "app.db")
	makeDB(t, path, "delete", 100)
	tmp := t.TempDir()
	if err := syscall.Mount("tmpfs", tmp, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(tmp, syscall.MNT_DETACH) })

	in := health.CheckIntegrity(context.Background(), path, health.Options{Copy: true, TempDir: tmp})
	if in.Ran || !strings.Contains(in.Err, health.ErrNoRoom.Error()) {
		t.Errorf("CheckIntegrity(Copy into a 1 MiB tmpfs) = ran %v, err %q; want not run, %q", in.Ran, in.Err, health.ErrNoRoom)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("TempDir after a refused copy holds %v, want nothing", left)
	}
}
