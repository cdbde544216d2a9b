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

	done := make(chan error, 1)
	go func() {
		f, err := rawfile.Open(fifo, false)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, rawfile.ErrNotRegular) {
			t.Errorf("Open(fifo) = %v, want ErrNotRegular", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Open(fifo) blocked")
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
