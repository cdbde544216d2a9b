//go:build !nocompose

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// TestComposeMigrateImageDefault: a release build prints the migration
// with its own released image; --migrate-image replaces it; a development
// build without it prints no migration command and --write refuses
// (compose.txtar).
func TestComposeMigrateImageDefault(t *testing.T) {
	proj := t.TempDir()
	if err := os.Mkdir(filepath.Join(proj, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	testdb.Make(t, filepath.Join(proj, "data", "app.db"), "wal", 1)
	yaml := "name: demo\nservices:\n  app:\n    image: example/app:1\n    volumes:\n      - ./data:/data\n"
	if err := os.WriteFile(filepath.Join(proj, "compose.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func(v string) { version = v }(version)
	version = "v0.2.0"
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{nil, " ghcr.io/preflight-sqlite/preflight:0.2.0 migrate --allow-unverified --from /from --to /to"},
		{[]string{"--migrate-image", "registry.example/preflight:mine"}, " registry.example/preflight:mine migrate --allow-unverified"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"compose", "--docker", "off", "--platform", "desktop", "-f", filepath.Join(proj, "compose.yaml")}, tc.flags...)
		if code := Main(args, &stdout, &stderr); code != exitUnsafe {
			t.Fatalf("preflight %s: exit %d, want %d; stderr:\n%s", strings.Join(args, " "), code, exitUnsafe, stderr.String())
		}
		if !strings.Contains(stdout.String(), tc.want) {
			t.Errorf("preflight %s: stdout lacks %q:\n%s", strings.Join(args, " "), tc.want, stdout.String())
		}
	}
}
