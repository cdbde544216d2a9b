package convert

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "github.com/glebarez/go-sqlite" // registers driver "sqlite"

	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// ErrLocked is returned (wrapped) when another connection kept SQLite from
// checkpointing or changing the journal mode ("database is locked", or a
// checkpoint that reported busy).
var ErrLocked = errors.New("database is locked by another connection")

// busyTimeoutMS is the connection's busy timeout: short, because any wait
// means another connection exists, which the guard said there was not.
const busyTimeoutMS = 1000

// DSN returns the file: URI that opens path read-write without creating it,
// with a short busy timeout. Without the file: prefix the driver cuts the
// query string off and opens read-write-create; "?", "#" and "%" in the path
// are escaped (https://sqlite.org/uri.html).
func DSN(path string) string { return dsnMode(path, "rw") }

// dsnMode is DSN with SQLite's open mode: "rw" or "ro".
func dsnMode(path, mode string) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return fmt.Sprintf("file:%s?mode=%s&_pragma=busy_timeout(%d)", esc, mode, busyTimeoutMS)
}

// convertDB runs the conversion of path to opts.To on one connection and
// verifies it; see the package comment. It records in d how long the
// conversion (open to mode change) and the verification took. Every error leaves
// the database's content as it was (a checkpoint only copies committed pages
// into the database file); an error before "PRAGMA journal_mode" leaves it in
// its old mode.
func convertDB(ctx context.Context, path string, opts Options, d *Database) (*Checkpoint, *Verified, error) {
	start := time.Now()
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, err
	}
	progress := func(stage string) {
		if opts.Progress != nil {
			opts.Progress(path, stage, 0, 0)
		}
	}
	db, err := sql.Open("sqlite", DSN(abs))
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, nil, sqlErr("open "+path, err)
	}
	defer conn.Close()

	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return nil, nil, sqlErr("read journal mode of "+path, err)
	}
	var before []TableCount
	var ck *Checkpoint
	want := opts.To
	if opts.To == ToDelete && mode == "wal" {
		progress("checkpoint")
		b, c, err := countWhileCheckpointing(ctx, conn, abs)
		switch {
		case c == nil || err != nil:
		case c.Log < 0:
			// SQLite reports -1 frames when it could not even start.
			err = fmt.Errorf("checkpoint %s: busy, not started: another connection is using the database: %w", path, ErrLocked)
		case c.Busy != 0 || c.Log != c.Checkpointed:
			err = fmt.Errorf("checkpoint %s: busy, %d of %d frames copied: another connection is using the database: %w", path, c.Checkpointed, c.Log, ErrLocked)
		}
		if err != nil {
			return c, nil, err
		}
		before, ck = b, c
	} else if before, err = countRows(ctx, conn); err != nil {
		return nil, nil, err
	}

	if opts.To == ToDelete {
		if mode == "wal" {
			t, err := checkpoint(ctx, conn, "TRUNCATE")
			if err != nil {
				return ck, nil, err
			}
			if t.Busy != 0 {
				return ck, nil, fmt.Errorf("checkpoint(TRUNCATE) %s: busy: %w", path, ErrLocked)
			}
		}
		progress("convert")
		if err := setMode(ctx, conn, path, "DELETE", want); err != nil {
			return ck, nil, err
		}
	} else {
		progress("convert")
		if err := setMode(ctx, conn, path, "WAL", want); err != nil {
			return nil, nil, err
		}
	}

	d.Conversion = time.Since(start)
	progress("verify")
	start = time.Now()
	v := &Verified{Check: "quick_check"}
	defer func() { v.Duration = time.Since(start) }()
	if opts.Verify == VerifyFull {
		v.Check = "integrity_check"
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&v.JournalMode); err != nil {
		return ck, v, sqlErr("read journal mode of "+path, err)
	}
	if v.JournalMode != want {
		return ck, v, fmt.Errorf("%s: journal mode reads %q after the change, want %q", path, v.JournalMode, want)
	}
	if err := conn.Close(); err != nil {
		return ck, v, fmt.Errorf("close %s: %w", path, err)
	}
	if err := db.Close(); err != nil {
		return ck, v, fmt.Errorf("close %s: %w", path, err)
	}

	// Fresh read-only connections, now that the conversion's one is
	// closed: the check and the row counts run side by side and read what
	// is on disk.
	var res string
	var after []TableCount
	var checkErr, countErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		checkErr = readOnly(ctx, abs, func(c *sql.Conn) error {
			var err error
			res, err = integrity(ctx, c, v.Check)
			return err
		})
	}()
	go func() {
		defer wg.Done()
		countErr = readOnly(ctx, abs, func(c *sql.Conn) error {
			var err error
			after, err = countRows(ctx, c)
			return err
		})
	}()
	wg.Wait()
	v.CheckResult = res
	if name, ok := missingCollation(checkErr); ok {
		// The check needs every collation the schema names; one that only
		// the application defines cannot be loaded here. The conversion
		// itself does not use it, and the row counts below still run.
		v.CheckResult = fmt.Sprintf("not run: the schema uses collation %s, which only the application defines", name)
		res, checkErr = "ok", nil
	}
	if checkErr != nil {
		return ck, v, fmt.Errorf("%s on %s: %w", v.Check, path, checkErr)
	}
	if res != "ok" {
		return ck, v, fmt.Errorf("%s on %s after the conversion: %s", v.Check, path, res)
	}
	if countErr != nil {
		return ck, v, countErr
	}
	for _, b := range before {
		tc := TableCount{Table: b.Table, Before: b.Before, After: -1}
		for _, a := range after {
			if a.Table == b.Table {
				tc.After = a.Before
			}
		}
		v.Tables = append(v.Tables, tc)
		if tc.After != tc.Before {
			return ck, v, fmt.Errorf("%s: table %s had %d rows before the conversion and %d after", path, tc.Table, tc.Before, tc.After)
		}
	}

	// After the last connection closed: the file itself.
	h, err := sqlitefile.Inspect(path)
	if err != nil {
		return ck, v, fmt.Errorf("verify header: %w", err)
	}
	v.WriteVersion, v.ReadVersion = int(h.Header.WriteVersion), int(h.Header.ReadVersion)
	wantV := 1
	if want == ToWAL {
		wantV = 2
	}
	if v.WriteVersion != wantV || v.ReadVersion != wantV {
		return ck, v, fmt.Errorf("%s: header bytes 18/19 are %d/%d after the conversion, want %d/%d", path, v.WriteVersion, v.ReadVersion, wantV, wantV)
	}
	_, werr := os.Lstat(path + "-wal")
	_, serr := os.Lstat(path + "-shm")
	v.SidecarsGone = errors.Is(werr, os.ErrNotExist) && errors.Is(serr, os.ErrNotExist)
	if want == ToDelete && !v.SidecarsGone {
		return ck, v, fmt.Errorf("%s: -wal or -shm still exists after the conversion", path)
	}
	return ck, v, nil
}

// countWhileCheckpointing counts every table's rows in one read
// transaction on a second, read-only connection while conn copies the WAL
// into the database file with wal_checkpoint(FULL), so the two passes over
// the data overlap. The reader's snapshot is the newest one, which a FULL
// checkpoint does not wait for, and it is the one being converted: the
// guard found no writer, and FULL keeps writers out while it runs. The
// reader is closed before this returns: wal_checkpoint(TRUNCATE) and the
// journal mode change need conn alone. The checkpoint is nil when it did
// not run.
func countWhileCheckpointing(ctx context.Context, conn *sql.Conn, abs string) ([]TableCount, *Checkpoint, error) {
	// A first read on conn builds the wal-index (recovery reads the whole
	// WAL), so the reader does not wait for it within its busy timeout.
	var cookie int64
	if err := conn.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&cookie); err != nil {
		return nil, nil, sqlErr("read "+abs, err)
	}
	var before []TableCount
	var countErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		countErr = withConn(ctx, dsnMode(abs, "ro"), func(c *sql.Conn) error {
			var err error
			before, err = countRows(ctx, c)
			return err
		})
	}()
	c, ckErr := checkpoint(ctx, conn, "FULL")
	<-done
	if ckErr != nil {
		return nil, nil, ckErr
	}
	if countErr != nil {
		return nil, &c, fmt.Errorf("count rows before the conversion: %w", countErr)
	}
	return before, &c, nil
}

// readOnly runs fn on one read-only connection to the database at abs.
// A WAL database is opened read-write instead: a read-only connection
// would leave -wal and -shm behind when it closes.
func readOnly(ctx context.Context, abs string, fn func(*sql.Conn) error) error {
	dsn := dsnMode(abs, "ro")
	if h, err := sqlitefile.Inspect(abs); err == nil && h.JournalMode == sqlitefile.JournalWAL {
		dsn = DSN(abs)
	}
	return withConn(ctx, dsn, fn)
}

// withConn runs fn on one connection opened with dsn, and closes it.
func withConn(ctx context.Context, dsn string, fn func(*sql.Conn) error) error {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	c, err := db.Conn(ctx)
	if err != nil {
		return sqlErr("open read-only", err)
	}
	defer c.Close()
	return fn(c)
}

func checkpoint(ctx context.Context, conn *sql.Conn, mode string) (Checkpoint, error) {
	var c Checkpoint
	err := conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint("+mode+")").Scan(&c.Busy, &c.Log, &c.Checkpointed)
	if err != nil {
		return c, sqlErr("wal_checkpoint("+mode+")", err)
	}
	return c, nil
}

// setMode runs PRAGMA journal_mode=mode, which returns the mode in force
// afterwards: the old one when SQLite could not change it.
func setMode(ctx context.Context, conn *sql.Conn, path, mode, want string) error {
	var got string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode="+mode).Scan(&got); err != nil {
		return sqlErr("PRAGMA journal_mode="+mode+" on "+path, err)
	}
	if got != want {
		return fmt.Errorf("PRAGMA journal_mode=%s on %s returned %q: SQLite kept the old mode", mode, path, got)
	}
	return nil
}

// countRows counts every ordinary table's rows in one read transaction.
// Virtual tables are skipped (their shadow tables are counted).
func countRows(ctx context.Context, conn *sql.Conn) ([]TableCount, error) {
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return nil, sqlErr("begin read transaction", err)
	}
	out, err := countIn(ctx, conn)
	if _, cerr := conn.ExecContext(ctx, "COMMIT"); cerr != nil && err == nil {
		err = sqlErr("end read transaction", cerr)
	}
	return out, err
}

func countIn(ctx context.Context, conn *sql.Conn) ([]TableCount, error) {
	rows, err := conn.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND lower(substr(name, 1, 7)) <> 'sqlite_' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name`)
	if err != nil {
		return nil, sqlErr("read schema", err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, sqlErr("read schema", err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return nil, sqlErr("read schema", err)
	}
	rows.Close()
	out := []TableCount{}
	for _, n := range names {
		var c int64
		q := `SELECT count(*) FROM "` + strings.ReplaceAll(n, `"`, `""`) + `"`
		if err := conn.QueryRowContext(ctx, q).Scan(&c); err != nil {
			return nil, sqlErr("count rows of "+n, err)
		}
		out = append(out, TableCount{Table: n, Before: c})
	}
	return out, nil
}

// missingCollation reports whether err is SQLite's "no such collation
// sequence: NAME", and NAME.
func missingCollation(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	_, name, ok := strings.Cut(err.Error(), "no such collation sequence: ")
	if !ok {
		return "", false
	}
	if i := strings.IndexAny(name, " ("); i > 0 {
		name = name[:i]
	}
	return name, true
}

// integrity runs PRAGMA quick_check or integrity_check and returns its rows
// joined by "; " ("ok" when clean).
func integrity(ctx context.Context, conn *sql.Conn, pragma string) (string, error) {
	rows, err := conn.QueryContext(ctx, "PRAGMA "+pragma)
	if err != nil {
		return "", sqlErr(pragma, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return strings.Join(out, "; "), sqlErr(pragma, err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return strings.Join(out, "; "), sqlErr(pragma, err)
	}
	return strings.Join(out, "; "), nil
}

// sqlErr wraps err; "database is locked" (SQLITE_BUSY, code 5) also wraps
// ErrLocked.
func sqlErr(what string, err error) error {
	if strings.Contains(err.Error(), "database is locked") || strings.Contains(err.Error(), "(5)") {
		return fmt.Errorf("%s: %w (%w)", what, ErrLocked, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
