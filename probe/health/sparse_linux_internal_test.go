//go:build linux

package health

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A database its owner extended to 2 GiB (a hole past its three 4 KiB
// pages; the check of a real one is in the root package) is copied as it is on disk: the copy has the same length and
// bytes, and takes about as many blocks as the original, in well under
// the time a copy of 2 GiB takes.
func TestCopyFilesSparse(t *testing.T) {
	src := filepath.Join(t.TempDir(), "app.db")
	pages := make([]byte, 3*4096)
	rand.Read(pages)
	if err := os.WriteFile(src, pages, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(src, 2<<30); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	start := time.Now()
	copied, err := copyFiles(context.Background(), src, dir)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("copyFiles(2 GiB sparse) = %v", err)
	}
	fi, err := os.Stat(copied)
	if err != nil {
		t.Fatal(err)
	}
	blocks := fi.Sys().(*syscall.Stat_t).Blocks * 512
	t.Logf("copied %d bytes, %d allocated, in %v", fi.Size(), blocks, took)
	if fi.Size() != 2<<30 || blocks > 1<<20 {
		t.Errorf("copy of a 2 GiB sparse database: %d bytes, %d allocated; want 2 GiB long, under 1 MiB allocated", fi.Size(), blocks)
	}
	if took > 5*time.Second {
		t.Errorf("copy of a 2 GiB sparse database took %v, want well under 5 s", took)
	}
	f, err := os.Open(copied)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, hole := make([]byte, len(pages)), make([]byte, 4096)
	if _, err := f.ReadAt(got, 0); err != nil || !bytes.Equal(got, pages) {
		t.Errorf("the copy's first three pages differ from the database's (%v)", err)
	}
	if _, err := f.ReadAt(hole, 1<<30); err != nil || !bytes.Equal(hole, make([]byte, 4096)) {
		t.Errorf("the copy at 1 GiB is not zeros as the hole is (%v)", err)
	}
}
