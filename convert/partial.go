package convert

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// removePartialBackups removes the backups of the database at path that an
// earlier run began in parent and did not finish (DIR.partial: the process
// was killed, the machine went down; see backup) and returns their paths.
// Only directories named <database name>.preflight-backup-*.partial are
// removed, each through a descriptor of parent (os.Root), so a name swapped
// for a symlink does not lead outside it. It runs once the guard found no
// writer: a run still copying would hold the database open.
func removePartialBackups(path, parent string) ([]string, error) {
	if parent == "" {
		parent = filepath.Dir(path)
	}
	ents, err := os.ReadDir(parent)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", parent, err)
	}
	prefix := filepath.Base(path) + sqlitefile.BackupDirMarker
	var names []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), prefix) && strings.HasSuffix(e.Name(), ".partial") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	root, err := os.OpenRoot(parent)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", parent, err)
	}
	defer root.Close()
	var removed []string
	for _, n := range names {
		if err := root.RemoveAll(n); err != nil {
			return removed, fmt.Errorf("remove %s: %w", filepath.Join(parent, n), err)
		}
		removed = append(removed, filepath.Join(parent, n))
	}
	return removed, nil
}
