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

// A refused migrate creates no --to, and its hint matches the reason:
// writers not ruled out, a --to that is not empty, a WAL that breaks
// before valid-looking frames.
func TestMigrateRefusalHints(t *testing.T) {
	from := t.TempDir()
	testdb.Make(t, filepath.Join(from, "app.db"), "delete", 3)
	to := filepath.Join(t.TempDir(), "mdst")
	_, stderr, code := runMain(t, "migrate", "--from", from, "--to", to, "--docker", "off")
	if code != 3 || !strings.Contains(stderr, "writers could not be ruled out") || !strings.Contains(stderr, "hint: stop every container") || strings.Contains(stderr, "empty --to") {
		t.Errorf("migrate with Docker off: exit %d, stderr %q; want 3, the writers hint and no --to hint", code, stderr)
	}
	if _, err := os.Lstat(to); !os.IsNotExist(err) {
		t.Errorf("refused migrate left --to %s behind (%v)", to, err)
	}

	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runMain(t, "migrate", "--from", from, "--to", full, "--docker", "off", "--allow-unverified")
	if code != 3 || !strings.Contains(stderr, "hint: give an empty --to") || strings.Contains(stderr, "stop every container") {
		t.Errorf("migrate into a non-empty --to: exit %d, stderr %q; want 3 and only the --to hint", code, stderr)
	}
}
