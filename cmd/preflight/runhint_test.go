//go:build linux

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mattn/go-shellwords"
)

// TestRunHintAsPrinted: the check command run's log points at for the
// full text is run as printed, and prints the finding the log named.
func TestRunHintAsPrinted(t *testing.T) {
	// A data directory that does not exist is a finding; the application
	// does not exist either, so run's exec fails and returns (it would
	// replace this test process otherwise).
	dir := filepath.Join(t.TempDir(), "data dir")
	_, stderr, code := runMain(t, "run", "--docker", "off", "--kube", "off", "--data-dir", dir, "--", filepath.Join(dir, "no-such-app"))
	if code == 0 {
		t.Fatalf("run of a missing application: exit 0; stderr:\n%s", stderr)
	}
	const prefix = "preflight: hint: the full text and fixes, "
	var printed string
	for _, line := range strings.Split(stderr, "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			_, printed, _ = strings.Cut(rest, "): ")
		}
	}
	if printed == "" {
		t.Fatalf("run printed no %q line:\n%s", prefix, stderr)
	}
	words, err := shellwords.Parse(printed)
	if err != nil || len(words) < 2 || words[0] != "preflight" {
		t.Fatalf("printed command %q: %v, want preflight ...", printed, err)
	}
	stdout, _, code := runMain(t, words[1:]...)
	if code == 0 || !strings.Contains(stdout, "data-dir-missing") || !strings.Contains(stdout, "fix: ") {
		t.Errorf("%s: exit %d, want non-zero with data-dir-missing and its fix:\n%s", printed, code, stdout)
	}
}
