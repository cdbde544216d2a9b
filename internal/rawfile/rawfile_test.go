//go:build unix

package rawfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/rawfile"
)

// A FIFO in place of a file is refused at once (a plain open would wait
// for a writer forever), a symlink is refused with nofollow, and a regular
// file opens.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	reg, fifo, link := filepath.Join(dir, "app.db-wal"), filepath.Join(dir, "x-wal"), filepath.Join(dir, "l-wal")
	if err := os.WriteFile(reg, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(reg, link); err != nil {
		t.Fatal(err)
	}
	f, err := rawfile.Open(reg, true)
	if err != nil {
		t.Fatalf("Open(regular file) = %v", err)
	}
	f.Close()

	if err := within(t, "Open(fifo)", func() (*os.File, error) { return rawfile.Open(fifo, false) }); !errors.Is(err, rawfile.ErrNotRegular) {
		t.Errorf("Open(fifo) = %v, want ErrNotRegular", err)
	}

	if _, err := rawfile.Open(link, true); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("Open(symlink, nofollow) = %v, want ELOOP", err)
	}
	if f, err := rawfile.Open(link, false); err != nil {
		t.Errorf("Open(symlink to a regular file) = %v", err)
	} else {
		f.Close()
	}
}

// OpenDir opens a directory and refuses a FIFO in its place at once.
func TestOpenDir(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "data")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := rawfile.OpenDir(dir)
	if err != nil {
		t.Fatalf("OpenDir(directory) = %v", err)
	}
	f.Close()
	if err := within(t, "OpenDir(fifo)", func() (*os.File, error) { return rawfile.OpenDir(fifo) }); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("OpenDir(fifo) = %v, want ENOTDIR", err)
	}
}

// within returns open's error, failing the test (named by call) when it
// has not returned within 10 s.
func within(t *testing.T, call string, open func() (*os.File, error)) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		f, err := open()
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s blocked", call)
		return nil
	}
}
