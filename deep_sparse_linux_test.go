package preflight_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/docker"
)

// TestDeepSparseDatabase: the data directory's owner (uid 65534) extends
// its valid 3-page WAL database to 2 GiB, a hole that takes no space.
// Root's check --deep copies it into a --tmp-dir of 64 MiB (a tmpfs) as
// it is on disk, in seconds, and checks it: integrity ok, not
// integrity-not-checked for want of 2 GiB of room.
func TestDeepSparseDatabase(t *testing.T) {
	data := testdb.OwnedDataDir(t, "mount a tmpfs and run the owner as uid 65534")
	tmp := filepath.Join(filepath.Dir(data), "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(data, "app.db")
	testdb.Make(t, path, "wal", 3) // a WAL database no process has open: checked on a copy
	if err := os.Chown(path, testdb.OwnerUID, testdb.OwnerUID); err != nil {
		t.Fatal(err)
	}
	testdb.AsOwner(t, "truncate", "-s", "2G", path)
	if err := syscall.Mount("tmpfs", tmp, "tmpfs", 0, "size=64m"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(tmp, syscall.MNT_DETACH) })

	start := time.Now()
	r, err := preflight.Check(context.Background(), preflight.Options{
		Paths:   []string{data},
		Health:  preflight.HealthOptions{Deep: true, TempDir: tmp},
		Writers: preflight.WriterOptions{Docker: docker.Options{Mode: docker.ModeOff}},
	})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range r.Findings {
		ids = append(ids, string(f.ID)+": "+f.Message)
	}
	t.Logf("check --deep of a 2 GiB sparse database: %v, verdict %s, findings %v", took, r.Verdict, ids)
	if f := finding(r, "integrity-not-checked"); f != nil {
		t.Errorf("check --deep --tmp-dir (64 MiB) of a 2 GiB sparse database: integrity-not-checked (%s), want it checked", f.Message)
	}
	if len(r.DataDirs) != 1 || len(r.DataDirs[0].Databases) != 1 {
		t.Fatalf("check --deep: data directories %+v, want one database", r.DataDirs)
	}
	if h := r.DataDirs[0].Databases[0].Health; h == nil || h.Integrity == nil || !h.Integrity.OK {
		t.Errorf("check --deep of a 2 GiB sparse database: health %+v, want integrity ok", h)
	}
	if took > 20*time.Second {
		t.Errorf("check --deep of a 2 GiB sparse database took %v, want seconds", took)
	}
}
