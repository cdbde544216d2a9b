package preflight

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/preflight-sqlite/preflight/policy"
	"github.com/preflight-sqlite/preflight/probe/health"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
	"github.com/preflight-sqlite/preflight/probe/wal"
	"github.com/preflight-sqlite/preflight/report"
	"github.com/preflight-sqlite/preflight/rules"
)

// HealthOptions configure the database health checks of `check --deep`.
type HealthOptions struct {
	// Deep validates each -wal's frame chain, reads the journal and the
	// raw header bytes, and runs SQLite's quick_check on a read-only
	// connection, classifying any damage by the b-tree it hits.
	Deep bool
	// Full runs integrity_check instead of quick_check (with Deep).
	Full bool
	// BusyTimeout bounds how long the integrity check waits on another
	// process's lock before reporting "locked, integrity not checked";
	// zero means 1 s.
	BusyTimeout time.Duration
	// TempDir is where the integrity check makes its private copy of a
	// database (across a share, or a WAL database no process has open);
	// empty means $TMPDIR, else /tmp. See health.Options.TempDir.
	TempDir string
	// ProbeFS creates, maps, locks and removes a temporary file in each
	// data directory to test that the filesystem gives WAL what it needs.
	// The only probe that writes.
	ProbeFS bool
}

// checkHealth runs the cheap header checks on every database, and with
// opts.Deep the raw reads (header bytes, journal, WAL) for every database
// before any SQLite connection is opened, then the integrity checks. A
// database on a cross-vm, network or fuse filesystem is checked from a
// private copy, so this side never rebuilds the wal-index of a live
// database across the share.
func checkHealth(ctx context.Context, r *Report, opts HealthOptions) {
	type subject struct {
		dir *DataDir
		db  *Database
	}
	var dbs []subject
	for i := range r.DataDirs {
		d := &r.DataDirs[i]
		for j := range d.Databases {
			db := &d.Databases[j]
			if db.Header != nil {
				db.HeaderProblems = rules.WALAware(db, health.HeaderProblems(*db.Header, db.SizeBytes))
			}
			if !db.New && !db.NotSQLite && db.Err == "" {
				dbs = append(dbs, subject{dir: d, db: db})
			}
		}
	}
	if !opts.Deep {
		r.Probes["integrity"] = report.ProbeOff
		return
	}
	for _, s := range dbs {
		h := &Health{}
		s.db.Health = h
		if ps, err := health.CheckHeaderFile(s.db.Path); err != nil {
			h.Errors = append(h.Errors, err.Error())
		} else {
			h.HeaderProblems = rules.WALAware(s.db, ps)
		}
		j, err := health.InspectJournal(s.db.Path)
		if err != nil {
			h.Errors = append(h.Errors, err.Error())
		}
		h.Journal = &j
		if s.db.WAL.Exists && s.db.WAL.SizeBytes > 0 {
			rep, err := wal.ValidateFile(s.db.Path + "-wal")
			if err != nil {
				h.Errors = append(h.Errors, err.Error())
			} else {
				h.WAL = &rep
			}
		}
	}
	for _, s := range dbs {
		if err := ctx.Err(); err != nil {
			return
		}
		// A private copy when opening the live files could write: across a
		// share (the wal-index would be rebuilt from this side), and for a
		// WAL database no process was seen to have open (the open would
		// create -wal and -shm, or rebuild a wal-index left by a crash).
		if odd := IrregularSidecars(s.db); len(odd) > 0 {
			// SQLite would open them: a FIFO blocks that open forever, and
			// a symlink leads it elsewhere (sidecar-not-regular,
			// sidecar-symlink).
			s.db.Health.Integrity = &health.Integrity{Err: "not checked: " + strings.Join(odd, ", ") + " is not a regular file beside the database, and SQLite would open it"}
			continue
		}
		idleWAL := s.db.JournalMode == sqlitefile.JournalWAL && (!s.db.WAL.Exists || !s.db.SHM.Exists || len(s.db.Writers) == 0)
		in := health.CheckIntegrity(ctx, s.db.Path, health.Options{
			Full:        opts.Full,
			BusyTimeout: opts.BusyTimeout,
			TempDir:     opts.TempDir,
			Copy:        policy.PreferDelete(rules.WALClass(s.dir, s.db)) || idleWAL,
		})
		rules.FillRepairs(&in)
		s.db.Health.Integrity = &in
	}
	r.Probes["integrity"] = report.ProbeRan
}

// probeFilesystems runs health.ProbeFS in each existing data directory.
func probeFilesystems(r *Report) {
	for i := range r.DataDirs {
		d := &r.DataDirs[i]
		if !d.Exists || d.Saved || d.Unresponsive != "" {
			continue
		}
		dir := d.Path
		if len(d.Databases) == 1 && d.Databases[0].Path == filepath.Clean(d.Path) {
			dir = filepath.Dir(d.Path) // a database file: probe its directory
		}
		if _, err := health.CleanupFSProbes(dir); err != nil {
			d.Errors = append(d.Errors, err.Error())
		}
		res := health.ProbeFS(dir)
		d.FSProbe = &res
	}
	r.Probes["fs"] = report.ProbeRan
}
