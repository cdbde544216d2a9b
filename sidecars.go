package preflight

import (
	"io/fs"
	"os"

	"github.com/preflight-sqlite/preflight/policy"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/report"
)

// classifySidecars classifies each -wal, -shm and -journal of db that is a
// mount of its own (a file bind-mounted over the sidecar): SQLite's locks
// and shared memory go through that file, so a sidecar on a riskier
// filesystem than the database makes the database that risky. Such a
// mount is recorded in db.SidecarMounts and, when it is the riskiest seen
// for db, becomes db.Mount with a reason that names the sidecar. Only
// sidecars that exist on this machine are looked at (lstat); a symlinked
// one is the sidecar-symlink finding's.
func classifySidecars(db *Database, dir *mounts.Mount, table *mounts.Table, saved bool) {
	if db.ResolvedPath == "" {
		return
	}
	for _, sfx := range report.SidecarSuffixes {
		p := db.ResolvedPath + sfx
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
			continue
		}
		m, err := lookup(table, p, saved)
		if err != nil || m.Mountpoint != p {
			continue // not a mount of its own: on the directory's filesystem
		}
		m.Reason = "its " + sfx + " file is a mount of its own, " + m.Reason
		if db.SidecarMounts == nil {
			db.SidecarMounts = map[string]*mounts.Mount{}
		}
		sm := m
		db.SidecarMounts[sfx] = &sm
		current := dir
		if db.Mount != nil {
			current = db.Mount
		}
		if current == nil || policy.Riskier(m.Class, current.Class) {
			db.Mount = &sm
		}
	}
}
