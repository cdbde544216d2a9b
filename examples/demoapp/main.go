// Command demoapp is the example application that preflight guards in
// examples/Dockerfile. It opens $DATA_DIR/app.db (default /data/app.db) with
// the pure-Go SQLite driver, creates table events, and inserts one row every
// DEMO_INTERVAL (default 1s) until SIGTERM or SIGINT.
//
// It follows preflight's recommendation: the journal mode is WAL unless
// DEMO_JOURNAL_MODE, or else PREFLIGHT_JOURNAL_MODE, names another mode
// (preflight run sets PREFLIGHT_JOURNAL_MODE=delete on unsafe filesystems).
//
// Environment:
//
//	DATA_DIR         directory holding app.db (default /data)
//	DEMO_INTERVAL    time between inserts, a Go duration (default 1s)
//	DEMO_ROWS        if set to N > 0: insert N rows at once, then exit 0
//	DEMO_EXIT_CODE   exit code after SIGTERM/SIGINT (default 0)
//
// Output, one line each on stdout: "demoapp: pid=<pid> journal_mode=<mode>
// db=<path>" at start, "demoapp: insert id=<id>" per row, and
// "demoapp: got terminated" on SIGTERM/SIGINT.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	_ "github.com/glebarez/go-sqlite"
)

func main() {
	code, err := run()
	if err != nil {
		fmt.Fprintf(os.Stderr, "demoapp: error: %v\n", err)
		code = 1
	}
	os.Exit(code)
}

// run returns the exit code asked for by DEMO_EXIT_CODE after a signal,
// or 0 once DEMO_ROWS rows are in.
func run() (int, error) {
	dir := envOr("DATA_DIR", "/data")
	mode := envOr("DEMO_JOURNAL_MODE", envOr("PREFLIGHT_JOURNAL_MODE", "wal"))
	interval, err := time.ParseDuration(envOr("DEMO_INTERVAL", "1s"))
	if err != nil {
		return 0, fmt.Errorf("parse DEMO_INTERVAL: %w", err)
	}
	rows, err := strconv.Atoi(envOr("DEMO_ROWS", "0"))
	if err != nil {
		return 0, fmt.Errorf("parse DEMO_ROWS: %w", err)
	}
	exitCode, err := strconv.Atoi(envOr("DEMO_EXIT_CODE", "0"))
	if err != nil {
		return 0, fmt.Errorf("parse DEMO_EXIT_CODE: %w", err)
	}

	// Catch signals before anything slow, so an early SIGTERM is not lost.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)

	path := filepath.Join(dir, "app.db")
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=busy_timeout(5000)&_pragma=journal_mode(" + url.QueryEscape(mode) + ")"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)

	ctx := context.Background()
	var got string
	if err := db.QueryRowContext(ctx, "pragma journal_mode").Scan(&got); err != nil {
		return 0, fmt.Errorf("read journal mode of %s: %w", path, err)
	}
	if _, err := db.ExecContext(ctx, "create table if not exists events(id integer primary key, at text, note text)"); err != nil {
		return 0, fmt.Errorf("create table: %w", err)
	}
	fmt.Printf("demoapp: pid=%d journal_mode=%s db=%s\n", os.Getpid(), got, path)
	if class := os.Getenv("PREFLIGHT_FS_CLASS"); class != "" {
		fmt.Printf("demoapp: preflight fs_class=%s journal_mode=%s\n", class, os.Getenv("PREFLIGHT_JOURNAL_MODE"))
	}

	insert := func(note string) error {
		res, err := db.ExecContext(ctx, "insert into events(at, note) values(?, ?)",
			time.Now().UTC().Format(time.RFC3339Nano), note)
		if err != nil {
			return fmt.Errorf("insert: %w", err)
		}
		id, _ := res.LastInsertId()
		fmt.Printf("demoapp: insert id=%d\n", id)
		return nil
	}

	if rows > 0 {
		for i := 0; i < rows; i++ {
			if err := insert("seed"); err != nil {
				return 0, err
			}
		}
		return 0, db.Close()
	}

	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-sigs:
			if err := db.Close(); err != nil {
				return 0, fmt.Errorf("close %s: %w", path, err)
			}
			fmt.Println("demoapp: got terminated")
			return exitCode, nil
		case <-tick.C:
			if err := insert("tick"); err != nil {
				return 0, err
			}
		}
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
