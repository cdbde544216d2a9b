//go:build linux

package health_test

import (
	"context"
	"os"
	"os/exec"
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

// TestCheckIntegrityRefusesOthersTempDir: a TempDir another user owns
// (--tmp-dir inside a data directory) is refused before anything is
// removed or made in it. Its owner renamed root's secrets/ there to a
// copy directory's name; a cleanup of stale copies would delete it, and
// a copy directory made there could be swapped for a symlink before the
// copy is written.
func TestCheckIntegrityRefusesOthersTempDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the directory to another user")
	}
	path := filepath.Join(t.TempDir(), "app.db")
	makeDB(t, path, "wal", 10)
	parent, err := os.MkdirTemp("", "preflight-tmpdir-swap-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(parent, "data")
	secrets := filepath.Join(tmp, "secrets")
	if err := os.MkdirAll(secrets, 0o700); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(secrets, "key")
	if err := os.WriteFile(key, []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	renamed := filepath.Join(tmp, health.CopyDirPrefix+"secrets")
	mv := exec.Command("mv", secrets, renamed)
	mv.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := mv.CombinedOutput(); err != nil {
		t.Fatalf("mv as uid 65534: %v: %s", err, out)
	}

	in := health.CheckIntegrity(context.Background(), path, health.Options{Copy: true, TempDir: tmp})
	if in.Ran || !in.CopyFailed || !strings.Contains(in.Err, tmp) {
		t.Errorf("CheckIntegrity(Copy, TempDir of uid 65534) = ran %v, copy failed %v, err %q; want not run, naming %s", in.Ran, in.CopyFailed, in.Err, tmp)
	}
	if !exists(t, filepath.Join(renamed, "key")) {
		t.Errorf("CheckIntegrity removed root's directory that uid 65534 renamed to %s", renamed)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 1 {
		t.Errorf("TempDir after a refused copy holds %v, want only the renamed directory", left)
	}
}
