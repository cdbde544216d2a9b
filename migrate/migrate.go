// Package migrate copies an application's data directory to another place
// (a bind-mounted host directory into a new named volume) so that nothing
// is lost: it refuses while any live-writer probe sees a writer of the
// databases (preflight.Check), copies each SQLite database consistently
// with VACUUM INTO through the SQLite driver (a transactionally consistent
// snapshot, https://sqlite.org/lang_vacuum.html#vacuuminto), copies every
// other file with its owner, mode and timestamps, and then verifies each
// database (PRAGMA quick_check, the same row count in every table, the same
// user_version) and each other file (size and SHA-256).
package migrate

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/preflight-sqlite/preflight/probe/sqlitefile"

	"github.com/preflight-sqlite/preflight/internal/fsbound"
	"github.com/preflight-sqlite/preflight/internal/rawfile"
	"github.com/preflight-sqlite/preflight/internal/shell"
	"github.com/preflight-sqlite/preflight/probe/health"
	"github.com/preflight-sqlite/preflight/probe/wal"

	_ "github.com/glebarez/go-sqlite" // registers driver "sqlite"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/probe/docker"
)

// Schema names the JSON shape of Result.
const Schema = "preflight-migrate/v1"

// IncompleteMarker is the file that marks a destination whose copy is not
// complete and verified. Run creates it in To (fsynced, with the directory)
// before it copies anything and removes it only once the copy verified:
// a migrate stopped by a signal, killed, or whose copy did not verify
// leaves it there, and Run refuses a To that holds anything (it too) and
// a From that holds it (a copy that is not one).
const IncompleteMarker = ".preflight-migrate-incomplete"

// ErrRefused is returned (wrapped) when the guard refuses: a live writer
// (ErrInUse), a destination that is not empty (ErrNotEmpty), a source
// database a read would change (ErrSourceState), a source or destination
// that does not answer (fsbound.ErrNoAnswer).
var ErrRefused = errors.New("migration refused")

// ErrBadInput is returned (wrapped) when --from is not a directory, or
// when --from and --to overlap (one is the other or inside it, compared
// by device and inode after resolving symlinks).
var ErrBadInput = errors.New("bad input")

// ErrVerify is returned (wrapped) when the copy does not verify.
var ErrVerify = errors.New("copy does not verify")

// Options configure Run.
type Options struct {
	// From is the data directory to copy; To the destination directory,
	// required to be empty, and created when missing once the guard let
	// the copy run (a refusal creates nothing).
	From, To string
	// Docker configures the Docker probe of the guard (other containers
	// with the databases open). The zero value asks the engine if one is
	// reachable.
	Docker docker.Options
	// NoGuard skips the live-writer guard (tests of the copy alone).
	NoGuard bool
	// AllowUnverified copies even when a live-writer probe could not run
	// fully (no Docker API in a one-shot container, /proc entries that
	// could not be read): for when the caller stopped every user of the
	// data itself. A writer that was seen is never overridden.
	AllowUnverified bool
	// FSTimeout bounds how long From and To may take to answer a first
	// stat and directory read (a stuck FUSE daemon, a dead NFS server);
	// one that does not is refused before anything is copied. Zero means
	// 5 s. The copy itself is not bounded: a filesystem that stops
	// answering halfway stalls it.
	FSTimeout time.Duration
}

// Database is one copied database.
type Database struct {
	// Path is relative to From and To.
	Path        string       `json:"path"`
	JournalMode string       `json:"journal_mode"`
	UserVersion int64        `json:"user_version"`
	Tables      []TableCount `json:"tables"`
	QuickCheck  string       `json:"quick_check"`
	Verified    bool         `json:"verified"`
}

// TableCount is a table's row count in the source and the copy.
type TableCount struct {
	Name string `json:"name"`
	From int64  `json:"from"`
	To   int64  `json:"to"`
}

// File is one copied file (not a database).
type File struct {
	Path     string `json:"path"`
	Size     int64  `json:"size_bytes"`
	SHA256   string `json:"sha256"`
	Verified bool   `json:"verified"`
}

// Result is what Run did.
type Result struct {
	Schema    string     `json:"schema"`
	From      string     `json:"from"`
	To        string     `json:"to"`
	Databases []Database `json:"databases"`
	Files     []File     `json:"files"`
	Dirs      int        `json:"dirs"`
	Symlinks  int        `json:"symlinks"`
	// Skipped lists entries not copied: database sidecars (-wal, -shm,
	// -journal: their content is in the consistent copy) and special
	// files (sockets, pipes, devices).
	Skipped []string `json:"skipped,omitempty"`
	// Refused lists why the guard refused; empty when it let the copy run.
	Refused []string `json:"refused,omitempty"`
	// Guard is the live-writer check of From and To, when it ran.
	Guard *preflight.Report `json:"guard,omitempty"`
	// Incomplete is the IncompleteMarker left in To: the copy there was
	// stopped (ctx ended: a signal) or did not verify. Empty when To holds
	// a verified copy or nothing.
	Incomplete string `json:"incomplete,omitempty"`
}

// Run copies From to To and verifies the copy. Errors wrap ErrRefused when
// nothing was copied because the guard refused (and one of ErrInUse,
// ErrNotEmpty, ErrSourceState, fsbound.ErrNoAnswer saying why), ErrVerify
// when the copy differs; a partial copy is left in To for inspection (From
// is never changed). To is created only once the guard let the copy run:
// a refusal leaves no directory behind. When ctx ends (a signal) during
// the copy, Run stops at once with an error wrapping ctx's cause, and the
// partial copy stays in To with IncompleteMarker (res.Incomplete); any
// other failure of the copy empties To.
func Run(ctx context.Context, opts Options) (_ *Result, err error) {
	res := &Result{Schema: Schema, From: opts.From, To: opts.To, Databases: []Database{}, Files: []File{}}
	from, err := filepath.Abs(opts.From)
	if err != nil {
		return res, err
	}
	to, err := filepath.Abs(opts.To)
	if err != nil {
		return res, err
	}
	for _, p := range []string{from, to} {
		if err := fsbound.Responsive(ctx, p, opts.FSTimeout); err != nil {
			res.Refused = append(res.Refused, err.Error())
			return res, fmt.Errorf("%w: %w", ErrRefused, err)
		}
	}
	fi, err := os.Stat(from)
	if err != nil || !fi.IsDir() {
		return res, fmt.Errorf("%w: --from %s is not a directory", ErrBadInput, opts.From)
	}
	if _, err := checkOverlap(from, to, opts.From, opts.To); err != nil {
		return res, err
	}
	if _, err := os.Lstat(filepath.Join(from, IncompleteMarker)); err == nil {
		return res, fmt.Errorf("%w: --from %s holds %s: it is a copy an interrupted migrate left unfinished, not the data; copy from the original", ErrBadInput, opts.From, IncompleteMarker)
	}
	root, err := openExisting(from, to, opts, res)
	if err != nil {
		return res, err
	}
	if root != nil {
		defer root.Close()
	}
	dbs, err := findDatabases(from)
	if err != nil {
		return res, err
	}
	if err := guard(ctx, opts, from, to, root != nil, res); err != nil {
		return res, err
	}
	if err := sourceState(dbs, res); err != nil {
		return res, err
	}
	if root == nil {
		if root, err = openDest(from, to, opts); err != nil {
			return res, err
		}
		defer root.Close()
	}
	return res, copyAll(ctx, opts, from, dbs, root, res)
}

// ErrInUse, ErrNotEmpty and ErrSourceState say why a migration was refused
// (each comes with ErrRefused): a writer seen or not ruled out, a --to that
// is not empty, a source database that a read would change or lose part
// of (a hot rollback journal, a WAL that breaks before valid-looking
// frames).
var (
	ErrInUse       = errors.New("the data may be in use")
	ErrNotEmpty    = errors.New("--to is not empty")
	ErrSourceState = errors.New("a source database must be recovered first")
)

// refusal is an error that is ErrRefused and kind, reading
// "migration refused: " + msg.
type refusal struct {
	kind error
	msg  string
}

func (r *refusal) Error() string { return ErrRefused.Error() + ": " + r.msg }

func (r *refusal) Is(target error) bool { return target == ErrRefused || target == r.kind }

// openExisting opens to as openDest does when it exists and refuses it
// (ErrNotEmpty) when it is not empty; a missing to is nil, nil: Run creates
// it once the guard let the copy run.
func openExisting(from, to string, opts Options, res *Result) (*os.Root, error) {
	if _, err := os.Lstat(to); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	root, err := openDest(from, to, opts)
	if err != nil {
		return nil, err
	}
	ents, err := readNames(root, ".")
	if err == nil && len(ents) == 0 {
		return root, nil
	}
	root.Close()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", opts.To, err)
	}
	why := fmt.Sprintf("--to %s is not empty (it holds %s): the copy never overwrites", opts.To, ents[0])
	if slices.Contains(ents, IncompleteMarker) {
		why = fmt.Sprintf("--to %s holds an incomplete copy that an earlier migrate left (it was interrupted, or its copy did not verify; %s marks it): the copy never overwrites", opts.To, IncompleteMarker)
	}
	res.Refused = append(res.Refused, why)
	return nil, &refusal{ErrNotEmpty, why}
}

// guard refuses (ErrInUse) while a live-writer probe sees a writer of the
// databases in from (and in to, when it exists), or, without
// opts.AllowUnverified, when a probe could not run. opts.NoGuard skips it.
func guard(ctx context.Context, opts Options, from, to string, toExists bool, res *Result) error {
	if opts.NoGuard {
		return nil
	}
	paths := []string{from}
	if toExists {
		paths = append(paths, to)
	}
	// No sniffing budget: the guard must see every database the copy
	// reads (findDatabases opens every file too).
	rep, err := preflight.Check(ctx, preflight.Options{Paths: paths, MaxDepth: 64,
		SniffMax: -1, SniffTime: -1, Writers: preflight.WriterOptions{Docker: opts.Docker}})
	if err != nil {
		return fmt.Errorf("check for live writers: %w", err)
	}
	res.Guard = rep
	for _, d := range rep.DataDirs {
		for _, db := range d.Databases {
			for _, w := range db.Writers {
				res.Refused = append(res.Refused, fmt.Sprintf("%s is open by %s", db.Path, w.Name()))
			}
			for _, u := range db.Unlinked {
				res.Refused = append(res.Refused, fmt.Sprintf("%s: process %d holds a replaced %s", db.Path, u.PID, u.File))
			}
		}
	}
	if len(res.Refused) == 0 && !opts.AllowUnverified {
		if why := unverified(rep); why != "" {
			res.Refused = append(res.Refused, why+"; stop every service and program that uses "+opts.From+" and run again with --allow-unverified")
		}
	}
	if len(res.Refused) > 0 {
		return &refusal{ErrInUse, strings.Join(res.Refused, "; ")}
	}
	return nil
}

// sourceState refuses (ErrSourceState) the databases whose state a read
// would change or lose: a hot journal (SQLite rolls it back on the next
// open) and a WAL with valid-looking frames after a broken one (SQLite
// silently drops them, and with them committed transactions the copy
// would not carry), and a -wal or -shm that is not a regular file (a
// symlink SQLite would follow).
func sourceState(dbs map[string]bool, res *Result) error {
	for p := range dbs {
		if j, err := health.InspectJournal(p); err == nil && j.Hot {
			res.Refused = append(res.Refused, fmt.Sprintf("%s has a hot rollback journal (%d bytes): an interrupted transaction must be rolled back first: open it once normally (sqlite3 %s 'PRAGMA quick_check;'), then migrate", p, j.SizeBytes, shell.Quote(p)))
		}
		if err := irregularSidecar(p); err != nil {
			res.Refused = append(res.Refused, err.Error()+"; put the real file in its place (do not delete a -wal: it holds committed transactions)")
			continue
		}
		if fi, err := os.Stat(p + "-wal"); err == nil && fi.Size() > 0 {
			if w, err := wal.ValidateFile(p + "-wal"); err == nil && w.Discards() {
				res.Refused = append(res.Refused, fmt.Sprintf("%s-wal breaks at frame %d (%s) and %d valid-looking frames (%d commits) follow: SQLite would drop them, so the copy would lose those transactions; keep the database with its -wal and see preflight check --deep", p, w.FirstInvalidFrame, w.InvalidReason, w.ValidLookingAfter, w.CommitsAfterBreak))
			}
		}
	}
	if len(res.Refused) > 0 {
		sort.Strings(res.Refused)
		return &refusal{ErrSourceState, strings.Join(res.Refused, "; ")}
	}
	return nil
}

// copyAll copies every entry of from into root (the empty to) and
// verifies the copy; see Run.
func copyAll(ctx context.Context, opts Options, from string, dbs map[string]bool, root *os.Root, res *Result) (err error) {
	if err := mark(root, opts.From); err != nil {
		return err
	}
	res.Incomplete = filepath.Join(opts.To, IncompleteMarker)
	// From here on the copy writes into To, which was empty: a copy that
	// fails is removed, so a second run does not meet a half-filled To.
	// One stopped by a signal stays, marked, so that the process ends
	// within the stop's grace period whatever the copy's size.
	defer func() {
		switch {
		case err == nil:
			res.Incomplete = ""
		case ctx.Err() != nil:
			err = fmt.Errorf("%w: interrupted (%w)", err, context.Cause(ctx))
		case !errors.Is(err, ErrVerify):
			emptyDir(root)
			res.Incomplete = ""
		}
	}()

	var dirs []dirTimes
	err = filepath.WalkDir(from, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		d, err := copyEntry(ctx, p, rel, dbs, root, res)
		if d != nil {
			dirs = append(dirs, *d)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("copy %s to %s: %w", opts.From, opts.To, err)
	}
	// Directory times last, deepest first: creating entries changed them.
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i].rel) > len(dirs[j].rel) })
	for _, d := range dirs {
		if err := keepMeta(root, d.rel, d.fi, false); err != nil {
			return err
		}
	}
	if err := verify(ctx, res, from, root); err != nil {
		return err
	}
	return unmark(root, res)
}

// mark creates IncompleteMarker in root, saying what it is, and fsyncs it
// and root: on disk before any copied entry is.
func mark(root *os.Root, from string) error {
	f, err := root.OpenFile(IncompleteMarker, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("mark %s incomplete: %w", root.Name(), err)
	}
	_, err = fmt.Fprintf(f, "preflight migrate is copying %s here, or was stopped before its copy was complete and verified: do not use this copy\n", from)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncAt(root, ".")
	}
	if err != nil {
		return fmt.Errorf("mark %s incomplete: %w", root.Name(), err)
	}
	return nil
}

// unmark fsyncs the copied databases (VACUUM INTO does not) and root, then
// removes IncompleteMarker and fsyncs root again: the marker goes only once
// the verified copy is on disk.
func unmark(root *os.Root, res *Result) error {
	for _, d := range res.Databases {
		if err := syncAt(root, d.Path); err != nil {
			return fmt.Errorf("fsync %s: %w", d.Path, err)
		}
	}
	if err := syncAt(root, "."); err != nil {
		return err
	}
	if err := root.Remove(IncompleteMarker); err != nil {
		return fmt.Errorf("remove %s: %w", IncompleteMarker, err)
	}
	return syncAt(root, ".")
}

// syncAt fsyncs the file or directory rel in root.
func syncAt(root *os.Root, rel string) error {
	f, err := root.Open(rel)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// dirTimes is a directory copied, whose times are set once its entries are.
type dirTimes struct {
	rel string
	fi  fs.FileInfo
}

// copyEntry copies p, at rel inside from, into root and adds it to res;
// a directory is returned for its times to be set last.
func copyEntry(ctx context.Context, p, rel string, dbs map[string]bool, root *os.Root, res *Result) (*dirTimes, error) {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) && sidecarOf(p, dbs) {
		return nil, nil // gone since the directory was listed; its content is in the database copy
	}
	if err != nil {
		return nil, err
	}
	switch {
	case fi.IsDir():
		if rel != "." {
			if err := root.Mkdir(rel, fi.Mode().Perm()); err != nil {
				return nil, fmt.Errorf("create %s: %w", filepath.Join(root.Name(), rel), err)
			}
			res.Dirs++
		}
		return &dirTimes{rel, fi}, nil
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return nil, err
		}
		if err := root.Symlink(target, rel); err != nil {
			return nil, fmt.Errorf("create symlink %s: %w", filepath.Join(root.Name(), rel), err)
		}
		res.Symlinks++
		return nil, keepMeta(root, rel, fi, true)
	case !fi.Mode().IsRegular():
		res.Skipped = append(res.Skipped, rel+" (not a regular file)")
		return nil, nil
	case dbs[p]:
		db, err := copyDatabase(ctx, p, root, rel)
		if err != nil {
			return nil, err
		}
		db.Path = rel
		res.Databases = append(res.Databases, db)
		return nil, keepMeta(root, rel, fi, false)
	case sidecarOf(p, dbs):
		res.Skipped = append(res.Skipped, rel+" (sidecar: its content is in the database copy)")
		return nil, nil
	}
	f, err := copyFile(ctx, p, root, rel, fi)
	if err != nil {
		return nil, err
	}
	f.Path = rel
	res.Files = append(res.Files, f)
	return nil, keepMeta(root, rel, fi, false)
}

const magic = sqlitefile.Magic

// findDatabases returns the files under dir that start with the SQLite
// header magic.
func findDatabases(dir string) (map[string]bool, error) {
	out := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if de.IsDir() && strings.Contains(de.Name(), sqlitefile.BackupDirMarker) {
			return filepath.SkipDir // a convert backup: its files are copied as they are
		}
		if !de.Type().IsRegular() {
			return nil
		}
		f, err := rawfile.Open(p, true)
		if errors.Is(err, rawfile.ErrNotRegular) {
			return nil // replaced since the walk listed it
		}
		if err != nil {
			return err
		}
		defer f.Close()
		b := make([]byte, len(magic))
		if n, _ := io.ReadFull(f, b); n == len(magic) && string(b) == magic {
			out[p] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find databases in %s: %w", dir, err)
	}
	return out, nil
}

func sidecarOf(p string, dbs map[string]bool) bool {
	for _, s := range []string{"-wal", "-shm", "-journal"} {
		if strings.HasSuffix(p, s) && dbs[strings.TrimSuffix(p, s)] {
			return true
		}
	}
	return false
}

// dsn opens path without creating it, in mode "ro", "rw" or immutable,
// with a busy timeout.
func dsn(path, mode string) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return "file:" + esc + "?mode=" + mode + "&_pragma=busy_timeout(5000)"
}

// open opens path on one connection. The source is opened read-only: a
// read-write connection that is the last to close checkpoints the WAL and
// deletes -wal and -shm, which changes the source under the copy.
func open(ctx context.Context, path, mode string) (*sql.DB, *sql.Conn, error) {
	db, err := sql.Open("sqlite", dsn(path, mode))
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	c, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, c, nil
}

// copyDatabase writes a consistent copy of src to rel in root with VACUUM
// INTO and gives it src's journal mode. The file is created empty in root
// first (O_EXCL, so nothing at that name is followed); SQLite then opens
// it by path (root.Name() joined with rel).
func copyDatabase(ctx context.Context, src string, root *os.Root, rel string) (Database, error) {
	out := Database{}
	f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return out, fmt.Errorf("create %s: %w", filepath.Join(root.Name(), rel), err)
	}
	f.Close()
	dst := filepath.Join(root.Name(), rel)
	if err := irregularSidecar(src); err != nil {
		return out, err
	}
	mode, read := "ro", src
	srcInfo, quiet := quiescentWAL(src)
	switch {
	case quiet:
		mode = immutable
	case crashedWAL(src):
		// Read a private copy in --to (removed on return, before --to
		// is verified): the source gets no -shm and the WAL is read.
		p, remove, err := privateCopy(ctx, src, root)
		if err != nil {
			return out, err
		}
		defer remove()
		mode, read = "rw", p
	}
	db, c, err := open(ctx, read, mode)
	if err != nil {
		return out, err
	}
	defer db.Close()
	defer c.Close()
	if err := c.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&out.JournalMode); err != nil {
		return out, fmt.Errorf("read journal mode of %s: %w", src, err)
	}
	if quiet {
		out.JournalMode = "wal" // an immutable connection reports "delete"
	}
	if err := c.QueryRowContext(ctx, "PRAGMA user_version").Scan(&out.UserVersion); err != nil {
		return out, fmt.Errorf("read user_version of %s: %w", src, err)
	}
	before, err := counts(ctx, c)
	if err != nil {
		return out, fmt.Errorf("count rows of %s: %w", src, err)
	}
	if _, err := c.ExecContext(ctx, "VACUUM INTO ?", dst); err != nil {
		return out, fmt.Errorf("copy %s (VACUUM INTO): %w", src, err)
	}
	after, err := counts(ctx, c)
	if err != nil {
		return out, fmt.Errorf("count rows of %s: %w", src, err)
	}
	for _, t := range before {
		out.Tables = append(out.Tables, TableCount{Name: t.Name, From: t.From})
	}
	if fmt.Sprint(before) != fmt.Sprint(after) {
		return out, fmt.Errorf("%s changed while it was copied: a writer the guard did not see is using it", src)
	}
	if quiet {
		if err := unchangedSince(src, srcInfo); err != nil {
			return out, err
		}
	}
	if out.JournalMode == "wal" {
		ddb, dc, err := open(ctx, dst, "rw")
		if err != nil {
			return out, err
		}
		var m string
		err = dc.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&m)
		dc.Close()
		ddb.Close()
		if err != nil {
			return out, fmt.Errorf("set WAL on %s: %w", dst, err)
		}
	}
	return out, nil
}

// counts returns every table's row count, by name.
func counts(ctx context.Context, c *sql.Conn) ([]TableCount, error) {
	rows, err := c.QueryContext(ctx, "SELECT name FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name")
	if err != nil {
		return nil, err
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, err
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []TableCount
	for _, n := range names {
		var k int64
		if err := c.QueryRowContext(ctx, `SELECT count(*) FROM "`+strings.ReplaceAll(n, `"`, `""`)+`"`).Scan(&k); err != nil {
			return nil, fmt.Errorf("count %s: %w", n, err)
		}
		out = append(out, TableCount{Name: n, From: k})
	}
	return out, nil
}

// copyFile copies a regular file to rel in root (O_EXCL: an entry there,
// a symlink included, is an error) and returns its size and SHA-256. It
// stops with ctx's error when ctx ends.
func copyFile(ctx context.Context, src string, root *os.Root, rel string, fi fs.FileInfo) (File, error) {
	in, err := rawfile.Open(src, true)
	if err != nil {
		return File{}, err
	}
	defer in.Close()
	out, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return File{}, fmt.Errorf("create %s: %w", filepath.Join(root.Name(), rel), err)
	}
	n, sum, err := copySparse(ctx, in, out)
	if err != nil {
		out.Close()
		return File{}, fmt.Errorf("copy %s: %w", src, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return File{}, err
	}
	if err := out.Close(); err != nil {
		return File{}, err
	}
	return File{Size: n, SHA256: sum}, nil
}

// copySparse copies in to out: the regions that hold data at their
// offsets (rawfile.CopyData), so that a hole stays a hole (a file its
// owner extended to a TiB with truncate is not written out as zeros),
// then what was appended since in was stated. It returns the length
// copied and the SHA-256 of the content, holes read as zeros; it stops
// with ctx's error when ctx ends.
func copySparse(ctx context.Context, in, out *os.File) (int64, string, error) {
	st, err := in.Stat()
	if err != nil {
		return 0, "", err
	}
	h := sha256.New()
	var hashed int64
	zeros := make([]byte, 64<<10)
	fill := func(to int64) error { // the hole before to, as zeros
		for hashed < to {
			if err := ctx.Err(); err != nil {
				return err
			}
			k := min(to-hashed, int64(len(zeros)))
			h.Write(zeros[:k])
			hashed += k
		}
		return nil
	}
	n, err := rawfile.CopyData(in, out, st.Size(), make([]byte, 1<<20), func(off int64, data []byte) error {
		if err := fill(off); err != nil {
			return err
		}
		h.Write(data)
		hashed += int64(len(data))
		return nil
	})
	if err == nil && n == st.Size() {
		if err = fill(n); err == nil {
			var more int64
			more, err = io.Copy(io.MultiWriter(io.NewOffsetWriter(out, n), h), ctxReader{ctx, io.NewSectionReader(in, n, 1<<62)})
			n, hashed = n+more, hashed+more
		}
	}
	if err == nil {
		err = fill(n)
	}
	if err == nil {
		err = out.Truncate(n)
	}
	return n, hex.EncodeToString(h.Sum(nil)), err
}

// openSource opens a file of From again to verify its copy: whoever owns
// From may have replaced it since, so a FIFO or device in its place is an
// error (it does not match), never an open that blocks.
func openSource(p string) (*os.File, error) { return rawfile.Open(p, true) }

// ctxReader is r that fails with ctx's error once ctx ended.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// hashFile returns the size and SHA-256 of the file p that open opens,
// stopping with ctx's error when ctx ends.
func hashFile(ctx context.Context, open func(string) (*os.File, error), p string) (int64, string, error) {
	f, err := open(p)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, ctxReader{ctx, f})
	return n, hex.EncodeToString(h.Sum(nil)), err
}

// verify checks every copied database and file.
func verify(ctx context.Context, res *Result, from string, root *os.Root) error {
	to := root.Name()
	var bad []string
	for i := range res.Databases {
		d := &res.Databases[i]
		// A read-only connection to a WAL copy leaves an empty -wal and a
		// -shm behind when it closes; a read-write one, the last to
		// close, removes them, so the copy is one clean file.
		mode := "ro"
		if d.JournalMode == "wal" {
			mode = "rw"
		}
		db, c, err := open(ctx, filepath.Join(to, d.Path), mode)
		if err != nil {
			return err
		}
		err = func() error {
			defer db.Close()
			defer c.Close()
			if err := c.QueryRowContext(ctx, "PRAGMA quick_check").Scan(&d.QuickCheck); err != nil {
				return fmt.Errorf("quick_check %s: %w", d.Path, err)
			}
			got, err := counts(ctx, c)
			if err != nil {
				return fmt.Errorf("count rows of the copy of %s: %w", d.Path, err)
			}
			var uv int64
			if err := c.QueryRowContext(ctx, "PRAGMA user_version").Scan(&uv); err != nil {
				return err
			}
			ok := d.QuickCheck == "ok" && len(got) == len(d.Tables) && uv == d.UserVersion
			for j := range d.Tables {
				if j < len(got) && got[j].Name == d.Tables[j].Name {
					d.Tables[j].To = got[j].From
				}
				ok = ok && d.Tables[j].To == d.Tables[j].From
			}
			d.Verified = ok
			if !ok {
				bad = append(bad, fmt.Sprintf("database %s (quick_check %q, rows %v)", d.Path, d.QuickCheck, d.Tables))
			}
			return nil
		}()
		if err != nil {
			return err
		}
	}
	for i := range res.Files {
		f := &res.Files[i]
		n, h, err := hashFile(ctx, root.Open, f.Path)
		if err != nil {
			return fmt.Errorf("verify %s: %w", f.Path, err)
		}
		f.Verified = n == f.Size && h == f.SHA256
		if sn, sh, err := hashFile(ctx, openSource, filepath.Join(from, f.Path)); err != nil || sn != n || sh != h {
			f.Verified = false
		}
		if !f.Verified {
			bad = append(bad, "file "+f.Path)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s", ErrVerify, strings.Join(bad, "; "))
	}
	return nil
}

// unverified says which live-writer probes could not vouch for the
// source's databases: an idle connection to a rollback-mode database holds
// no lock, so only the process scan and the Docker API can see it.
func unverified(rep *preflight.Report) string {
	var why []string
	seen := map[string]bool{}
	for _, d := range rep.DataDirs {
		for _, db := range d.Databases {
			p := db.WriterProbes
			if p.Processes != "" && p.Processes != "ran" && !seen["processes"] {
				seen["processes"] = true
				why = append(why, "processes: "+string(p.Processes))
			}
			if p.Docker != "" && p.Docker != docker.StatusRan && p.Docker != docker.StatusNoDaemon && !seen["docker"] {
				seen["docker"] = true
				why = append(why, "containers: Docker "+string(p.Docker))
			}
		}
	}
	if len(why) == 0 {
		return ""
	}
	return "writers could not be ruled out (" + strings.Join(why, ", ") + ")"
}

// emptyDir removes everything inside root, keeping root itself
// (os.Root.RemoveAll: nothing outside root is followed or removed).
func emptyDir(root *os.Root) {
	names, err := readNames(root, ".")
	if err != nil {
		return
	}
	for _, n := range names {
		root.RemoveAll(n)
	}
}

// readNames returns the names in the directory rel of root.
func readNames(root *os.Root, rel string) ([]string, error) {
	f, err := root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// openDest creates to when missing and opens it as an os.Root, which
// every later step inside it goes through: a directory its owner swaps
// for a symlink during the copy cannot take a file, a change of owner or
// mode, or a removal outside it. The directory opened must be the one
// to resolves to (device and inode), and still not overlap from.
func openDest(from, to string, opts Options) (*os.Root, error) {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", opts.To, err)
	}
	rt, err := checkOverlap(from, to, opts.From, opts.To)
	if err != nil {
		return nil, err
	}
	want, err := os.Lstat(rt)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", opts.To, err)
	}
	root, err := os.OpenRoot(rt)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", opts.To, err)
	}
	if got, err := root.Stat("."); err != nil || !os.SameFile(got, want) {
		root.Close()
		return nil, fmt.Errorf("%w: --to %s changed while it was opened", ErrRefused, opts.To)
	}
	return root, nil
}
