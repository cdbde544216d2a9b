package report

import (
	"fmt"
	"path/filepath"

	"github.com/preflight-sqlite/preflight/probe/health"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
	"github.com/preflight-sqlite/preflight/probe/wal"
)

// Health is what the --deep checks found for one database.
type Health struct {
	// HeaderProblems lists problems of the 100-byte header (raw bytes).
	HeaderProblems []health.Problem `json:"header_problems,omitempty"`
	// Journal describes the rollback journal and a -wal beside a
	// rollback-mode database.
	Journal *health.Journal `json:"journal,omitempty"`
	// WAL is the frame-chain validation of the -wal; nil when there is no
	// -wal or it is empty.
	WAL *wal.Report `json:"wal,omitempty"`
	// Integrity is the classified quick_check (or integrity_check).
	Integrity *health.Integrity `json:"integrity,omitempty"`
	// Errors lists what could not be read.
	Errors []string `json:"errors,omitempty"`
}

// Canonical is the database path absolute with symlinks resolved, the form
// WriterOptions.Converted holds (see convert.CanonicalPath): ResolvedPath,
// found within the bounded discovery, so no filesystem call is made here,
// which could hang on a share that stopped answering since.
func (db *Database) Canonical() string {
	if db.ResolvedPath != "" {
		return db.ResolvedPath
	}
	if a, err := filepath.Abs(db.Path); err == nil {
		return a
	}
	return filepath.Clean(db.Path)
}

// IrregularSidecars lists db's -wal, -shm and -journal that exist but are
// not regular files, as "NAME-wal (fifo)"; nil when there are none.
func IrregularSidecars(db *sqlitefile.Database) []string {
	var out []string
	for _, x := range []struct {
		sfx string
		s   sqlitefile.Sidecar
	}{{"-wal", db.WAL}, {"-shm", db.SHM}, {"-journal", db.Journal}} {
		if x.s.Type != "" {
			out = append(out, fmt.Sprintf("%s%s (%s)", filepath.Base(db.Path), x.sfx, x.s.Type))
		}
	}
	return out
}

// OddSidecars lists the sidecars of db that are symlinks or not regular
// files (the sidecar-symlink and sidecar-not-regular findings), described
// for a message; nil when there are none.
func (db *Database) OddSidecars() []string {
	return append(IrregularSidecars(&db.Database), db.SidecarLinks...)
}

// SidecarSuffixes are the files SQLite keeps beside a database.
var SidecarSuffixes = []string{"-wal", "-shm", "-journal"}

// StatfsDisagreements lists the mounts of d (its own, its databases' and
// their sidecars') on which the mount table and statfs(2) disagree.
func (d *DataDir) StatfsDisagreements() []*mounts.Mount {
	var out []*mounts.Mount
	add := func(m *mounts.Mount) {
		if m == nil || m.Statfs == nil || m.Statfs.Agrees {
			return
		}
		for _, o := range out {
			if o.Mountpoint == m.Mountpoint {
				return
			}
		}
		out = append(out, m)
	}
	add(d.Mount)
	for i := range d.Databases {
		db := &d.Databases[i]
		add(db.Mount)
		for _, sfx := range SidecarSuffixes {
			add(db.SidecarMounts[sfx])
		}
	}
	return out
}
