package preflight_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADME keeps the README a front door: at most 15,000 bytes; the
// error strings people search for, and SQLite's own pages on the cause, in
// its first screen (the first 2,500 bytes: the title, the table of errors,
// the paragraph of cause); every relative link names a file of the
// repository, and every docs page it links is one mkdocs builds; and the
// two commands that matter on a fresh machine name executable scripts.
func TestREADME(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if len(b) > 15000 {
		t.Errorf("README.md is %d bytes, want at most 15,000: move the detail to docs/", len(b))
	}
	screen := readme[:min(len(readme), 4000)]
	first := screen[:strings.Index(screen, "**preflight**")]
	for _, s := range []string{"database disk image is malformed", "database is locked", "SQLITE_BUSY", "SQLITE_CORRUPT",
		"disk I/O error", "unable to open database file",
		"https://sqlite.org/wal.html", "https://sqlite.org/lockingv3.html", "https://sqlite.org/howtocorrupt.html"} {
		if !strings.Contains(first, s) {
			t.Errorf("README.md's first screen (up to the paragraph on preflight) does not say %q", s)
		}
	}
	if len(first) > 2500 {
		t.Errorf("README.md's first screen is %d bytes, want at most 2,500", len(first))
	}
	nav, err := os.ReadFile("mkdocs.yml")
	if err != nil {
		t.Fatal(err)
	}
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	for _, m := range link.FindAllStringSubmatch(readme, -1) {
		target := m[1]
		if strings.Contains(target, "://") {
			continue
		}
		if _, err := os.Stat(target); err != nil {
			t.Errorf("README.md links to %s: %v", target, err)
		}
		if page, ok := strings.CutPrefix(target, "docs/"); ok && strings.HasSuffix(page, ".md") &&
			!strings.Contains(string(nav), " "+page+"\n") {
			t.Errorf("README.md links to %s, which is not in mkdocs.yml's nav", target)
		}
	}
	for _, cmd := range []string{"scripts/demo.sh", ".ci/run"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(cmd) + ` +# `).MatchString(readme) {
			t.Errorf("README.md does not give %s as a command line", cmd)
		}
		fi, err := os.Stat(filepath.FromSlash(cmd))
		if err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("README.md's %s is not an executable file (%v)", cmd, err)
		}
	}
}
