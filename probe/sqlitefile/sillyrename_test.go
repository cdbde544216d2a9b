package sqlitefile_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

func TestIsNFSSillyRename(t *testing.T) {
	for name, want := range map[string]bool{
		".nfs000000000004a1b200000001": true,
		".nfs1f":                       true,
		".nfs":                         false,
		".nfsABC":                      false, // the Linux client writes lower-case hex
		".nfs0001.db":                  false,
		"x.nfs0001":                    false,
		".nfsnotes":                    false,
	} {
		if got := sqlitefile.IsNFSSillyRename(name); got != want {
			t.Errorf("IsNFSSillyRename(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestDiscoverSkipsSillyRename: a silly-renamed copy of a database keeps
// the SQLite header; it is listed by NFSSillyRenamed, not as a database.
func TestDiscoverSkipsSillyRename(t *testing.T) {
	dir := t.TempDir()
	createDB(t, filepath.Join(dir, "app.db"), "create table t(x)")
	b, err := os.ReadFile(filepath.Join(dir, "app.db"))
	if err != nil {
		t.Fatal(err)
	}
	silly := ".nfs000000000004a1b200000001"
	if err := os.WriteFile(filepath.Join(dir, silly), b, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := sqlitefile.Discover([]string{dir}, sqlitefile.DiscoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Databases) != 1 || filepath.Base(res.Databases[0].Path) != "app.db" {
		t.Errorf("Discover(dir with %s) = %+v, want app.db only", silly, res.Databases)
	}
	names, err := sqlitefile.NFSSillyRenamed(dir)
	if err != nil || !slices.Equal(names, []string{silly}) {
		t.Errorf("NFSSillyRenamed(%s) = %v, %v; want [%s]", dir, names, err, silly)
	}
}
