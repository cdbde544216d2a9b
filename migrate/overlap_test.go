package migrate_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/migrate"
	"github.com/preflight-sqlite/preflight/probe/docker"
)

// tree lists every entry under dir with its size, sorted.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := de.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel+" "+fi.Mode().String()+" "+strings.Repeat("#", int(min(fi.Size(), 64))))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// A --to that is --from, or inside it, by another spelling (a symlink to
// an existing or a missing directory in --from, a bind mount of --from)
// is bad input: nothing is written or removed.
func TestRunRefusesDestinationInsideSource(t *testing.T) {
	from := t.TempDir()
	testdb.Make(t, filepath.Join(from, "app.db"), "delete", 3)
	if err := os.Mkdir(filepath.Join(from, "zz"), 0o755); err != nil {
		t.Fatal(err)
	}
	links := t.TempDir()
	cases := map[string]string{
		"symlink to an empty directory in --from":  filepath.Join(from, "zz"),
		"symlink to a missing directory in --from": filepath.Join(from, "new"),
		"symlink to --from":                        from,
		"relative symlink through a missing one":   "dangling",
	}
	if err := os.Symlink(filepath.Join(from, "zz", "deeper"), filepath.Join(links, "dangling")); err != nil {
		t.Fatal(err)
	}
	tos := map[string]string{}
	for name, target := range cases {
		to := filepath.Join(links, strings.ReplaceAll(name, " ", "-"))
		if err := os.Symlink(target, to); err != nil {
			t.Fatal(err)
		}
		tos[name] = to
	}
	if os.Geteuid() == 0 {
		bind := t.TempDir()
		if out, err := exec.Command("mount", "--bind", from, bind).CombinedOutput(); err != nil {
			t.Logf("no bind mount case: mount --bind: %v: %s", err, out)
		} else {
			t.Cleanup(func() { exec.Command("umount", "-l", bind).Run() })
			tos["inside a bind mount of --from"] = filepath.Join(bind, "zz")
		}
	}
	before := tree(t, from)
	for name, to := range tos {
		_, err := migrate.Run(context.Background(), migrate.Options{From: from, To: to, Docker: docker.Options{Mode: docker.ModeOff}, AllowUnverified: true})
		if !errors.Is(err, migrate.ErrBadInput) || !strings.Contains(err.Error(), "inside") {
			t.Errorf("%s: Run(--to %s) = %v, want ErrBadInput: inside --from", name, to, err)
		}
		if after := tree(t, from); strings.Join(after, "\n") != strings.Join(before, "\n") {
			t.Fatalf("%s: --from changed:\n%s\nwant\n%s", name, strings.Join(after, "\n"), strings.Join(before, "\n"))
		}
	}
	// --from inside --to, spelled through a symlink.
	to := t.TempDir()
	inner := filepath.Join(to, "data")
	if err := os.Mkdir(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	fromLink := filepath.Join(links, "from")
	if err := os.Symlink(inner, fromLink); err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.Run(context.Background(), migrate.Options{From: fromLink, To: to, NoGuard: true}); !errors.Is(err, migrate.ErrBadInput) {
		t.Errorf("Run(--from a symlink into --to) = %v, want ErrBadInput", err)
	}
}
