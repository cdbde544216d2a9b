package migrate_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/migrate"
	"github.com/preflight-sqlite/preflight/probe/docker"
)

// TestRunLeavesWALSourceUnchanged migrates a WAL database that was closed
// cleanly (no -wal, no -shm): the copy must not create -wal or -shm in the
// source directory, and the copy keeps WAL.
func TestRunLeavesWALSourceUnchanged(t *testing.T) {
	from := t.TempDir()
	testdb.Make(t, filepath.Join(from, "app.db"), "wal", 20)
	before := names(t, from)
	if len(before) != 1 {
		t.Fatalf("source holds %v, want only app.db", before)
	}
	to := filepath.Join(t.TempDir(), "volume")
	res, err := migrate.Run(context.Background(), migrate.Options{From: from, To: to, Docker: docker.Options{Mode: docker.ModeOff}, AllowUnverified: true})
	if err != nil {
		t.Fatalf("Run: %v (%+v)", err, res)
	}
	if after := names(t, from); len(after) != 1 {
		t.Errorf("Run wrote into the source: it holds %v, want %v", after, before)
	}
	if len(res.Databases) != 1 || res.Databases[0].JournalMode != "wal" || res.Databases[0].Tables[0].To != 20 || !res.Databases[0].Verified {
		t.Errorf("copy: %+v", res.Databases)
	}
	if got := names(t, to); len(got) != 1 || got[0] != "app.db" {
		t.Errorf("destination holds %v, want [app.db]", got)
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}
