package health

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	sqlite "github.com/glebarez/go-sqlite" // driver "sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// DefaultBusyTimeout is the busy timeout CheckIntegrity uses when
// Options.BusyTimeout is not positive.
const DefaultBusyTimeout = time.Second

// Options configure CheckIntegrity. The zero value runs PRAGMA quick_check
// on the live files with a one-second busy timeout.
type Options struct {
	// Full runs PRAGMA integrity_check instead of quick_check: it also
	// verifies UNIQUE constraints and that index content matches table
	// content, in O(N log N) instead of O(N) time
	// (https://sqlite.org/pragma.html#pragma_integrity_check).
	Full bool
	// BusyTimeout is how long SQLite retries when another process holds a
	// lock that blocks reading (a rollback-mode writer with a PENDING or
	// EXCLUSIVE lock). Zero or negative means DefaultBusyTimeout (1s). It is
	// applied with the DSN parameter _pragma=busy_timeout(ms), after
	// glebarez/go-sqlite's own default of 5000 ms.
	BusyTimeout time.Duration
	// Copy checks a private copy of the database file and its -wal (never
	// the -shm, which SQLite rebuilds) made in a new directory in TempDir
	// (CopyDirPrefix...), locked while in use and removed afterwards, also
	// when ctx ends mid-copy. Copies left by killed runs are removed first
	// (RemoveStaleCopies), and a copy that would not fit in TempDir's free
	// space (with 16 MiB to spare) is not started (Err wraps the text of
	// ErrNoRoom). The live directory then sees only reads. The copy
	// is not atomic: if a WAL writer commits or checkpoints while it is
	// taken, the copy can show damage the live database does not have. A
	// rollback-mode writer in a transaction (journal present, RESERVED lock
	// held) makes CheckIntegrity return Locked without copying.
	Copy bool
	// TempDir is where Copy creates its directory; empty means
	// os.TempDir() ($TMPDIR, else /tmp). It needs room for the database
	// and its -wal.
	TempDir string
}

// Damage kinds, the value of Damage.Kind.
const (
	// KindTable: a table's b-tree (or a table-level constraint) is damaged;
	// rows are at risk. Also used for sqlite_schema itself and for the
	// NAME_content shadow table of a full-text table, which holds its rows.
	KindTable = "table"
	// KindIndex: an ordinary index is damaged; it can be rebuilt from its
	// table with REINDEX.
	KindIndex = "index"
	// KindFTS: a shadow table of an FTS3/4/5 full-text table other than
	// NAME_content is damaged (or the FTS integrity check failed): only the
	// search index is damaged, the rows are intact; rebuild it.
	KindFTS = "fts"
	// KindStructural: page accounting (freelist, unused or doubly used
	// pages, header root-page counter) with no table or index named.
	KindStructural = "structural"
	// KindUnknown: a message that names no object CheckIntegrity could
	// resolve (unrecognised text, or a b-tree root not in sqlite_schema);
	// rows may be at risk.
	KindUnknown = "unknown"
)

// Damage is one damaged object, derived from integrity-check messages.
type Damage struct {
	// Kind is one of the Kind* constants.
	Kind string `json:"kind"`
	// Object is the damaged table, index or shadow table, as named in
	// sqlite_schema; empty for KindStructural and some KindUnknown.
	Object string `json:"object,omitempty"`
	// Table is the table the object belongs to: the index's table, the
	// full-text table owning a shadow table, or Object for a table.
	Table string `json:"table,omitempty"`
	// Message is the first integrity-check message about this object.
	Message string `json:"message"`
	// Repair is the repair to run, as text with the exact command. The
	// probe leaves it empty; the rules layer (rules.FillRepairs) words it
	// from Kind, Object, Table and Integrity.Path before the report is
	// read or rendered.
	Repair string `json:"repair"`
}

// Integrity is the result of CheckIntegrity.
type Integrity struct {
	// Check is the pragma run: "quick_check" or "integrity_check".
	Check string `json:"check"`
	// Ran reports that SQLite checked the database: the pragma ran (to the
	// end or until it stopped on corruption) or opening the schema failed
	// with a corruption error. When false, OK is false and Err says why; it
	// means "not checked", never "damaged".
	Ran bool `json:"ran"`
	// OK reports that the check ran and returned the single row "ok".
	OK bool `json:"ok"`
	// Locked reports that another process held a lock that blocked reading
	// for longer than the busy timeout: integrity not checked.
	Locked bool `json:"locked,omitempty"`
	// Messages are the check's output lines (rows split on newlines, as
	// SQLite 3.44+ may join several findings in one row), then the error
	// that ended the statement, if any. Empty when OK.
	Messages []string `json:"messages,omitempty"`
	// Damage classifies Messages by object; empty when OK.
	Damage []Damage `json:"damage,omitempty"`
	// PageOwners maps each page that a message names without naming its
	// b-tree ("Fragmentation of 1136 bytes reported as 0 on page 12") to the
	// root pages of the b-trees that reach it, found by walking the b-trees
	// from sqlite_schema's root pages over sqlite_dbpage (PageOwners); a
	// page no b-tree reaches maps to an empty list. Nil when no message
	// needed it or the walk failed (PageWalkErr).
	PageOwners map[int64][]int64 `json:"page_owners,omitempty"`
	// PageWalkErr is why the pages named by messages could not be tied to
	// their b-trees; those messages are then KindUnknown.
	PageWalkErr string `json:"page_walk_error,omitempty"`
	// SchemaErr is why sqlite_schema could not be read to name damaged
	// b-trees; empty when it was read. SQLite 3.53 fails here, before any
	// check, on a file shorter than its in-header size or with a bad header.
	SchemaErr string `json:"schema_error,omitempty"`
	// HeaderProblems is CheckHeaderFile of the checked file, read before
	// SQLite opens it; it explains a database SQLite cannot load.
	HeaderProblems []Problem `json:"header_problems,omitempty"`
	// Summary is one line: "ok", "not checked", or, when Classified, empty
	// until the rules layer (rules.FillRepairs) summarises Damage, e.g.
	// "index idx_a damaged: REINDEX idx_a".
	Summary string `json:"summary"`
	// Classified reports that the check ran to the end or stopped on
	// corruption and Messages were classified into Damage (possibly none).
	Classified bool `json:"-"`
	// Path is the absolute path of the database asked about (the live
	// file, also when a private copy was checked); the repairs name it.
	Path string `json:"-"`
	// CheckedCopy reports that a private copy was checked (Options.Copy).
	CheckedCopy bool `json:"checked_copy,omitempty"`
	// CopyFailed reports that the private copy (Options.Copy) could not be
	// made: no room in TempDir (Err wraps ErrNoRoom's text), no writable
	// TempDir, or a read error; the check did not run.
	CopyFailed bool `json:"copy_failed,omitempty"`
	// Err is why the check did not run or did not finish, e.g.
	// "hot journal present: integrity not checked" or
	// "locked by another process, integrity not checked".
	Err string `json:"error,omitempty"`
	// Elapsed is the wall time CheckIntegrity took, copy included
	// (nanoseconds in JSON).
	Elapsed time.Duration `json:"elapsed_ns"`
}

// Messages used in Integrity.Err for the cases a caller may branch on.
const (
	ErrTextHotJournal = "hot journal present: integrity not checked"
	ErrTextLocked     = "locked by another process, integrity not checked"
)

// ReadOnlyDSN returns the glebarez/go-sqlite DSN CheckIntegrity uses for
// path: a file: URI (so that the driver passes mode=ro to SQLite instead of
// cutting the query off and opening read-write-create), with ?, # and %
// escaped, plus _pragma=busy_timeout(ms) and _pragma=query_only(1). A
// relative path is made absolute. busy <= 0 means DefaultBusyTimeout.
func ReadOnlyDSN(path string, busy time.Duration) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	ms := max(busy.Milliseconds(), 1)
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path)}
	return fmt.Sprintf("%s?mode=ro&_pragma=busy_timeout(%d)&_pragma=query_only(1)", u.String(), ms)
}

// CheckIntegrity runs PRAGMA quick_check (or integrity_check with
// opts.Full) on the database at dbPath over one read-only connection
// (ReadOnlyDSN) and classifies the messages with Classify, naming b-trees
// from sqlite_schema read on the same connection.
//
// It never writes to the database: no journal rollback, no checkpoint, no
// journal_mode change. Before opening SQLite it calls InspectJournal; a
// non-empty journal whose first byte is not zero and whose writer is gone
// (SQLite's hot-journal test) makes it return Ran=false with Err
// ErrTextHotJournal, because rolling the journal back is a write. Another
// process holding a lock past the busy timeout gives Locked=true and Err
// ErrTextLocked; in WAL mode readers do not wait for writers, so this only
// happens in rollback mode (or while a WAL database is being recovered).
// Cancelling ctx interrupts the check (Err says so).
//
// Locks: the connection takes only SHARED locks (rollback mode) or WAL
// read locks. When it is the last connection to a WAL database, SQLite's
// close path tries for a moment to take an EXCLUSIVE lock to checkpoint
// (wal.c sqlite3WalClose); a read-only connection's checkpoint is refused
// and nothing is written, but the -wal and -shm are left behind
// (https://sqlite.org/walformat.html "File Lifecycles"). Options.Copy
// keeps even that off the live files.
//
// CheckIntegrity returns no error: every failure is in Integrity.Err.
func CheckIntegrity(ctx context.Context, dbPath string, opts Options) (res Integrity) {
	start := time.Now()
	defer func() {
		res.Elapsed = time.Since(start)
		if res.Summary == "" && !res.Classified {
			res.Summary = "not checked"
		}
	}()
	res.Check = "quick_check"
	if opts.Full {
		res.Check = "integrity_check"
	}
	path, err := filepath.Abs(dbPath)
	if err != nil {
		res.Err = fmt.Sprintf("check integrity: %v", err)
		return res
	}
	res.Path = path
	fi, err := os.Stat(path)
	if err != nil {
		res.Err = fmt.Sprintf("check integrity: %v", err)
		return res
	}
	if !fi.Mode().IsRegular() {
		res.Err = fmt.Sprintf("check integrity: %s is not a regular file", path)
		return res
	}
	j, _ := InspectJournal(path)
	if j.NonZero && j.WriterLock != LockHeld {
		res.Err = ErrTextHotJournal
		return res
	}
	target := path
	if opts.Copy {
		if j.SizeBytes > 0 && j.WriterLock == LockHeld {
			// A rollback-mode writer may have written uncommitted pages
			// into the database file: a copy now would be inconsistent.
			res.Locked = true
			res.Err = ErrTextLocked
			return res
		}
		tmp := cmp.Or(opts.TempDir, os.TempDir())
		if x, why := swappableTemp(tmp); x != "" {
			res.CopyFailed = true
			res.Err = fmt.Sprintf("check integrity: copy: %s: %v: %s, %s", tmp, ErrSwappableTemp, x, why)
			return res
		}
		_, _ = RemoveStaleCopies(tmp)
		dir, err := newCopyDir(tmp)
		if err != nil {
			res.CopyFailed = true
			res.Err = fmt.Sprintf("check integrity: copy: %v", err)
			return res
		}
		defer dir.remove()
		if target, err = copyFiles(ctx, path, dir.path); err != nil {
			res.CopyFailed = true
			res.Err = fmt.Sprintf("check integrity: copy: %v", err)
			if ctx.Err() != nil {
				res.Err = fmt.Sprintf("check integrity: interrupted: %v", ctx.Err())
			}
			return res
		}
		res.CheckedCopy = true
	}
	res.HeaderProblems, _ = CheckHeaderFile(target)
	check(ctx, target, opts, &res)
	return res
}

// check opens target read-only and fills res.
func check(ctx context.Context, target string, opts Options, res *Integrity) {
	db, err := sql.Open("sqlite", ReadOnlyDSN(target, opts.BusyTimeout))
	if err != nil {
		res.Err = fmt.Sprintf("check integrity: open: %v", err)
		return
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		failed(ctx, res, "open", err)
		return
	}
	defer conn.Close()

	schema, err := readSchema(ctx, conn)
	if err != nil {
		if code := sqliteCode(err); !isCorrupt(code) {
			failed(ctx, res, "read sqlite_schema", err)
			return
		}
		res.SchemaErr = fmt.Sprintf("read sqlite_schema: %v", err)
	}

	rows, err := conn.QueryContext(ctx, "PRAGMA "+res.Check)
	if err != nil {
		failed(ctx, res, res.Check, err)
		if res.Ran {
			finish(res, schema)
		}
		return
	}
	defer rows.Close()
	res.Ran = true
	var msgs []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			res.Ran = false
			res.Err = fmt.Sprintf("check integrity: scan: %v", err)
			return
		}
		for _, line := range strings.Split(s, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				msgs = append(msgs, line)
			}
		}
	}
	if err := rows.Err(); err != nil {
		if !isCorrupt(sqliteCode(err)) {
			res.Ran = false
			res.Messages = msgs
			failed(ctx, res, res.Check, err)
			return
		}
		msgs = append(msgs, err.Error())
	}
	rows.Close()
	if len(msgs) == 1 && msgs[0] == "ok" {
		res.OK = true
		res.Summary = "ok"
		return
	}
	res.Messages = msgs
	ownPages(ctx, conn, schema, res)
	finish(res, schema)
}

// maxWalkPages bounds the pages ownPages reads: 2^22 pages is 16 GiB at
// the default 4096-byte page size.
const maxWalkPages = 1 << 22

// ownPages fills res.PageOwners for the pages res.Messages name without a
// b-tree, walking the b-trees of schema on conn; pages that are roots need
// no walk.
func ownPages(ctx context.Context, conn *sql.Conn, schema []SchemaEntry, res *Integrity) {
	if schema == nil {
		return
	}
	roots := []int64{1}
	isRoot := map[int64]bool{1: true}
	for _, e := range schema {
		if e.RootPage > 0 && (e.Type == "table" || e.Type == "index") && !isRoot[e.RootPage] {
			roots = append(roots, e.RootPage)
			isRoot[e.RootPage] = true
		}
	}
	var want []int64
	for _, m := range res.Messages {
		if pg := messagePage(m); pg > 0 && (!isRoot[pg] || strings.HasPrefix(m, "2nd reference")) && !slices.Contains(want, pg) {
			want = append(want, pg)
		}
	}
	if len(want) == 0 {
		return
	}
	read, count, usable, err := dbPageReader(ctx, conn)
	if err == nil && count > maxWalkPages {
		err = fmt.Errorf("%d pages, more than the %d walked", count, maxWalkPages)
	}
	if err == nil {
		var owners map[int64][]int64
		owners, err = PageOwners(read, roots, want, count, usable)
		if err == nil {
			for _, pg := range want {
				if owners[pg] == nil {
					owners[pg] = []int64{}
				}
			}
			res.PageOwners = owners
			return
		}
	}
	res.PageWalkErr = fmt.Sprintf("tie pages to b-trees: %v", err)
}

// finish classifies res.Messages and sets res.Classified.
// When SQLite could not load the schema and the messages name nothing, the
// damage is reported against the whole database, with the header problems.
func finish(res *Integrity, schema []SchemaEntry) {
	res.Classified = true
	res.Damage = ClassifyOwned(res.Messages, schema, res.PageOwners)
	if schema == nil && res.SchemaErr != "" && !slices.ContainsFunc(res.Damage, func(d Damage) bool {
		return d.Kind != KindUnknown || (d.Object != "" && d.Object != objDatabase)
	}) {
		msg := res.SchemaErr
		for _, p := range res.HeaderProblems {
			msg += "; header: " + p.ID + ": " + p.Detail
		}
		res.Damage = []Damage{{Kind: KindUnknown, Object: objDatabase, Message: msg}}
	}
}

// failed records an error that stopped the check at step.
func failed(ctx context.Context, res *Integrity, step string, err error) {
	code := sqliteCode(err)
	switch {
	case ctx.Err() != nil:
		res.Err = fmt.Sprintf("check integrity: interrupted: %v", ctx.Err())
	case code&0xff == sqlite3.SQLITE_BUSY || code&0xff == sqlite3.SQLITE_LOCKED:
		res.Locked = true
		res.Err = ErrTextLocked
	case code == sqlite3.SQLITE_READONLY_ROLLBACK:
		res.Err = ErrTextHotJournal
	case isCorrupt(code):
		res.Ran = true
		res.Messages = append(res.Messages, err.Error())
	default:
		res.Err = fmt.Sprintf("check integrity: %s: %v", step, err)
	}
}

// isCorrupt reports SQLITE_CORRUPT (11, any extended code) and
// SQLITE_NOTADB (26).
func isCorrupt(code int) bool {
	return code >= 0 && (code&0xff == sqlite3.SQLITE_CORRUPT || code&0xff == sqlite3.SQLITE_NOTADB)
}

// sqliteCode returns the extended result code of a driver error, or -1.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()
	}
	return -1
}

// readSchema reads sqlite_schema (alias sqlite_master).
func readSchema(ctx context.Context, conn *sql.Conn) ([]SchemaEntry, error) {
	rows, err := conn.QueryContext(ctx, "SELECT type, name, tbl_name, coalesce(rootpage, 0), coalesce(sql, '') FROM sqlite_master")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SchemaEntry
	for rows.Next() {
		var e SchemaEntry
		if err := rows.Scan(&e.Type, &e.Name, &e.TblName, &e.RootPage, &e.SQL); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if out == nil {
		out = []SchemaEntry{}
	}
	return out, nil
}
