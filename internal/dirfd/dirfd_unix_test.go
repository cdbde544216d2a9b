//go:build unix

package dirfd_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/preflight-sqlite/preflight/internal/dirfd"
)

// A symlink the path has at Open is resolved once; what is created later
// goes into the directory opened, whatever takes its name meanwhile.
func TestOpenDoesNotFollowLaterSymlinks(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	elsewhere := filepath.Join(base, "elsewhere", "sub")
	for _, d := range []string{filepath.Join(real, "sub"), elsewhere} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(real, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	d, err := dirfd.Open(filepath.Join(base, "link", "sub"))
	if err != nil {
		t.Fatalf("Open through a symlink present at the start: %v", err)
	}
	want, _ := os.Stat(filepath.Join(real, "sub"))
	if !d.Same(want) || d.Path != filepath.Join(real, "sub") {
		t.Errorf("Open(link/sub) = %s, not real/sub", d.Path)
	}
	d.Close()

	// Created files go into the directory opened, even after it is moved
	// and a symlink to elsewhere takes its name.
	d, err = dirfd.Open(filepath.Join(real, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := os.Rename(filepath.Join(real, "sub"), filepath.Join(real, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(real, "sub")); err != nil {
		t.Fatal(err)
	}
	f, err := d.Create("x-wal", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := os.Stat(filepath.Join(real, "moved", "x-wal")); err != nil {
		t.Errorf("Create after the swap: not in the directory opened: %v", err)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("Create after the swap wrote through the symlink: %v", ents)
	}
}

// Create and Open never follow a symlink at the name.
func TestCreateOpenRefuseSymlink(t *testing.T) {
	base := t.TempDir()
	target := filepath.Join(base, "target")
	if err := os.WriteFile(target, []byte("root's"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(base, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(data, "state")); err != nil {
		t.Fatal(err)
	}
	d, err := dirfd.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Create("state", 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create over a symlink: %v, want ErrExist", err)
	}
	if _, _, err := d.OpenRegular("state"); !errors.Is(err, unix.ELOOP) {
		t.Errorf("OpenRegular of a symlink: %v, want ELOOP", err)
	}
	if err := unix.Mkfifo(filepath.Join(data, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.OpenRegular("fifo"); err == nil {
		t.Errorf("OpenRegular of a FIFO: no error")
	}
	if err := d.Remove("state"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "root's" {
		t.Errorf("Remove of the symlink touched its target: %q, %v", b, err)
	}
}

// Mkdir refuses a directory that is not the one it created: a symlink in
// its place, or another directory moved there.
func TestMkdirChecksWhatItOpened(t *testing.T) {
	base := t.TempDir()
	d, err := dirfd.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	sub, err := d.Mkdir("new.partial", 0o700)
	if err != nil {
		t.Fatalf("Mkdir: %v", err)
	}
	if !d.Is("new.partial", sub) {
		t.Errorf("Is(new.partial) = false for the directory just made")
	}
	if err := d.Rename("new.partial", "new"); err != nil || !d.Is("new", sub) || d.Is("new.partial", sub) {
		t.Errorf("Rename: %v; Is(new) %v", err, d.Is("new", sub))
	}
	sub.Close()
	if _, err := d.Mkdir("new", 0o700); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Mkdir of an existing name: %v, want ErrExist", err)
	}
	if err := d.RemoveDir("new"); err != nil {
		t.Fatal(err)
	}
}

// MkdirAll makes the missing directories, mode 0700, and opens the last.
func TestMkdirAll(t *testing.T) {
	base := t.TempDir()
	d, err := dirfd.MkdirAll(filepath.Join(base, "a", "b"), 0o700)
	if err != nil {
		t.Fatalf("MkdirAll(a/b): %v", err)
	}
	defer d.Close()
	fi, err := os.Lstat(filepath.Join(base, "a", "b"))
	if err != nil || !d.Same(fi) || fi.Mode().Perm() != 0o700 {
		t.Fatalf("a/b after MkdirAll: %v, %v; want the directory opened, mode 0700", fi, err)
	}
}
