package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestActionOutputInjection: a sarif-file input with a line break would
// add lines of its own to GITHUB_OUTPUT (a later verdict=ok overrides
// the real one); the action refuses it before anything runs.
func TestActionOutputInjection(t *testing.T) {
	const version = "0.0.0-test"
	skipActionPlatform(t)
	rel, _ := releaseDir(t, version)
	project := t.TempDir()
	if err := os.Mkdir(filepath.Join(project, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "compose.yaml"), []byte("services:\n  app:\n    image: example/app\n    volumes:\n      - ./data:/data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := "INPUT_ARGS=compose --docker off --platform desktop --data-dir app:/data"
	code, stderr, outputs := runAction(t, project, "INPUT_VERSION="+version, "PREFLIGHT_BASE_URL="+rel, "INPUT_SARIF_FILE=x.sarif\nverdict=ok", args)
	if code == 0 || strings.Contains(outputs, "verdict=ok") {
		t.Errorf("action with a sarif-file holding a line break: exit %d, outputs %q; want a failure and no injected verdict\n%s", code, outputs, stderr)
	}
}
