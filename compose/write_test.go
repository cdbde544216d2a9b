package compose_test

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/compose"
)

// TestWriteEditThroughOwnLink: a compose file reached through this
// process's own symlink is edited where it points, the link stays, the
// backup is beside the target, and RestoreEdit puts the original back.
func TestWriteEditThroughOwnLink(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on windows")
	}
	dir := t.TempDir()
	target := filepath.Join(dir, "real", "compose.yaml")
	if err := os.Mkdir(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	before, after := []byte("services: {}\n"), []byte("services: {}\nvolumes: {}\n")
	if err := os.WriteFile(target, before, 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "compose.yaml")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	e := compose.FileEdit{File: link, Before: before, After: after}
	if err := compose.WriteEdit(&e); err != nil {
		t.Fatalf("WriteEdit(%s): %v", link, err)
	}
	if got, _ := os.ReadFile(target); !bytes.Equal(got, after) {
		t.Errorf("after WriteEdit %s holds %q, want %q", target, got, after)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("after WriteEdit %s is not a symlink: %v", link, err)
	}
	if fi, err := os.Stat(target); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("after WriteEdit %s mode = %v, %v; want 0640", target, fi.Mode(), err)
	}
	if e.Backup != target+".bak" {
		t.Errorf("WriteEdit backup = %q, want %q", e.Backup, target+".bak")
	}
	if got, _ := os.ReadFile(e.Backup); !bytes.Equal(got, before) {
		t.Errorf("backup %s holds %q, want %q", e.Backup, got, before)
	}
	if err := compose.RestoreEdit(e); err != nil {
		t.Fatalf("RestoreEdit: %v", err)
	}
	if got, _ := os.ReadFile(target); !bytes.Equal(got, before) {
		t.Errorf("after RestoreEdit %s holds %q, want %q", target, got, before)
	}
	names, _ := os.ReadDir(filepath.Dir(target))
	if len(names) != 2 {
		t.Errorf("after RestoreEdit %s holds %d entries, want compose.yaml and its backup", filepath.Dir(target), len(names))
	}
}

// TestWriteEditChangedFile: a file whose bytes are no longer those the
// project was read from is not edited and gets no backup.
func TestWriteEditChangedFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(file, []byte("services: {x: {}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := compose.FileEdit{File: file, Before: []byte("services: {}\n"), After: []byte("volumes: {}\n")}
	err := compose.WriteEdit(&e)
	if err == nil || !strings.Contains(err.Error(), "changed since it was read") {
		t.Fatalf("WriteEdit of a changed file = %v, want a refusal", err)
	}
	if _, err := os.Stat(file + ".bak"); !os.IsNotExist(err) {
		t.Errorf("WriteEdit of a changed file left %s.bak (%v)", file, err)
	}
}
