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

	sqlite3 "modernc.org/sqlite/lib"

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
// conversion (open to mode change) and the verification took. When ctx
// ends during the verification, the Verified returned says so
// (Interrupted): the mode change before it is done. Every error leaves
// the database's content as it was (a checkpoint only copies committed pages
// into the database file); an error before "PRAGMA journal_mode" leaves it in
// its old mode.
func convertDB(ctx context.Context, path string, opts Options, d *Database) (*Checkpoint, *Verified, error) {
	start := time.Now()
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, err
	}
	before, ck, heap, err := changeMode(ctx, path, abs, opts)
	if err != nil {
		return ck, nil, err
	}
	if heap {
		d.Notes = append(d.Notes, "the filesystem refused the -shm's shared memory (SQLite said \"disk I/O error\"): converted with locking_mode=EXCLUSIVE, which keeps the WAL index in this process's memory")
		// SQLite removes the -shm itself when the last connection leaves
		// WAL mode; with the WAL index in heap memory it never opened
		// the one the failed first open left (or the application's), and
		// in DELETE mode with no -wal nothing reads it.
		if err := os.Remove(abs + "-shm"); err != nil && !errors.Is(err, os.ErrNotExist) {
			return ck, nil, fmt.Errorf("remove %s-shm: %w", path, err)
		}
	}
	d.Conversion = time.Since(start)
	if opts.Progress != nil {
		opts.Progress(path, "verify", 0, 0)
	}
	start = time.Now()
	v := &Verified{Check: "quick_check", JournalMode: opts.To}
	if opts.Verify == VerifyFull {
		v.Check = "integrity_check"
	}
	err = verify(ctx, path, abs, opts.To, before, v)
	v.Duration = time.Since(start)
	if err != nil && ctx.Err() != nil {
		v.Interrupted = true
	}
	if v.CheckResult != "ok" && err == nil {
		d.Notes = append(d.Notes, v.Check+" "+v.CheckResult)
	}
	return ck, v, err
}

// changeMode opens one connection to abs, reads every table's row count,
// checkpoints and changes the journal mode to opts.To, reads the mode back
// and closes the connection. When SQLite cannot map the -shm (see
// shmUnavailable) and the target is DELETE, it opens the database again
// with locking_mode=EXCLUSIVE set before the first read: SQLite then keeps
// the WAL index in heap memory and never maps the -shm
// (https://sqlite.org/wal.html#noshm); heap reports that.
func changeMode(ctx context.Context, path, abs string, opts Options) (before []TableCount, ck *Checkpoint, heap bool, err error) {
	db, conn, mode, err := openConversion(ctx, path, abs, false)
	if shmUnavailable(err) && opts.To == ToDelete {
		heap = true
		db, conn, mode, err = openConversion(ctx, path, abs, true)
	}
	if err != nil {
		return nil, nil, heap, err
	}
	defer db.Close()
	defer conn.Close()
	progress := func(stage string) {
		if opts.Progress != nil {
			opts.Progress(path, stage, 0, 0)
		}
	}
	if opts.To == ToDelete && mode == "wal" {
		progress("checkpoint")
		before, ck, err = checkpointAll(ctx, conn, path, abs, heap)
		if err != nil {
			return nil, ck, heap, err
		}
	} else if before, err = countRows(ctx, conn); err != nil {
		return nil, nil, heap, err
	}
	progress("convert")
	if err := setMode(ctx, conn, path, strings.ToUpper(opts.To), opts.To); err != nil {
		return nil, ck, heap, err
	}
	var got string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&got); err != nil {
		return nil, ck, heap, sqlErr("read journal mode of "+path, err)
	}
	if got != opts.To {
		return nil, ck, heap, fmt.Errorf("%s: journal mode reads %q after the change, want %q", path, got, opts.To)
	}
	if err := conn.Close(); err != nil {
		return nil, ck, heap, fmt.Errorf("close %s: %w", path, err)
	}
	if err := db.Close(); err != nil {
		return nil, ck, heap, fmt.Errorf("close %s: %w", path, err)
	}
	return before, ck, heap, nil
}

// openConversion opens the conversion's one connection to abs and reads
// the journal mode (the first read, which opens the WAL and its index). With
// exclusive, locking_mode=EXCLUSIVE is set before that read. On error
// nothing is left open.
func openConversion(ctx context.Context, path, abs string, exclusive bool) (*sql.DB, *sql.Conn, string, error) {
	dsn := DSN(abs)
	if exclusive {
		dsn += "&_pragma=locking_mode(EXCLUSIVE)"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, nil, "", fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, nil, "", sqlErr("open "+path, err)
	}
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		conn.Close()
		db.Close()
		return nil, nil, "", sqlErr("read journal mode of "+path, err)
	}
	return db, conn, mode, nil
}

// checkpointAll copies the whole WAL into the database file on conn with
// wal_checkpoint(FULL), counting every table's rows (beside it on a second
// connection, or first on conn itself when heap: no other connection can
// read then), then wal_checkpoint(TRUNCATE). A checkpoint that could not
// copy every frame is ErrLocked.
func checkpointAll(ctx context.Context, conn *sql.Conn, path, abs string, heap bool) ([]TableCount, *Checkpoint, error) {
	var before []TableCount
	var c *Checkpoint
	var err error
	if heap {
		if before, err = countRows(ctx, conn); err == nil {
			var full Checkpoint
			full, err = checkpoint(ctx, conn, "FULL")
			c = &full
		}
	} else {
		before, c, err = countWhileCheckpointing(ctx, conn, abs)
	}
	switch {
	case c == nil || err != nil:
	case c.Log < 0:
		// SQLite reports -1 frames when it could not even start.
		err = fmt.Errorf("checkpoint %s: busy, not started: another connection is using the database: %w", path, ErrLocked)
	case c.Busy != 0 || c.Log != c.Checkpointed:
		err = fmt.Errorf("checkpoint %s: busy, %d of %d frames copied: another connection is using the database: %w", path, c.Checkpointed, c.Log, ErrLocked)
	}
	if err != nil {
		return nil, c, err
	}
	t, err := checkpoint(ctx, conn, "TRUNCATE")
	if err != nil {
		return nil, c, err
	}
	if t.Busy != 0 {
		return nil, c, fmt.Errorf("checkpoint(TRUNCATE) %s: busy: %w", path, ErrLocked)
	}
	return before, c, nil
}

// verify fills v after the conversion's connection closed: the integrity
// check and every table's row count, on fresh read-only connections side
// by side (they read what is on disk), then the header bytes and the
// sidecars. A check that needs a function, collation or virtual-table
// module only the application defines (missingDefinition) is "not run"
// with the reason, not an error: the conversion does not use them.
func verify(ctx context.Context, path, abs, want string, before []TableCount, v *Verified) error {
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
	if def, ok := missingDefinition(ctx, checkErr); ok {
		v.CheckResult = "not run: " + def.String()
		res, checkErr = "ok", nil
	}
	if checkErr != nil {
		return fmt.Errorf("%s on %s: %w", v.Check, path, checkErr)
	}
	if res != "ok" {
		return fmt.Errorf("%s on %s after the conversion: %s", v.Check, path, res)
	}
	if countErr != nil {
		return countErr
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
			return fmt.Errorf("%s: table %s had %d rows before the conversion and %d after", path, tc.Table, tc.Before, tc.After)
		}
	}
	return verifyFile(path, want, v)
}

// verifyFile checks the file itself after the last connection closed:
// header bytes 18/19 and, for DELETE, no -wal or -shm.
func verifyFile(path, want string, v *Verified) error {
	h, err := sqlitefile.Inspect(path)
	if err != nil {
		return fmt.Errorf("verify header: %w", err)
	}
	v.WriteVersion, v.ReadVersion = int(h.Header.WriteVersion), int(h.Header.ReadVersion)
	wantV := 1
	if want == ToWAL {
		wantV = 2
	}
	if v.WriteVersion != wantV || v.ReadVersion != wantV {
		return fmt.Errorf("%s: header bytes 18/19 are %d/%d after the conversion, want %d/%d", path, v.WriteVersion, v.ReadVersion, wantV, wantV)
	}
	_, werr := os.Lstat(path + "-wal")
	_, serr := os.Lstat(path + "-shm")
	v.SidecarsGone = errors.Is(werr, os.ErrNotExist) && errors.Is(serr, os.ErrNotExist)
	if want == ToDelete && !v.SidecarsGone {
		return fmt.Errorf("%s: -wal or -shm still exists after the conversion", path)
	}
	return nil
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

// sqlErr wraps err; "database is locked" (SQLITE_BUSY and its extended
// codes) also wraps ErrLocked.
func sqlErr(what string, err error) error {
	if sqliteCode(err)&0xff == sqlite3.SQLITE_BUSY {
		return fmt.Errorf("%s: %w (%w)", what, ErrLocked, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// verification says how far the verification of a conversion whose
// journal mode change is done got before ctx ended: v is what convertDB
// returned (nil: it did not start).
func verification(v *Verified) string {
	if v == nil {
		return "its verification did not run"
	}
	return "its verification was cut short and did not finish"
}
