// Package testdb makes real SQLite databases for tests with the pure-Go
// driver github.com/glebarez/go-sqlite.
package testdb

import (
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"testing"

	_ "github.com/glebarez/go-sqlite" // registers driver "sqlite"
)

// DSN returns a file: URI for path with the given query parameters (for
// example "_pragma=journal_mode(WAL)"). Without the file: prefix the driver
// drops URI parameters; the path is escaped so ?, # and % survive.
func DSN(path string, params ...string) string {
	u := url.URL{Scheme: "file", Path: path}
	s := u.String()
	if len(params) > 0 {
		s += "?"
		for i, p := range params {
			if i > 0 {
				s += "&"
			}
			s += p
		}
	}
	return s
}

// Open opens path read-write with journal mode mode ("wal" or "delete"),
// creating table t(id integer primary key, v text) with rows rows. The
// caller closes the returned connection (closing the last WAL connection
// removes -wal and -shm).
func Open(t testing.TB, path, mode string, rows int) *sql.DB {
	t.Helper()
	db, err := open(path, mode, rows)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// Make creates a database at path in journal mode mode with rows rows and
// closes it.
func Make(t testing.TB, path, mode string, rows int) {
	t.Helper()
	if err := Create(path, mode, rows); err != nil {
		t.Fatal(err)
	}
}

// Create is Make for callers without a testing.TB (a testscript command):
// it returns the error instead of failing the test.
func Create(path, mode string, rows int) error {
	db, err := open(path, mode, rows)
	if err != nil {
		return err
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}

func open(path, mode string, rows int) (*sql.DB, error) {
	db, err := sql.Open("sqlite", DSN(path, fmt.Sprintf("_pragma=journal_mode(%s)", mode), "_pragma=busy_timeout(2000)"))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`create table if not exists t(id integer primary key, v text)`); err != nil {
		db.Close()
		return nil, fmt.Errorf("create table in %s: %w", path, err)
	}
	for i := 0; i < rows; i++ {
		if _, err := db.Exec(`insert into t(v) values (?)`, fmt.Sprintf("row %d", i)); err != nil {
			db.Close()
			return nil, fmt.Errorf("insert into %s: %w", path, err)
		}
	}
	var got string
	if err := db.QueryRow(`pragma journal_mode`).Scan(&got); err != nil || got != mode {
		db.Close()
		return nil, fmt.Errorf("journal_mode of %s = %q (%v), want %q", path, got, err, mode)
	}
	return db, nil
}

// NeedFUSE skips the test unless this process can mount FUSE filesystems:
// root and a usable /dev/fuse. Under CI=true or PREFLIGHT_REQUIRE_DOCKER=1
// it fails instead: CI must run every FUSE test.
func NeedFUSE(t testing.TB) {
	t.Helper()
	why := FUSEMissing()
	if why == "" {
		return
	}
	if Required() {
		t.Fatalf("FUSE test (CI=true or PREFLIGHT_REQUIRE_DOCKER=1): %s", why)
	}
	t.Skip("FUSE test skipped: " + why)
}

// FUSEMissing says why this process cannot mount FUSE filesystems (not
// root, no usable /dev/fuse), or returns "" when it can.
func FUSEMissing() string {
	if os.Geteuid() != 0 {
		return "needs root to mount"
	}
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Sprintf("needs a usable /dev/fuse: %v", err)
	}
	f.Close()
	return ""
}

// Required reports whether tests that need root, FUSE or Docker must fail
// instead of skipping: CI=true or PREFLIGHT_REQUIRE_DOCKER=1.
func Required() bool {
	return os.Getenv("CI") == "true" || os.Getenv("PREFLIGHT_REQUIRE_DOCKER") == "1"
}
