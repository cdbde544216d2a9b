package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/migrate"
	"github.com/preflight-sqlite/preflight/probe/docker"
)

// TestRunVerifyDoesNotBlockOnSwappedFIFO: whoever owns --from can replace
// a file migrate has copied with a FIFO before the copy is verified. The
// verification reads the source again; it must not block on the FIFO
// (an open that waits for a writer, deaf to SIGTERM) but find that the
// file no longer matches.
func TestRunVerifyDoesNotBlockOnSwappedFIFO(t *testing.T) {
	from := t.TempDir()
	testdb.Make(t, filepath.Join(from, "app.db"), "delete", 3)
	src := filepath.Join(from, "a.txt")
	if err := os.WriteFile(src, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Files copied after a.txt (each fsynced) keep the window between its
	// copy and its verification open.
	for i := range 300 {
		if err := os.WriteFile(filepath.Join(from, fmt.Sprintf("b%03d", i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	to := filepath.Join(t.TempDir(), "volume")
	swapped := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := os.Lstat(filepath.Join(to, "a.txt")); err == nil {
				err := os.Remove(src)
				if err == nil {
					err = syscall.Mkfifo(src, 0o644)
				}
				swapped <- err
				return
			}
		}
		swapped <- errors.New("a.txt never appeared in --to")
	}()
	type result struct {
		res *migrate.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := migrate.Run(context.Background(), migrate.Options{From: from, To: to, Docker: docker.Options{Mode: docker.ModeOff}, AllowUnverified: true})
		done <- result{res, err}
	}()
	if err := <-swapped; err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if !errors.Is(r.err, migrate.ErrVerify) || !strings.Contains(r.err.Error(), "a.txt") {
			t.Errorf("Run with a.txt swapped for a FIFO after its copy = %v, want ErrVerify naming a.txt", r.err)
		}
	case <-time.After(20 * time.Second):
		// Open the FIFO for writing to release the blocked open.
		if f, err := os.OpenFile(src, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		t.Fatal("Run still verifying after 20s: it blocks opening the FIFO that replaced a.txt")
	}
}

// TestRunCopiesHolesAsHoles: whoever owns --from can extend a file into
// a hole of 256 MiB (truncate), which takes no blocks; migrate, run as root,
// must not write it into --to as zeros. The copy keeps the hole
// and verifies (length and SHA-256, holes read as zeros).
func TestRunCopiesHolesAsHoles(t *testing.T) {
	from := t.TempDir()
	sparse := filepath.Join(from, "sparse.bin")
	if err := os.WriteFile(sparse, []byte("data before the hole"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(sparse, 256<<20); err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(t.TempDir(), "volume")
	res, err := migrate.Run(context.Background(), migrate.Options{From: from, To: to, Docker: docker.Options{Mode: docker.ModeOff}, AllowUnverified: true})
	if err != nil || len(res.Files) != 1 || !res.Files[0].Verified {
		t.Fatalf("Run(a 256 MiB sparse file) = %+v, %v; want it copied and verified", res, err)
	}
	fi, err := os.Stat(filepath.Join(to, "sparse.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if used := fi.Sys().(*syscall.Stat_t).Blocks * 512; fi.Size() != 256<<20 || used > 1<<20 {
		t.Errorf("copy of sparse.bin: %d bytes long, %d on disk; want 256 MiB long in at most 1 MiB (the hole kept)", fi.Size(), used)
	}
}
