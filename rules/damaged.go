package rules

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/preflight-sqlite/preflight/internal/shell"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// DamagedDB reports a file without a valid SQLite header that is a SQLite
// database by every other sign: a -wal or -journal beside it (names only
// SQLite gives), a zero-filled or truncated SQLite header, or a database
// name (.db, .sqlite, .sqlite3, .db3) on bytes of no other known format.
// Such a file is damaged, not another program's: db-header-damaged, and
// convert refuses it. A NotSQLite file that is none of these is
// not-sqlite.
func DamagedDB(db *Database) bool {
	if !db.NotSQLite {
		return false
	}
	switch {
	case db.WAL.Exists, db.Journal.Exists:
		return true
	case db.Format == sqlitefile.FormatZeros, db.Format == sqlitefile.FormatSQLiteTruncated:
		return true
	}
	named := sqlitefile.LooksLikeDatabase(db.Path) || db.Link != "" && sqlitefile.LooksLikeDatabase(db.Link)
	return named && !db.Format.Other()
}

// damagedDBRule is db-header-damaged.
var damagedDBRule = rule{
	Rule: Rule{DBHeaderDamaged, LevelError, "a file named like a database, or with a -wal or -journal beside it, has no valid SQLite header: a damaged database, not another program's file; convert refuses it. Warn when only the name says so and the bytes are of no known format (an encrypted database looks the same)"}, scope: ScopeDatabase, action: ActRefuseStart,
	startRefusal: "the database's header is damaged; an application that fails to open it may recreate it and lose its -wal and what is left",
	match: func(s subject) (string, Level, bool) {
		if !DamagedDB(s.db) {
			return "", "", false
		}
		// Only a name against bytes of no known format: an encrypted
		// database (SQLCipher) looks the same, so warn.
		lvl := Level("")
		if s.db.Format == sqlitefile.FormatUnknown && !s.db.WAL.Exists && !s.db.Journal.Exists {
			lvl = LevelWarn
		}
		return fmt.Sprintf("%s has no valid SQLite header (%s) but %s: a damaged database, not another program's file. %s",
			s.db.Path, headerBytes(s.db), strings.Join(damagedSigns(s.db), " and "), walHolds(s.db)), lvl, true
	},
	remedy: func(s subject) []string {
		q := shell.Quote(s.db.Path)
		out := []string{"Keep every file: stop the application and copy them aside together before anything opens the database: cp -a " + q + "* SAFE_DIR/ (the database, -wal, -shm and -journal). Delete, truncate or recreate none of them; preflight convert refuses this database."}
		if w := s.db.DamagedWAL; w != nil && w.Page1Frame > 0 {
			c := shell.Quote(filepath.Join("SAFE_DIR", filepath.Base(s.db.Path)))
			out = append(out, "The -wal holds the header: on the copy, sqlite3 "+c+" 'PRAGMA wal_checkpoint(TRUNCATE); PRAGMA quick_check;' writes page 1 back; if that prints ok, move the repaired copy over the original while the application is stopped (the original -wal holds the same frames and may stay).")
		} else {
			out = append(out, "Restore the database from a backup. The -wal's frames are the newest versions of the pages they hold and belong to this file alone: never put the -wal beside another copy of the database. A recovery tool needs the copies, not the originals.")
		}
		return append(out, "If the file is an encrypted database (SQLCipher) or another program's file: --ignore db-header-damaged.")
	},
}

// headerBytes says what the first bytes of the damaged database db are.
func headerBytes(db *Database) string {
	switch db.Format {
	case sqlitefile.FormatZeros:
		return "its first bytes are all zero: a zero-filled first page"
	case sqlitefile.FormatSQLiteTruncated:
		return fmt.Sprintf("the file starts like SQLite but holds only %d bytes: a truncated header", db.SizeBytes)
	}
	return nonEmpty(db.Err, "its first bytes are not \"SQLite format 3\"")
}

// damagedSigns lists why db is a database although its header is not valid.
func damagedSigns(db *Database) []string {
	var out []string
	if sqlitefile.LooksLikeDatabase(db.Path) || db.Link != "" && sqlitefile.LooksLikeDatabase(db.Link) {
		out = append(out, "it is named like a database")
	}
	if db.WAL.Exists {
		out = append(out, fmt.Sprintf("a -wal of %d bytes is beside it", db.WAL.SizeBytes))
	}
	if db.Journal.Exists {
		out = append(out, fmt.Sprintf("a -journal of %d bytes is beside it", db.Journal.SizeBytes))
	}
	if len(out) == 0 {
		out = append(out, "it was given as a database")
	}
	return out
}

// walHolds describes the -wal of the damaged database db.
func walHolds(db *Database) string {
	name := filepath.Base(db.Path) + "-wal"
	w := db.DamagedWAL
	switch {
	case !db.WAL.Exists:
		return "There is no -wal beside it."
	case db.WAL.SizeBytes <= sqlitefile.WALHeaderSize:
		return name + " holds no frame."
	case db.DamagedWALErr != "":
		return name + " could not be read as a WAL: " + db.DamagedWALErr + "."
	case w == nil:
		return ""
	}
	frames := w.ValidFrames + w.FramesAfterBreak
	msg := fmt.Sprintf("%s (%d bytes) holds %s of %d-byte pages (page size from the WAL header): %d valid, with %s (the last at frame %d)",
		name, w.SizeBytes, count(frames, "frame", "frames"), w.Header.PageSize, w.ValidFrames, count(w.CommittedTxns, "committed transaction", "committed transactions"), w.LastCommitFrame)
	if w.Discards() {
		msg += fmt.Sprintf(", and %d more %s with %s after a break at frame %d", w.ValidLookingAfter, plural(w.ValidLookingAfter, "valid-looking frame", "valid-looking frames"), count(w.CommitsAfterBreak, "commit", "commits"), w.FirstInvalidFrame)
	}
	msg += ": the newest versions of those pages."
	if w.Page1Frame > 0 {
		return msg + fmt.Sprintf(" Page 1, with the database header, is in frame %d: SQLite reads it from the -wal, so the database opens as long as the -wal stays beside it, and a checkpoint writes the header back.", w.Page1Frame)
	}
	return msg + " Page 1 is not among its committed frames: SQLite cannot open the database."
}
