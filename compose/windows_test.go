package compose_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// windowsProject is a compose file as written on Windows: a drive-letter
// bind with backslashes in the short syntax, one with slashes and a
// mode, and a long-syntax bind.
const windowsProject = `services:
  app:
    image: example/app
    volumes:
      - C:\Users\me\app\data:/data
  db:
    image: example/db
    volumes:
      - d:/projects/db:/var/lib/db:rw
  cache:
    image: example/cache
    volumes:
      - type: bind
        source: E:\cache
        target: /data
`

// TestWindowsPathsRewrite: each drive-letter bind is read with its whole
// source (the short syntax's colon after the drive letter is not the
// source:target one) and rewritten to a named volume, with no piece of the
// Windows path left in the volume entry.
func TestWindowsPathsRewrite(t *testing.T) {
	a, edits, err := rewriteAll(t, t.TempDir(), []byte(windowsProject))
	if err != nil {
		t.Fatalf("rewrite: %v", err)
	}
	want := map[string]string{"app": `C:\Users\me\app\data`, "db": "d:/projects/db", "cache": `E:\cache`}
	for _, m := range a.Mounts {
		if w := want[m.Service]; m.Source != w || m.RawSource != "" && m.RawSource != w {
			t.Errorf("service %s: source %q, raw source %q; want %q", m.Service, m.Source, m.RawSource, w)
		}
	}
	if len(edits) != 1 || !edits[0].Changed() {
		t.Fatalf("Plan: %d edits; want one change to compose.yaml", len(edits))
	}
	after := string(edits[0].After)
	for _, s := range []string{`C:`, `\Users`, "d:/", `E:\`, `:\`} {
		if strings.Contains(after, s) {
			t.Errorf("rewrite keeps %q:\n%s", s, after)
		}
	}
	for _, target := range []string{"app-data:/data\n", "db-data:/var/lib/db:rw\n", "target: /data\n"} {
		if !strings.Contains(after, target) {
			t.Errorf("rewrite lost %q:\n%s", target, after)
		}
	}
}

// TestWindowsPathsHostFS: a drive-letter bind source is on a cross-vm
// filesystem, on every system: a Linux engine reaches a Windows directory
// only through a VM's share. It is not looked up in this machine's mount
// table (where it would land on the working directory's mount and be
// judged local).
func TestWindowsPathsHostFS(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(name, []byte(windowsProject), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := compose.Load(context.Background(), compose.LoadOptions{Files: []string{name}, ProjectName: "win", Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := compose.Analyze(context.Background(), l, compose.Options{Platform: compose.PlatformLinux})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range a.Mounts {
		if m.Type != "bind" || !m.DataDir {
			continue
		}
		n++
		if m.HostFS == nil || m.HostFS.Class != mounts.ClassCrossVM || !strings.Contains(m.HostFS.Reason, "Windows path") {
			t.Errorf("Analyze: %s:%s (%s): host fs %+v (error %q); want class cross-vm, a Windows path", m.Service, m.Target, m.Source, m.HostFS, m.HostFSError)
		}
	}
	if n != 3 {
		t.Errorf("Analyze: %d data-directory binds; want 3", n)
	}
}
