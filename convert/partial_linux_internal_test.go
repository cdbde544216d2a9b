//go:build linux

package convert

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/rawfile"
	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// The data directory's owner puts a FIFO in place of the -wal after the
// guard's checks and before the backup an interrupted attempt made is
// compared with the files as they are: reusableBackup says the backup
// does not hold them, at once, instead of waiting in open(2) for a writer
// that never comes (the entrypoint would hang before the application).
func TestReusableBackupFIFOWAL(t *testing.T) {
	data := testdb.OwnedDataDir(t, "run the data directory's owner as another uid")
	path := filepath.Join(data, "app.db")
	db := testdb.Open(t, path, "wal", 50)
	b, err := backup(context.Background(), path, "", time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), 0, nil)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(b.Dir, "app.db-wal")); err != nil {
		t.Fatalf("the backup has no -wal to compare: %v", err)
	}
	os.Remove(path + "-wal")
	testdb.AsOwner(t, "mkfifo", path+"-wal")
	t.Cleanup(func() {
		// Release an open(2) still waiting for a writer (the old code).
		if f, err := os.OpenFile(path+"-wal", os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	done := make(chan error, 1)
	go func() {
		_, err := reusableBackup(b.Dir, path)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, rawfile.ErrNotRegular) {
			t.Errorf("reusableBackup with a FIFO for %s-wal = %v, want an error wrapping rawfile.ErrNotRegular", path, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("reusableBackup with a FIFO for %s-wal did not return within 10 s (a blocking open)", path)
	}
}
