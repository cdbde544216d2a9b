package sqlitefile

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/preflight-sqlite/preflight/internal/rawfile"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Sidecar describes a -wal, -shm or -journal file beside a database
// (https://sqlite.org/tempfiles.html). It is only stat'ed, never opened.
type Sidecar struct {
	// Exists reports whether the file exists (symlinks followed).
	Exists bool `json:"exists"`
	// SizeBytes is the file size in bytes; 0 when absent.
	SizeBytes int64 `json:"size_bytes"`
	// Dev and Ino are the device and inode numbers; 0 when absent or on
	// systems without them.
	Dev, Ino uint64 `json:"-"`
	// Type names what the file is when it is not a regular file
	// (rawfile.TypeName: "fifo", "socket", "device", "directory"); empty
	// for a regular file or an absent one. SQLite cannot use such a
	// sidecar, and a blocking open of a FIFO never returns.
	Type string `json:"type,omitempty"`
}

// Database is what Inspect learned about one database file and its sidecars.
type Database struct {
	// Path is the path as given or found, cleaned with filepath.Clean but not
	// symlink-resolved.
	Path string `json:"path"`
	// SizeBytes is the size of the database file in bytes.
	SizeBytes int64 `json:"size_bytes"`
	// New reports a missing or zero-length file, which SQLite treats as a
	// new, empty database.
	New bool `json:"new,omitempty"`
	// NotSQLite reports a file whose first bytes are not a SQLite header
	// (bad header string, or a truncated header). Err says which.
	NotSQLite bool `json:"not_sqlite,omitempty"`
	// Format is what the first bytes of a NotSQLite file look like (zeros,
	// a truncated SQLite header, another program's format); empty unless
	// NotSQLite.
	Format Format `json:"format,omitempty"`
	// Err is why the file could not be read or parsed, e.g.
	// "open /data/app.db: permission denied" or
	// "read header /data/app.db: truncated header: 50 of 100 bytes".
	// Empty on success. It is the text of the error Inspect returned.
	Err string `json:"error,omitempty"`
	// Header is the parsed header; nil when New, NotSQLite or unreadable.
	Header *Header `json:"header,omitempty"`
	// JournalMode is Header.JournalMode(); empty when Header is nil.
	JournalMode JournalMode `json:"journal_mode"`
	// PageSize is Header.PageSize in bytes; 0 when Header is nil.
	PageSize int `json:"page_size,omitempty"`
	// WAL is the path+"-wal" write-ahead log (https://sqlite.org/wal.html).
	WAL Sidecar `json:"wal"`
	// SHM is the path+"-shm" wal-index (https://sqlite.org/walformat.html).
	SHM Sidecar `json:"shm"`
	// Journal is the path+"-journal" rollback journal; one that exists
	// beside a rollback-mode database may be hot
	// (https://sqlite.org/lockingv3.html#hot_journals).
	Journal Sidecar `json:"journal"`
	// Dev and Ino are the device and inode numbers of the database file; 0
	// when New, unreadable or on systems without them.
	Dev, Ino uint64 `json:"-"`
}

// Inspect reads the header of the database file at path (HeaderSize bytes at
// most, whatever the file size) and stats its sidecars path+"-wal",
// path+"-shm" and path+"-journal". It opens the file read-only and writes,
// creates and locks nothing; see the package comment on POSIX locks.
//
// A missing or zero-length file is reported as New with a nil error; its
// sidecars are still reported. Otherwise Inspect returns a Database
// describing as much as it learned, and a non-nil error (whose text is also in
// Database.Err) when:
//   - the file cannot be opened, stat'ed or read, or is not a regular file
//     (the os error, e.g. "open /data/app.db: permission denied");
//   - the header is not SQLite or is short: NotSQLite is set and the error
//     wraps ErrNotSQLite or ErrTruncated;
//   - a sidecar exists but cannot be stat'ed (other than "does not exist").
func Inspect(path string) (Database, error) {
	if path == "" {
		err := errors.New("inspect database: empty path")
		return Database{Err: err.Error()}, err
	}
	db, _, err := inspect(filepath.Clean(path), false)
	return db, err
}

// inspect implements Inspect. With sniff set, path is a file found by a
// directory walk that has no database-like name: it is a database only if its
// first magicSize bytes are the header string, and found reports whether it
// is. Without sniff, found is always true.
func inspect(path string, sniff bool) (db Database, found bool, err error) {
	db.Path = path
	found = !sniff
	defer func() {
		if !found {
			return
		}
		if serr := statSidecars(&db); err == nil {
			err = serr
		}
		if err != nil {
			db.Err = err.Error()
		}
	}()

	f, err := openRead(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !sniff {
			db.New = true
			return db, found, nil
		}
		if fi, serr := os.Stat(path); serr == nil {
			db.SizeBytes = fi.Size()
		}
		return db, found, err
	}
	defer f.Close()

	fi, err := f.Stat()
	if err != nil {
		return db, found, err
	}
	if !fi.Mode().IsRegular() {
		return db, found, &fs.PathError{Op: "inspect", Path: path, Err: fmt.Errorf("not a regular file (mode %v)", fi.Mode().Type())}
	}
	db.SizeBytes = fi.Size()
	if sniff && db.SizeBytes < int64(magicSize) {
		return db, false, nil
	}
	if !sniff && db.SizeBytes == 0 {
		db.New = true
		return db, found, nil
	}
	db.Dev, db.Ino, _ = fileID(fi)

	var buf [HeaderSize]byte
	n := 0
	if sniff {
		n, err = f.ReadAt(buf[:magicSize], 0)
		if err != nil && err != io.EOF {
			return db, false, &fs.PathError{Op: "read header", Path: path, Err: err}
		}
		if !bytes.Equal(buf[:n], []byte(Magic)) {
			return db, false, nil
		}
		found = true
	}
	m, err := f.ReadAt(buf[n:], int64(n))
	n += m
	if err != nil && err != io.EOF {
		return db, found, &fs.PathError{Op: "read header", Path: path, Err: err}
	}
	if n == 0 {
		// The file was truncated to zero after the stat.
		db.New = true
		return db, found, nil
	}
	h, err := ParseHeader(buf[:n])
	if err != nil {
		db.NotSQLite = true
		db.Format = SniffFormat(buf[:n])
		return db, found, &fs.PathError{Op: "read header", Path: path, Err: err}
	}
	db.Header = &h
	db.JournalMode = h.JournalMode()
	db.PageSize = h.PageSize
	return db, found, nil
}

// statSidecars fills db's WAL, SHM and Journal from os.Stat. It returns the
// first error other than "does not exist".
func statSidecars(db *Database) error {
	var first error
	for _, s := range []struct {
		suffix string
		dst    *Sidecar
	}{
		{"-wal", &db.WAL},
		{"-shm", &db.SHM},
		{"-journal", &db.Journal},
	} {
		fi, err := os.Stat(db.Path + s.suffix)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) && first == nil {
				first = err
			}
			continue
		}
		s.dst.Exists = true
		if !fi.Mode().IsRegular() {
			s.dst.Type = rawfile.TypeName(fi.Mode())
		}
		s.dst.SizeBytes = fi.Size()
		s.dst.Dev, s.dst.Ino, _ = fileID(fi)
	}
	return first
}
