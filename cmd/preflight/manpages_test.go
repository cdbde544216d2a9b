package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// overstrike is man(1)'s bold (X\bX) and underline (_\bX) for a
// terminal: the character before each backspace.
var overstrike = regexp.MustCompile(".\x08")

// TestManPages: the release's man pages (`go run -tags gendocs
// ./cmd/preflight gen-man`, .goreleaser.yaml's before hook) are one per
// command of the tree, each renders with man(1) into its name, options
// with their PREFLIGHT_* variables and examples, dated by --date; and the
// release binary has no gen-man.
func TestManPages(t *testing.T) {
	if _, err := exec.LookPath("man"); err != nil {
		t.Skip("man(1) is not installed")
	}
	work := t.TempDir()
	gen := filepath.Join(work, "preflight-gendocs")
	build := exec.Command("go", "build", "-tags", "gendocs", "-o", gen, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags gendocs: %v\n%s", err, out)
	}
	dir := filepath.Join(work, "man1")
	// A page left from an earlier run of a command that is gone is removed.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "preflight-gone.1"), []byte(".TH GONE 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gen, "gen-man", "--date", "1700000000", dir).CombinedOutput(); err != nil {
		t.Fatalf("gen-man: %v\n%s", err, out)
	}

	var want []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		want = append(want, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				walk(sub)
			}
		}
	}
	walk(docTree())
	got, _ := filepath.Glob(filepath.Join(dir, "*"))
	for i := range got {
		got[i] = filepath.Base(got[i])
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("man pages:\n got %v\nwant %v", got, want)
	}
	for _, c := range []string{"preflight-check.1", "preflight-run.1", "preflight-kube-policy.1"} {
		if !slices.Contains(got, c) {
			t.Errorf("no %s", c)
		}
	}

	man := exec.Command("man", "-l", filepath.Join(dir, "preflight-check.1"))
	man.Env = append(os.Environ(), "MANWIDTH=100", "MAN_KEEP_FORMATTING=0", "PAGER=cat")
	out, err := man.Output()
	if err != nil {
		t.Fatalf("man -l preflight-check.1: %v", err)
	}
	page := overstrike.ReplaceAllString(string(out), "") // bold and underline as a terminal gets them
	for _, s := range []string{
		"PREFLIGHT-CHECK(1)", "NAME", "preflight-check - Check data directories",
		"SYNOPSIS", "preflight check [PATH]...",
		"--deep", "(env PREFLIGHT_DEEP)", "--data-dir", "PREFLIGHT_DATA_DIR",
		"EXAMPLE", "preflight check --deep /data",
		"Nov 2023", "SEE ALSO",
	} {
		if !strings.Contains(page, s) {
			t.Errorf("man preflight-check lacks %q:\n%s", s, page)
		}
	}

	if _, stderr, code := runMain(t, "gen-man", dir); code != exitUsage || !strings.Contains(stderr, "gen-man") {
		t.Errorf("the release binary ran gen-man: exit %d, %s", code, stderr)
	}
}
