package rules

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/preflight-sqlite/preflight/internal/shell"
	"github.com/preflight-sqlite/preflight/probe/health"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// walResetBug reports whether SQLITE_VERSION_NUMBER v has the WAL-reset
// bug (https://sqlite.org/wal.html#walresetbug): 3.7.0 (the first with
// WAL) through 3.51.2, except the fixed 3.44.6+ and 3.50.7+ of the
// 3.44 and 3.50 branches. 0 (no version stamped) is not judged.
func walResetBug(v uint32) bool {
	switch {
	case v < 3007000 || v >= 3051003:
		return false
	case v >= 3050007 && v < 3051000, v >= 3044006 && v < 3045000:
		return false
	}
	return true
}

// healthRules are the findings of the header, journal, WAL, integrity and
// filesystem checks.
var healthRules = []rule{
	headerRule(HeaderPageSizeInvalid, LevelError, "the header's page size is not a power of two from 512 to 65536"),
	headerRule(DBTruncated, LevelError, "the file is shorter than the header's database size, or not a whole number of pages: a truncated copy or a torn write"),
	headerRule(HeaderReservedBytes, LevelInfo, "the header reserves bytes per page (used by encryption and checksum extensions)"),
	headerRule(HeaderTextEncodingInvalid, LevelError, "the header's text encoding is not UTF-8, UTF-16le or UTF-16be"),
	headerRule(HeaderTorn, LevelError, "fixed fields of the page-1 header are wrong: a torn or overwritten header"),
	{
		Rule: Rule{WALResetBug, LevelWarn, "a WAL database last written by SQLite 3.7.0 through 3.51.2 (not 3.44.6+ or 3.50.7+), whose WAL-reset race can corrupt it when two or more connections use it; fixed in 3.51.3"}, scope: ScopeDatabase,
		match: func(s subject) (string, Level, bool) {
			h := s.db.Header
			if h == nil || s.db.JournalMode != sqlitefile.JournalWAL || !walResetBug(h.SQLiteVersion) {
				return "", "", false
			}
			return fmt.Sprintf("%s is in WAL mode and was last written by SQLite %s, which has the WAL-reset bug (3.7.0 through 3.51.2, https://sqlite.org/wal.html#walresetbug): with two or more connections, a write racing a checkpoint that resets the WAL can corrupt the database; fixed in 3.51.3, backported to 3.50.7 and 3.44.6", filepath.Base(s.db.Path), h.LibraryVersion()), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Upgrade the SQLite the application uses (its image, or the driver that embeds SQLite: mattn/go-sqlite3, better-sqlite3, the Python build) to 3.51.3 or later, 3.50.7+ or 3.44.6+.",
				"Until then, let one connection at a time use the database, or switch it to DELETE mode, which the bug does not affect: stop the application first, then run the command below.",
				"preflight convert " + shell.Quote(s.db.Path)}
		},
	},
	{
		Rule: Rule{HotJournal, LevelWarn, "a hot rollback journal: a writer died mid-transaction; the next writer rolls it back. Never delete it"}, scope: ScopeDatabase,
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
		Rule: Rule{WALBesideRollbackDB, LevelWarn, "a -wal file beside a database whose header says rollback mode: SQLite still reads its frames"}, scope: ScopeDatabase,
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
		Rule: Rule{WALInvalidFrames, LevelError, "valid-looking WAL frames follow a broken one: two writers interleaved, a torn write, or a frame damaged in place (even its stored checksum alone); SQLite silently discards them"}, scope: ScopeDatabase,
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
		Rule: Rule{WALStale, LevelInfo, "the -wal holds frames of an older generation after the current ones: leftovers of a restarted WAL, not corruption"}, scope: ScopeDatabase,
		match: func(s subject) (string, Level, bool) {
			h := s.db.Health
			if h == nil || h.WAL == nil || !h.WAL.Stale {
				return "", "", false
			}
			return fmt.Sprintf("%s-wal: %d frames after frame %d belong to an older WAL generation (left over from before a checkpoint restarted the log); SQLite ignores them, nothing is lost", filepath.Base(s.db.Path), h.WAL.StaleFrames, h.WAL.FirstInvalidFrame-1), "", true
		},
		remedy: func(s subject) []string { return []string{"Nothing to do."} },
	},
	integrityRule(IntegrityIndex, health.KindIndex, LevelWarn, "an index is damaged: rebuildable with REINDEX, no rows lost"),
	integrityRule(IntegrityFTS, health.KindFTS, LevelWarn, "a full-text search index is damaged: rebuild it; the rows are intact"),
	integrityRule(IntegrityTable, health.KindTable, LevelError, "a table's b-tree is damaged: rows are at risk"),
	integrityRule(IntegrityStructural, health.KindStructural, LevelError, "page-level damage (freelist, unused or doubly used pages)"),
	integrityRule(IntegrityUnknown, health.KindUnknown, LevelError, "the integrity check failed on something it could not name; rows may be at risk"),
	{
		Rule: Rule{IntegrityNotChecked, LevelWarn, "the integrity check could not run: locked by another process, a hot journal, the private copy could not be made, or an error"}, scope: ScopeDatabase,
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
			case len(s.db.OddSidecars()) > 0:
				return []string{"See sidecar-not-regular and sidecar-symlink: once the -wal, -shm and -journal are regular files or absent, check again."}
			case in.CopyFailed:
				return []string{"Point --tmp-dir (PREFLIGHT_TMP_DIR) at a writable directory with room for the database and its -wal (the check runs on a private copy there), then check again."}
			}
			return []string{"Check again; if the error stays, open the database with sqlite3 and run PRAGMA quick_check to see it."}
		},
	},
	{
		Rule: Rule{FSMmapUnsupported, LevelError, "--probe-fs: the filesystem cannot map a file shared (mmap, msync): WAL fails with \"disk I/O error\""},
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
		Rule: Rule{FSLocksUnsupported, LevelError, "--probe-fs: the filesystem refused a POSIX lock: SQLite cannot lock the database in any journal mode"},
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
		Rule: Rule{FSProbeFailed, LevelWarn, "--probe-fs: the test file could not be created in the data directory"},
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

func headerRule(id ID, lvl Level, doc string) rule {
	return rule{
		Rule: Rule{id, lvl, doc}, scope: ScopeDatabase,
		match: func(s subject) (string, Level, bool) {
			ps := s.db.HeaderProblems
			if s.db.Health != nil && len(s.db.Health.HeaderProblems) > 0 {
				ps = s.db.Health.HeaderProblems
			}
			for _, p := range ps {
				if ID(p.ID) == id {
					return fmt.Sprintf("%s: %s", s.db.Path, p.Detail), "", true
				}
			}
			return "", "", false
		},
		remedy: func(s subject) []string {
			return []string{fmt.Sprintf("Stop the application and keep a copy of %s and its sidecars; recover what can be read into a new file: %s", filepath.Base(s.db.Path), RecoverCommand(s.db.Path))}
		},
	}
}

func integrityRule(id ID, kind string, lvl Level, doc string) rule {
	return rule{
		Rule: Rule{id, lvl, doc}, scope: ScopeDatabase,
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

// WALAware drops db-truncated when the -wal holds frames: a file shorter
// than its header says is then an interrupted checkpoint (the missing pages
// are in the WAL, and the next checkpoint writes them), not damage.
func WALAware(db *Database, ps []health.Problem) []health.Problem {
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

// HeaderDamaged reports whether header problem p is damage (its rule is at
// error level: everything but reserved bytes), which convert refuses to
// checkpoint over.
func HeaderDamaged(p health.Problem) bool {
	for _, r := range healthRules { // not byID: convert's rules ask this
		if r.ID == ID(p.ID) {
			return r.Level == LevelError
		}
	}
	return true
}
