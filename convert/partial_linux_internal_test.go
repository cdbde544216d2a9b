package convert

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/rawfile"
	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// ownerUID is the data directory's owner in these tests: another user
// than the root that converts.
const ownerUID = 65534

// ownedDataDir returns a fresh data directory that uid ownerUID owns,
// under a directory others can search. It needs root.
func ownedDataDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root to run the data directory's owner as another uid (CI)")
		}
		t.Skip("needs root to run the data directory's owner as another uid")
	}
	base, err := os.MkdirTemp("", "preflight-priv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	data := filepath.Join(base, "data")
	for _, err := range []error{os.Chmod(base, 0o755), os.Mkdir(data, 0o755), os.Chown(data, ownerUID, ownerUID)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return data
}

// AsDataOwner runs argv as uid ownerUID, the data directory's owner, and
// fails the test if it fails (the external tests use it too).
func AsDataOwner(t *testing.T, argv ...string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: ownerUID, Gid: ownerUID}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v as uid %d: %v: %s", argv, ownerUID, err, out)
	}
}

// The data directory's owner puts a FIFO in place of the -wal after the
// guard's checks and before the backup an interrupted attempt made is
// compared with the files as they are: reusableBackup says the backup
// does not hold them, at once, instead of waiting in open(2) for a writer
// that never comes (the entrypoint would hang before the application).
func TestReusableBackupFIFOWAL(t *testing.T) {
	data := ownedDataDir(t)
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
	AsDataOwner(t, "mkfifo", path+"-wal")
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
