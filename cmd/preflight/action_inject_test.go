package main

import (
	"strings"
	"testing"
)

// TestActionOutputInjection: a sarif-file input with a line break would
// add lines of its own to GITHUB_OUTPUT (a later verdict=ok overrides
// the real one); the action refuses it before anything runs.
func TestActionOutputInjection(t *testing.T) {
	const version = "0.0.0-test"
	rel, _, project := actionProject(t, version)
	args := "INPUT_ARGS=compose --docker off --platform desktop --data-dir app:/data"
	code, stderr, outputs := runAction(t, project, "INPUT_VERSION="+version, "PREFLIGHT_BASE_URL="+rel, "INPUT_SARIF_FILE=x.sarif\nverdict=ok", args)
	if code == 0 || strings.Contains(outputs, "verdict=ok") {
		t.Errorf("action with a sarif-file holding a line break: exit %d, outputs %q; want a failure and no injected verdict\n%s", code, outputs, stderr)
	}
}
