// Package salvage recovers the rows of a damaged SQLite database into a
// new file, in pure Go: it reads the source's pages itself (the main file
// with the committed frames of a valid -wal laid over them, as SQLite
// would, https://sqlite.org/fileformat2.html), walks each table's b-tree
// from sqlite_schema, attributes leaf pages no tree reaches back to their
// table by their records' shape, and has SQLite (modernc.org/sqlite) write
// the new database: tables, then rows with their rowids, then indexes,
// full-text tables rebuilt from their content, triggers and views.
//
// The source, its -wal and -journal are only read, through
// internal/rawfile, never opened by SQLite: nothing is checkpointed,
// rolled back or created beside them.
package salvage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/report"

	_ "github.com/glebarez/go-sqlite" // registers driver "sqlite" (modernc.org/sqlite)
)

// Schema is the JSON schema name of Result.
const Schema = "preflight-recover/v1"

// ErrBadInput wraps what makes recovery impossible to start: no source, a
// destination that exists, a source that is not a database.
var ErrBadInput = errors.New("bad input")

// badInput is an error that wraps ErrBadInput without saying so in its
// text.
type badInput struct{ msg string }

func (e *badInput) Error() string        { return e.msg }
func (e *badInput) Is(target error) bool { return target == ErrBadInput }

func badInputf(format string, args ...any) error {
	return &badInput{msg: fmt.Sprintf(format, args...)}
}

// Options configures Run.
type Options struct {
	// Source is the damaged database. Required.
	Source string
	// To is the new database; it must not exist. Required.
	To string
	// SchemaFrom is a database with the application's schema (created
	// empty), used when the source's sqlite_schema is damaged; the
	// source's root pages are still used where its schema names them.
	SchemaFrom string
	// Guard is the check that looks for live writers of the source
	// (preflight.Check's options; Paths is set to Source). Nil skips the
	// guard: for a copy nothing else can have open.
	Guard *preflight.Options
	// AllowUnverified turns the refusal for a live-writer probe that
	// could not run into a note. A writer that was seen still refuses.
	AllowUnverified bool
}

// Table is what was recovered of one table.
type Table struct {
	Name string `json:"name"`
	// Rows is the rows written into the table in the new file, from its
	// b-tree and from pages attributed to it.
	Rows int64 `json:"rows"`
	// Attributed is how many of Rows came from leaf pages no b-tree
	// reached, attributed to this table by their records' shape.
	Attributed int64 `json:"attributed_rows"`
	// LostAndFound is how many rows read from this table's b-tree went
	// to lost_and_found (a broken overflow chain, a record that does not
	// fit the table, a constraint the row fails).
	LostAndFound int64 `json:"lost_and_found_rows"`
	// PagesUnreadable is the pages its b-tree reaches that could not be
	// read or parsed (zeroed, past the end of a truncated file, a loop).
	PagesUnreadable int `json:"pages_unreadable"`
	// CellsUnreadable is cells on readable pages that did not decode.
	CellsUnreadable int `json:"cells_unreadable"`
	// Error is why the table could not be created in the new file.
	Error string `json:"error,omitempty"`
}

// Result is what Run did.
type Result struct {
	Schema string `json:"schema"`
	Source string `json:"source"`
	To     string `json:"to"`
	// PageSize is the source's page size; PageSizeGuessed says it was
	// found from the b-tree pages because the header is damaged.
	PageSize        int    `json:"page_size"`
	PageSizeGuessed bool   `json:"page_size_guessed"`
	Pages           uint32 `json:"pages"`
	// WALFrames is the committed -wal frames laid over the file.
	WALFrames int `json:"wal_frames"`
	// JournalPages is the original page images of a hot rollback journal
	// laid over the file (a transaction interrupted mid-way, rolled back
	// in what is read, never in the source).
	JournalPages int     `json:"journal_pages"`
	Tables       []Table `json:"tables"`
	// LostAndFound is the rows written to the lost_and_found table
	// (LostAndFoundTable); 0 when there is none.
	LostAndFound      int64  `json:"lost_and_found_rows"`
	LostAndFoundTable string `json:"lost_and_found_table,omitempty"`
	// OrphanPages is the leaf pages no b-tree reached that held rows.
	OrphanPages int `json:"orphan_pages"`
	// SchemaUnreadable is the pages of sqlite_schema's b-tree that could
	// not be read.
	SchemaUnreadable int `json:"schema_pages_unreadable"`
	// Created lists the indexes, views, triggers and full-text tables
	// created after the data; Failed those that could not be, with why.
	Created []string `json:"created"`
	Failed  []string `json:"failed"`
	Notes   []string `json:"notes"`
	// Refusals are why recovery did not start (Run returned ErrRefused).
	Refusals []Refusal `json:"refusals,omitempty"`
	// Probes are the guard's live-writer probes and how each ran.
	Probes map[string]report.ProbeStatus `json:"probes,omitempty"`
	// IntegrityCheck is PRAGMA integrity_check's first line on the new
	// file: "ok" when it passed.
	IntegrityCheck string        `json:"integrity_check"`
	Duration       time.Duration `json:"duration_ns"`
}

// Loss reports whether rows may be missing or were stranded in
// lost_and_found: a table page unreadable, a cell that did not decode, a
// table not created, rows in lost_and_found, or a damaged schema.
func (r *Result) Loss() bool {
	if r.LostAndFound > 0 || r.SchemaUnreadable > 0 {
		return true
	}
	for _, t := range r.Tables {
		if t.PagesUnreadable > 0 || t.CellsUnreadable > 0 || t.Error != "" {
			return true
		}
	}
	return false
}

// Run recovers opts.Source into opts.To. It returns an error wrapping
// ErrBadInput for bad input, and any other error when the recovery could
// not finish (the new file is then removed); the Result says what was
// recovered. It never writes the source or anything beside it.
func Run(ctx context.Context, opts Options) (res *Result, err error) {
	start := time.Now()
	if opts.Source == "" || opts.To == "" {
		return nil, badInputf("a source and a destination (--to) are needed")
	}
	to, err := filepath.Abs(opts.To)
	if err != nil {
		return nil, badInputf("%v", err)
	}
	if _, err := os.Lstat(to); err == nil {
		return nil, badInputf("%s exists: recover writes a new file only", opts.To)
	}
	if _, err := os.Stat(opts.Source); err != nil {
		return nil, badInputf("%v", err)
	}
	if same(opts.Source, to) {
		return nil, badInputf("--to names the source")
	}
	if opts.Guard != nil {
		refusals, notes, probes, err := guard(ctx, opts, to)
		if err != nil {
			return nil, err
		}
		if len(refusals) > 0 {
			return &Result{Schema: Schema, Source: opts.Source, To: opts.To, Tables: []Table{}, Created: []string{}, Failed: []string{},
				Notes: notes, Refusals: refusals, Probes: probes}, ErrRefused
		}
		defer func(notes []string, probes map[string]report.ProbeStatus) {
			if res != nil {
				res.Notes = append(notes, res.Notes...)
				res.Probes = probes
			}
		}(notes, probes)
	}
	src, err := openSource(opts.Source)
	if err != nil {
		return nil, badInputf("%v", err)
	}
	defer src.Close()
	res = &Result{Schema: Schema, Source: opts.Source, To: opts.To, PageSize: src.pageSize, PageSizeGuessed: src.guessed,
		Pages: src.count, WALFrames: src.walFrames, JournalPages: src.journalPages, Tables: []Table{}, Created: []string{}, Failed: []string{}, Notes: src.notes}
	r := &run{ctx: ctx, src: src, w: newWalker(ctx, src), res: res}
	if err := r.create(to); err != nil {
		return nil, err
	}
	err = r.recover(opts)
	if cerr := r.close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(to)
		os.Remove(to + "-journal")
		return res, err
	}
	res.Duration = time.Since(start)
	return res, nil
}

// same reports whether a and b name one file.
func same(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// run is one recovery in progress.
type run struct {
	ctx   context.Context
	src   *source
	w     *walker
	res   *Result
	db    *sql.DB
	conn  *sql.Conn
	batch int
	pend  *pending
	lf    *lostFound
}

// create makes the new file exclusively (O_EXCL, never a symlink) and opens
// it with SQLite, with the source's page size and encoding.
func (r *run) create(to string) error {
	mode := os.FileMode(0o644)
	if fi, err := r.src.main.Stat(); err == nil {
		mode = fi.Mode().Perm()
	}
	f, err := createExcl(to, mode)
	if err != nil {
		return badInputf("create %s: %v", to, err)
	}
	f.Close()
	db, err := sql.Open("sqlite", fileURI(to, "mode=rw"))
	if err == nil {
		db.SetMaxOpenConns(1)
		r.conn, err = db.Conn(r.ctx)
	}
	if err != nil {
		os.Remove(to)
		return fmt.Errorf("open %s: %w", to, err)
	}
	r.db = db
	enc := map[int]string{1: "UTF-8", 2: "UTF-16le", 3: "UTF-16be"}[r.src.enc]
	for _, q := range []string{
		fmt.Sprintf("PRAGMA page_size=%d", r.src.pageSize),
		fmt.Sprintf("PRAGMA encoding='%s'", enc),
		"PRAGMA journal_mode=DELETE",
		"PRAGMA synchronous=OFF",
		"PRAGMA foreign_keys=OFF",
	} {
		if _, err := r.conn.ExecContext(r.ctx, q); err != nil {
			r.close()
			os.Remove(to)
			return fmt.Errorf("set up %s: %w", to, err)
		}
	}
	return nil
}

func (r *run) close() error {
	var err error
	if r.conn != nil {
		r.conn.Close()
	}
	if r.db != nil {
		err = r.db.Close()
	}
	r.conn, r.db = nil, nil
	return err
}

func (r *run) exec(q string, args ...any) error {
	_, err := r.conn.ExecContext(r.ctx, q, args...)
	return err
}
