// Package sqlitefile finds SQLite databases in data directories and reads
// their 100-byte database header without opening a SQLite connection.
//
// The header layout is specified in "Database File Format", section 1.3
// "The Database Header" (https://sqlite.org/fileformat2.html#the_database_header).
// All multi-byte header fields are big-endian.
//
// The package only reads: it never creates, writes, truncates, locks or
// deletes a file. It reads at most [HeaderSize] bytes of a database file and
// only stats the -wal, -shm and -journal sidecar files, so the cost of
// inspecting a database does not depend on its size.
//
// Callers must not use [Inspect] or [Discover] inside a process that holds
// open SQLite connections to the inspected files: closing any file descriptor
// of a file drops every POSIX advisory lock the process holds on it, including
// SQLite's (https://sqlite.org/howtocorrupt.html#posix_close_bug). Run the
// probe before opening SQLite, or in another process.
package sqlitefile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// HeaderSize is the size in bytes of the SQLite database header
// (https://sqlite.org/fileformat2.html#the_database_header).
const HeaderSize = 100

// Magic is the 16-byte header string at offset 0 of every SQLite 3
// database (https://sqlite.org/fileformat2.html#magic_header_string).
const Magic = "SQLite format 3\x00"

// magicSize is the length of Magic; sniffing a file for SQLite reads this
// many bytes.
const magicSize = len(Magic)

// Byte offsets of the database file that SQLite's unix VFS takes its POSIX
// locks on, all in the lock-byte page, which holds no data
// (https://sqlite.org/fileformat2.html#the_lock_byte_page,
// https://sqlite.org/lockingv3.html; os_unix.c: PENDING_BYTE,
// RESERVED_BYTE, SHARED_FIRST, SHARED_SIZE).
const (
	// PendingByte is taken by a writer waiting for readers to leave.
	PendingByte = 0x40000000
	// ReservedByte is held by the connection that intends to write.
	ReservedByte = PendingByte + 1
	// SharedFirst is the first of the SharedSize bytes readers lock.
	SharedFirst = PendingByte + 2
	// SharedSize is the length of the shared range in bytes.
	SharedSize = 510
)

var (
	// ErrNotSQLite reports that the first bytes of a file are not the SQLite 3
	// header string "SQLite format 3\x00".
	ErrNotSQLite = errors.New("not a SQLite database")
	// ErrTruncated reports a file that starts like a SQLite database (or is
	// too short to tell) but holds fewer than HeaderSize bytes.
	ErrTruncated = errors.New("truncated header")
)

// JournalMode is the journalling family recorded in the header's file format
// version numbers (bytes 18 and 19, https://sqlite.org/fileformat2.html#vnums).
// It tells rollback journalling (DELETE, TRUNCATE, PERSIST, MEMORY, OFF) apart
// from WAL; it cannot tell the rollback modes apart from each other.
type JournalMode string

const (
	// JournalRollback: bytes 18 and 19 are both 1 (legacy rollback journal).
	JournalRollback JournalMode = "rollback"
	// JournalWAL: bytes 18 and 19 are both 2 (write-ahead log,
	// https://sqlite.org/wal.html "Backwards Compatibility").
	JournalWAL JournalMode = "wal"
	// JournalUnknown: any other value, or bytes 18 and 19 disagree. SQLite
	// treats a write version above 2 as read-only and a read version above 2
	// as unreadable.
	JournalUnknown JournalMode = "unknown"
)

// Header holds the fields of the 100-byte database header that the probes
// use. Offsets refer to https://sqlite.org/fileformat2.html#the_database_header.
// The zero value is not a valid header.
type Header struct {
	// PageSize is the page size in bytes (offset 16, 2 bytes). The stored
	// value 1 means 65536. Other values are returned as stored, even when
	// invalid; see PageSizeValid.
	PageSize int `json:"page_size"`
	// WriteVersion is the file format write version (offset 18): 1 legacy, 2 WAL.
	WriteVersion uint8 `json:"write_version"`
	// ReadVersion is the file format read version (offset 19): 1 legacy, 2 WAL.
	ReadVersion uint8 `json:"read_version"`
	// ReservedBytes is the unused space at the end of each page in bytes
	// (offset 20), usually 0.
	ReservedBytes uint8 `json:"reserved_bytes"`
	// ChangeCounter is the file change counter (offset 24). In WAL mode it
	// may not change on every transaction.
	ChangeCounter uint32 `json:"change_counter"`
	// DatabaseSizePages is the in-header database size in pages (offset 28).
	// It is only valid when InHeaderSizeValid reports true
	// (https://sqlite.org/fileformat2.html#in_header_database_size). In WAL
	// mode the database file may lag the logical database.
	DatabaseSizePages uint32 `json:"database_size_pages"`
	// TextEncoding is the database text encoding (offset 56): 1 UTF-8,
	// 2 UTF-16le, 3 UTF-16be. 0 in a database without any schema yet.
	TextEncoding uint32 `json:"text_encoding"`
	// VersionValidFor is the change counter value at which SQLiteVersion was
	// stored (offset 92).
	VersionValidFor uint32 `json:"version_valid_for"`
	// SQLiteVersion is SQLITE_VERSION_NUMBER of the library that most
	// recently modified the file (offset 96), e.g. 3040001 for 3.40.1.
	SQLiteVersion uint32 `json:"sqlite_version_number"`
}

// ParseHeader parses the database header from b, the first bytes of a file.
// Bytes after the first HeaderSize are ignored.
//
// It returns an error wrapping ErrNotSQLite when b does not start with the
// header string "SQLite format 3\x00" (checked on the first min(len(b), 16)
// bytes), and an error wrapping ErrTruncated when b holds that prefix but is
// shorter than HeaderSize, including when b is empty. Other fields are not
// validated: ParseHeader is lenient so that a damaged header can still be
// reported; see PageSizeValid and JournalMode.
func ParseHeader(b []byte) (Header, error) {
	n := min(len(b), magicSize)
	if !bytes.Equal(b[:n], []byte(Magic)[:n]) {
		return Header{}, fmt.Errorf("%w: header string %q", ErrNotSQLite, b[:n])
	}
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d of %d bytes", ErrTruncated, len(b), HeaderSize)
	}
	be := binary.BigEndian
	h := Header{
		PageSize:          int(be.Uint16(b[16:18])),
		WriteVersion:      b[18],
		ReadVersion:       b[19],
		ReservedBytes:     b[20],
		ChangeCounter:     be.Uint32(b[24:28]),
		DatabaseSizePages: be.Uint32(b[28:32]),
		TextEncoding:      be.Uint32(b[56:60]),
		VersionValidFor:   be.Uint32(b[92:96]),
		SQLiteVersion:     be.Uint32(b[96:100]),
	}
	if h.PageSize == 1 {
		h.PageSize = 65536
	}
	return h, nil
}

// JournalMode reports the journalling family from bytes 18 and 19: both 1 is
// JournalRollback, both 2 is JournalWAL, anything else JournalUnknown
// (https://sqlite.org/fileformat2.html#vnums).
func (h Header) JournalMode() JournalMode {
	switch {
	case h.WriteVersion == 1 && h.ReadVersion == 1:
		return JournalRollback
	case h.WriteVersion == 2 && h.ReadVersion == 2:
		return JournalWAL
	default:
		return JournalUnknown
	}
}

// LibraryVersion is SQLiteVersion written as SQLite writes SQLITE_VERSION:
// "3.40.1" for 3040001 (X*1000000 + Y*1000 + Z,
// https://sqlite.org/c3ref/c_source_id.html); "" when the field is 0, as
// in a header no library has stamped.
func (h Header) LibraryVersion() string {
	v := h.SQLiteVersion
	if v == 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d", v/1000000, v/1000%1000, v%1000)
}

// PageSizeValid reports whether PageSize is a power of two between 512 and
// 65536 inclusive, the only page sizes SQLite accepts
// (https://sqlite.org/fileformat2.html#page_size).
func (h Header) PageSizeValid() bool {
	return h.PageSize >= 512 && h.PageSize <= 65536 && h.PageSize&(h.PageSize-1) == 0
}

// InHeaderSizeValid reports whether DatabaseSizePages can be trusted: it is
// non-zero and ChangeCounter equals VersionValidFor
// (https://sqlite.org/fileformat2.html#in_header_database_size).
func (h Header) InHeaderSizeValid() bool {
	return h.DatabaseSizePages != 0 && h.ChangeCounter == h.VersionValidFor
}

// Format is what the first bytes of a file that is not a SQLite database
// look like (Database.Format). It is a fact about the bytes, not a verdict:
// a file named like a database, or with a -wal beside it, that holds zeros
// is a damaged database; one that holds another program's format is that
// program's file.
type Format string

const (
	// FormatZeros: every byte read (up to HeaderSize) is 0: a zero-filled
	// first page, as a torn write or a failing disk leaves it.
	FormatZeros Format = "zeros"
	// FormatSQLiteTruncated: the bytes are a prefix of the SQLite header
	// string, or the whole string followed by fewer than HeaderSize bytes.
	FormatSQLiteTruncated Format = "sqlite-truncated"
	// FormatText: printable ASCII and whitespace only (JSON, CSV, logs, the
	// append-only files of NeDB).
	FormatText Format = "text"
	// FormatBolt: a bbolt/BoltDB meta page (magic 0xED0CDAED at offset 16).
	FormatBolt Format = "bbolt"
	// FormatBerkeleyDB: a Berkeley DB metadata page (a btree, hash, queue or
	// heap magic at offset 12, either byte order).
	FormatBerkeleyDB Format = "berkeley-db"
	// FormatDuckDB: a DuckDB file ("DUCK" at offset 8).
	FormatDuckDB Format = "duckdb"
	// FormatH2: an H2 MVStore file (starts with "H:2,").
	FormatH2 Format = "h2"
	// FormatUnknown: none of the above: another program's file, an encrypted
	// database (SQLCipher pages look random), or a header overwritten with
	// other bytes.
	FormatUnknown Format = "unknown"
)

// Other reports whether f names another program's file format (text,
// bbolt, Berkeley DB, DuckDB, H2) rather than zeros, a truncated SQLite
// header or unknown bytes.
func (f Format) Other() bool {
	switch f {
	case FormatText, FormatBolt, FormatBerkeleyDB, FormatDuckDB, FormatH2:
		return true
	case FormatZeros, FormatSQLiteTruncated, FormatUnknown, "":
		return false
	}
	return false
}

// SniffFormat classifies b, the first bytes (at most HeaderSize are looked
// at) of a file that ParseHeader rejected. An empty b is FormatZeros.
func SniffFormat(b []byte) Format {
	b = b[:min(len(b), HeaderSize)]
	n := min(len(b), magicSize)
	le := binary.LittleEndian
	switch {
	case len(bytes.Trim(b, "\x00")) == 0:
		return FormatZeros
	case bytes.Equal(b[:n], []byte(Magic)[:n]):
		return FormatSQLiteTruncated
	case len(b) >= 20 && (le.Uint32(b[16:]) == 0xED0CDAED || binary.BigEndian.Uint32(b[16:]) == 0xED0CDAED):
		return FormatBolt
	case len(b) >= 16 && berkeleyMagic(le.Uint32(b[12:])):
		return FormatBerkeleyDB
	case len(b) >= 12 && string(b[8:12]) == "DUCK":
		return FormatDuckDB
	case bytes.HasPrefix(b, []byte("H:2,")):
		return FormatH2
	case printable(b):
		return FormatText
	}
	return FormatUnknown
}

// berkeleyMagic reports the Berkeley DB btree, hash, queue and heap magic
// numbers, in either byte order.
func berkeleyMagic(v uint32) bool {
	for _, m := range []uint32{0x00053162, 0x00061561, 0x00042253, 0x00074582} {
		if v == m || v == bits.ReverseBytes32(m) {
			return true
		}
	}
	return false
}

func printable(b []byte) bool {
	for _, c := range b {
		if (c < 0x20 || c > 0x7e) && c != '\n' && c != '\r' && c != '\t' {
			return false
		}
	}
	return true
}
