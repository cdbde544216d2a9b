//go:build unix

package dirfd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/dirfd"
)

// TestUntrustedLink: a symlink on the way to a file is untrusted when
// another user owns it or its directory, or its directory is writable by
// others without the sticky bit; this process's own links in its own
// directories are not, however many are chained.
func TestUntrustedLink(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("TestUntrustedLink chowns to uid 65534: needs root")
		}
		t.Skip("TestUntrustedLink chowns to uid 65534: needs root")
	}
	dir := t.TempDir()
	mk := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	realDir := mk("real")
	file := filepath.Join(realDir, "compose.yaml")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := func(dir, name, target string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	own := link(mk("own"), "compose.yaml", file)
	chained := link(mk("chain"), "c.yaml", filepath.Join("..", "own", "compose.yaml"))
	viaDir := filepath.Join(link(dir, "realdir", "real"), "compose.yaml")

	theirs := link(mk("theirs"), "compose.yaml", file)
	if err := os.Lchown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	userDir := mk("userdir")
	inUserDir := link(userDir, "compose.yaml", file)
	if err := os.Chown(userDir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	open := mk("open")
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	inOpen := link(open, "compose.yaml", file)
	// A link further down a chain that another user owns.
	deep := link(mk("deep"), "c.yaml", theirs)

	for _, tt := range []struct {
		name, path, via, why string
	}{
		{"plain file", file, "", ""},
		{"own link", own, "", ""},
		{"own chain", chained, "", ""},
		{"own directory link", viaDir, "", ""},
		{"link of uid 65534", theirs, theirs, "uid 65534"},
		{"link in uid 65534's directory", inUserDir, inUserDir, "belongs to uid 65534"},
		{"link in a world-writable directory", inOpen, inOpen, "writable by group or others"},
		{"chain to a link of uid 65534", deep, theirs, "uid 65534"},
	} {
		via, why := dirfd.UntrustedLink(tt.path)
		if via != tt.via || !strings.Contains(why, tt.why) {
			t.Errorf("%s: UntrustedLink(%s) = %q, %q; want %q, %q", tt.name, tt.path, via, why, tt.via, tt.why)
		}
	}
}
