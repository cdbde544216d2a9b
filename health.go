package preflight

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/preflight-sqlite/preflight/internal/shell"
	"github.com/preflight-sqlite/preflight/probe/health"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
	"github.com/preflight-sqlite/preflight/probe/wal"
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

// checkHealth runs the cheap header checks on every database, and with
// opts.Deep the raw reads (header bytes, journal, WAL) for every database
// before any SQLite connection is opened, then the integrity checks. A
// database on a cross-vm, network or fuse filesystem is checked from a
// private copy, so this side never rebuilds the wal-index of a live
// database across the share.
func checkHealth(ctx context.Context, r *Report, opts HealthOptions) {
	var dbs []subject
	for i := range r.DataDirs {
		d := &r.DataDirs[i]
		for j := range d.Databases {
			db := &d.Databases[j]
			if db.Header != nil {
				db.HeaderProblems = walAware(db, health.HeaderProblems(*db.Header, db.SizeBytes))
			}
			if !db.New && !db.NotSQLite && db.Err == "" {
				dbs = append(dbs, subject{r: r, dir: d, db: db})
			}
		}
	}
	if !opts.Deep {
		r.Probes["integrity"] = "off"
		return
	}
	for _, s := range dbs {
		h := &Health{}
		s.db.Health = h
		if ps, err := health.CheckHeaderFile(s.db.Path); err != nil {
			h.Errors = append(h.Errors, err.Error())
		} else {
			h.HeaderProblems = walAware(s.db, ps)
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
			Copy:        unsafeForWAL(s.class()) || s.class() == "unknown" || idleWAL,
		})
		s.db.Health.Integrity = &in
	}
	r.Probes["integrity"] = "ran"
}

// probeFilesystems runs health.ProbeFS in each existing data directory.
func probeFilesystems(r *Report) {
	for i := range r.DataDirs {
		d := &r.DataDirs[i]
		if !d.Exists || d.saved || d.Unresponsive != "" {
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
	r.Probes["fs"] = "ran"
}

// healthRules are the findings of the header, journal, WAL, integrity and
// filesystem checks.
var healthRules = []rule{
	headerRule(health.ProblemPageSize, LevelError, "the header's page size is not a power of two from 512 to 65536"),
	headerRule(health.ProblemTruncated, LevelError, "the file is shorter than the header's database size, or not a whole number of pages: a truncated copy or a torn write"),
	headerRule(health.ProblemReservedBytes, LevelInfo, "the header reserves bytes per page (used by encryption and checksum extensions)"),
	headerRule(health.ProblemTextEncoding, LevelError, "the header's text encoding is not UTF-8, UTF-16le or UTF-16be"),
	headerRule(health.ProblemTorn, LevelError, "fixed fields of the page-1 header are wrong: a torn or overwritten header"),
	{
		Rule: Rule{"hot-journal", LevelWarn, "a hot rollback journal: a writer died mid-transaction; the next writer rolls it back. Never delete it"}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			h := s.db.Health
			if h == nil || h.Journal == nil || !h.Journal.Hot {
				return "", "", false
			}
			return fmt.Sprintf("%s has a hot journal (%d bytes, %d page records): a transaction was interrupted; the next writer restores the %d pages it had changed. Read-only opens fail until then", filepath.Base(s.db.Path), h.Journal.SizeBytes, h.Journal.Records, h.Journal.Records), "", true
		},
		remedy: func(s subject) []string {
			return []string{fmt.Sprintf("Keep %s-journal with the database (deleting it corrupts the database). Let the application open it, or run: sqlite3 %s 'PRAGMA quick_check;' as the owner, which rolls it back.", filepath.Base(s.db.Path), shell.Quote(s.db.Path))}
		},
	},
	{
		Rule: Rule{"wal-beside-rollback-db", LevelWarn, "a -wal file beside a database whose header says rollback mode: SQLite still reads its frames"}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			h := s.db.Health
			if h == nil || h.Journal == nil || !h.Journal.StrayWAL || h.Journal.StrayWALSizeBytes == 0 {
				return "", "", false
			}
			return fmt.Sprintf("%s is in rollback mode but has a %d-byte -wal beside it; SQLite opens it anyway, so its frames can change what readers see", filepath.Base(s.db.Path), h.Journal.StrayWALSizeBytes), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Do not delete the -wal: it may hold committed transactions. Stop every user of the database, open it once with sqlite3 (it checkpoints and removes the -wal), then check it: preflight check --deep."}
		},
	},
	{
		Rule: Rule{"wal-invalid-frames", LevelError, "valid-looking WAL frames follow a broken one: two writers interleaved, a torn write, or a frame damaged in place (even its stored checksum alone); SQLite silently discards them"}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			h := s.db.Health
			if h == nil || h.WAL == nil || !h.WAL.Discards() {
				return "", "", false
			}
			w := h.WAL
			return fmt.Sprintf("%s-wal breaks at frame %d (%s), and %s with %s %s: SQLite would silently discard them and the %s they hold, although PRAGMA integrity_check on the main file may pass. %s (%s) %s the break",
				filepath.Base(s.db.Path), w.FirstInvalidFrame, w.InvalidReason, count(w.ValidLookingAfter, "valid-looking frame", "valid-looking frames"), count(w.CommitsAfterBreak, "commit", "commits"), plural(w.ValidLookingAfter, "follows", "follow"),
				count(w.CommitsAfterBreak, "transaction", "transactions"), count(w.ValidFrames, "valid frame", "valid frames"), count(w.CommittedTxns, "committed transaction", "committed transactions"), plural(w.ValidFrames, "precedes", "precede")), "", true
		},
		remedy: func(s subject) []string {
			return []string{fmt.Sprintf("Stop every writer now and copy %s, its -wal and -shm somewhere safe before anything opens it read-write (that discards the frames for good).", s.db.Path),
				"Find the cause: a second writer (another container, or a host program behind a VM share; make the database single-writer on a local filesystem), or a frame damaged in place (a failing disk, a faulty copy); then restore the lost transactions from the copy if they matter."}
		},
	},
	{
		Rule: Rule{"wal-stale", LevelInfo, "the -wal holds frames of an older generation after the current ones: leftovers of a restarted WAL, not corruption"}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			h := s.db.Health
			if h == nil || h.WAL == nil || !h.WAL.Stale {
				return "", "", false
			}
			return fmt.Sprintf("%s-wal: %d frames after frame %d belong to an older WAL generation (left over from before a checkpoint restarted the log); SQLite ignores them, nothing is lost", filepath.Base(s.db.Path), h.WAL.StaleFrames, h.WAL.FirstInvalidFrame-1), "", true
		},
		remedy: func(s subject) []string { return []string{"Nothing to do."} },
	},
	integrityRule("integrity-index", health.KindIndex, LevelWarn, "an index is damaged: rebuildable with REINDEX, no rows lost"),
	integrityRule("integrity-fts", health.KindFTS, LevelWarn, "a full-text search index is damaged: rebuild it; the rows are intact"),
	integrityRule("integrity-table", health.KindTable, LevelError, "a table's b-tree is damaged: rows are at risk"),
	integrityRule("integrity-structural", health.KindStructural, LevelError, "page-level damage (freelist, unused or doubly used pages)"),
	integrityRule("integrity-unknown", health.KindUnknown, LevelError, "the integrity check failed on something it could not name; rows may be at risk"),
	{
		Rule: Rule{"integrity-not-checked", LevelWarn, "the integrity check could not run: locked by another process, a hot journal, the private copy could not be made, or an error"}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			h := s.db.Health
			if h == nil || h.Integrity == nil || h.Integrity.Ran {
				return "", "", false
			}
			return fmt.Sprintf("%s: %s", filepath.Base(s.db.Path), nonEmpty(h.Integrity.Err, "integrity not checked")), "", true
		},
		remedy: func(s subject) []string {
			h := s.db.Health
			in := h.Integrity
			switch {
			case in.Err == health.ErrTextHotJournal || h.Journal != nil && h.Journal.Hot:
				return []string{"See hot-journal: let the next writer roll the journal back, then check again."}
			case in.Locked:
				return []string{"Run the check again when the other process has finished its transaction, or raise --busy-timeout."}
			case len(IrregularSidecars(s.db)) > 0:
				return []string{"See sidecar-not-regular and sidecar-symlink: once the -wal, -shm and -journal are regular files or absent, check again."}
			case in.CopyFailed:
				return []string{"Point --tmp-dir (PREFLIGHT_TMP_DIR) at a writable directory with room for the database and its -wal (the check runs on a private copy there), then check again."}
			}
			return []string{"Check again; if the error stays, open the database with sqlite3 and run PRAGMA quick_check to see it."}
		},
	},
	{
		Rule: Rule{"fs-mmap-unsupported", LevelError, "--probe-fs: the filesystem cannot map a file shared (mmap, msync): WAL fails with \"disk I/O error\""},
		match: func(s subject) (string, Level, bool) {
			if s.dir.FSProbe == nil || s.dir.FSProbe.MmapErr == "" {
				return "", "", false
			}
			return fmt.Sprintf("%s: shared mmap of a file failed (%s); SQLite's WAL index needs it", s.dir.Path, s.dir.FSProbe.MmapErr), "", true
		},
		remedy: func(s subject) []string {
			out := []string{"Use journal_mode=DELETE here (PREFLIGHT_JOURNAL_MODE=delete; preflight convert and run --on-unsafe convert convert a WAL database here), or move the data to a named volume or a native filesystem."}
			if m := s.dir.Mount; m != nil && m.FSType == "fuse.mergerfs" {
				return append(out, "On mergerfs, mount the pool with cache.files=partial (or full, auto-full): cache.files=off opens files with direct I/O, which refuses shared mmap.")
			}
			return append(out, "On mergerfs, use cache.files=partial (or full, auto-full) instead of cache.files=off, which opens files with direct I/O and refuses shared mmap.")
		},
	},
	{
		Rule: Rule{"fs-locks-unsupported", LevelError, "--probe-fs: the filesystem refused a POSIX lock: SQLite cannot lock the database in any journal mode"},
		match: func(s subject) (string, Level, bool) {
			if s.dir.FSProbe == nil || s.dir.FSProbe.LockErr == "" {
				return "", "", false
			}
			return fmt.Sprintf("%s: a POSIX record lock failed (%s); SQLite needs these locks in every journal mode", s.dir.Path, s.dir.FSProbe.LockErr), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Move the data to a named volume or a native filesystem; over NFS mount with locking enabled (no nolock/local_lock), over SMB without nobrl."}
		},
	},
	{
		Rule: Rule{"fs-probe-failed", LevelWarn, "--probe-fs: the test file could not be created in the data directory"},
		match: func(s subject) (string, Level, bool) {
			if s.dir.FSProbe == nil || s.dir.FSProbe.CreateErr == "" {
				return "", "", false
			}
			return fmt.Sprintf("%s: cannot create a file (%s); SQLite must create -wal, -shm and -journal files here", s.dir.Path, s.dir.FSProbe.CreateErr), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Make the data directory writable by the application's user."}
		},
	},
}

func headerRule(id string, lvl Level, doc string) rule {
	return rule{
		Rule: Rule{id, lvl, doc}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			ps := s.db.HeaderProblems
			if s.db.Health != nil && len(s.db.Health.HeaderProblems) > 0 {
				ps = s.db.Health.HeaderProblems
			}
			for _, p := range ps {
				if p.ID == id {
					return fmt.Sprintf("%s: %s", s.db.Path, p.Detail), "", true
				}
			}
			return "", "", false
		},
		remedy: func(s subject) []string {
			return []string{fmt.Sprintf("Stop the application and keep a copy of %s and its sidecars; recover what SQLite can read: sqlite3 %s .recover | sqlite3 %s", filepath.Base(s.db.Path), shell.Quote(s.db.Path), shell.Quote(s.db.Path+".recovered"))}
		},
	}
}

func integrityRule(id, kind string, lvl Level, doc string) rule {
	return rule{
		Rule: Rule{id, lvl, doc}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			h := s.db.Health
			if h == nil || h.Integrity == nil {
				return "", "", false
			}
			var parts []string
			for _, d := range h.Integrity.Damage {
				if d.Kind == kind {
					parts = append(parts, damageText(d))
				}
			}
			if len(parts) == 0 {
				return "", "", false
			}
			copyNote := ""
			if h.Integrity.CheckedCopy {
				copyNote = " (checked on a private copy)"
			}
			return fmt.Sprintf("%s%s: %s", filepath.Base(s.db.Path), copyNote, strings.Join(parts, "; ")), "", true
		},
		remedy: func(s subject) []string {
			var out []string
			seen := map[string]bool{}
			for _, d := range s.db.Health.Integrity.Damage {
				if d.Kind == kind && !seen[d.Repair] {
					seen[d.Repair] = true
					out = append(out, d.Repair)
				}
			}
			return append(out, "Stop every other user of the database before repairing, and keep a copy first.")
		},
	}
}

// damageText words one Damage for its finding: what is damaged and the
// check's message, e.g. "index ax damaged (row 13 missing from index ax)".
func damageText(d health.Damage) string {
	var what string
	switch d.Kind {
	case health.KindIndex:
		what = "index " + d.Object + " damaged"
	case health.KindTable:
		what = "table " + d.Object + " damaged: rows at risk"
		if d.Table != "" && d.Table != d.Object {
			what = "table " + d.Object + " (the rows of full-text table " + d.Table + ") damaged: rows at risk"
		}
	case health.KindFTS:
		what = "search index of " + d.Table + " damaged (" + d.Object + "), data intact"
		if d.Object == d.Table {
			what = "search index of " + d.Table + " damaged, data intact"
		}
	case health.KindStructural:
		what = "page accounting damaged"
	case health.KindUnknown:
		what = "unclassified damage: rows may be at risk"
		if d.Object == "database" {
			what = "database unreadable: rows may be at risk"
		} else if d.Object != "" {
			what = "unclassified damage to " + d.Object + ": rows may be at risk"
		}
	default:
		what = d.Kind + " damage"
	}
	return fmt.Sprintf("%s (%s)", what, d.Message)
}

// walAware drops db-truncated when the -wal holds frames: a file shorter
// than its header says is then an interrupted checkpoint (the missing pages
// are in the WAL, and the next checkpoint writes them), not damage.
func walAware(db *Database, ps []health.Problem) []health.Problem {
	if !db.WAL.Exists || db.WAL.SizeBytes == 0 {
		return ps
	}
	var out []health.Problem
	for _, p := range ps {
		if p.ID != health.ProblemTruncated {
			out = append(out, p)
		}
	}
	return out
}
