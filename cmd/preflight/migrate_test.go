package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// A --to that is a symlink into --from is bad input (exit 2) and leaves
// --from as it was.
func TestMigrateDestinationInsideSource(t *testing.T) {
	from := t.TempDir()
	testdb.Make(t, filepath.Join(from, "app.db"), "delete", 3)
	if err := os.Mkdir(filepath.Join(from, "zz"), 0o755); err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(t.TempDir(), "volume")
	if err := os.Symlink(filepath.Join(from, "zz"), to); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runMain(t, "migrate", "--from", from, "--to", to, "--docker", "off", "--allow-unverified")
	if code != 2 || !strings.Contains(stderr, "preflight: error:") || !strings.Contains(stderr, "inside") {
		t.Errorf("migrate --to a symlink into --from: exit %d, stderr %q; want 2 and an error naming the overlap", code, stderr)
	}
	if ents, err := os.ReadDir(filepath.Join(from, "zz")); err != nil || len(ents) != 0 {
		t.Errorf("--from/zz holds %v (%v), want it empty and present", ents, err)
	}
}
