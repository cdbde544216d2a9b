package health

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/preflight-sqlite/preflight/internal/rawfile"
	"io"
	"io/fs"

	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// JournalHeaderSize is the number of bytes of a rollback journal header that
// ParseJournalHeader reads: the 8-byte magic and five 4-byte big-endian
// fields (https://sqlite.org/fileformat2.html#the_rollback_journal). On disk
// the header is padded to the sector size.
const JournalHeaderSize = 28

// journalMagic starts every valid rollback journal header.
var journalMagic = []byte{0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7}

var (
	// ErrJournalShort reports fewer than JournalHeaderSize bytes.
	ErrJournalShort = errors.New("short journal header")
	// ErrJournalMagic reports a header that does not start with the journal
	// magic d9 d5 05 f9 20 a1 63 d7. A journal zeroed after commit
	// (journal_mode=PERSIST) has no magic.
	ErrJournalMagic = errors.New("no journal magic")
	// ErrJournalHeader reports a header with the magic but a page size or
	// sector size SQLite rejects (pager.c readJournalHdr).
	ErrJournalHeader = errors.New("invalid journal header")
)

// JournalHeader is the header of a rollback journal segment
// (https://sqlite.org/fileformat2.html#the_rollback_journal). All fields are
// big-endian 32-bit values as stored.
type JournalHeader struct {
	// NRec is the number of page records in this segment (offset 8).
	// 0xFFFFFFFF means "compute from the file size"; see Records.
	NRec uint32 `json:"nrec"`
	// Nonce is the random checksum salt (offset 12).
	Nonce uint32 `json:"nonce"`
	// InitialPages is the database size in pages before the transaction
	// began (offset 16); rollback truncates the database to this size.
	InitialPages uint32 `json:"initial_pages"`
	// SectorSize is the disk sector size in bytes assumed by the writer
	// (offset 20); the header occupies this many bytes.
	SectorSize uint32 `json:"sector_size"`
	// PageSize is the database page size in bytes (offset 24).
	PageSize uint32 `json:"page_size"`
}

// Records returns the number of page records in the segment this header
// starts, given the bytes from the header to the end of the file: NRec,
// or, when NRec is 0xFFFFFFFF, as many whole records (4-byte page number,
// PageSize bytes, 4-byte checksum) as fit after the SectorSize-byte header.
// It returns 0 for a header with a zero PageSize.
func (h JournalHeader) Records(remaining int64) int64 {
	if h.NRec != 0xFFFFFFFF {
		return int64(h.NRec)
	}
	if h.PageSize == 0 || remaining <= int64(h.SectorSize) {
		return 0
	}
	return (remaining - int64(h.SectorSize)) / (int64(h.PageSize) + 8)
}

// ParseJournalHeader parses the first JournalHeaderSize bytes of b as a
// rollback journal header. Bytes after them are ignored.
//
// It returns an error wrapping ErrJournalShort when b is shorter than
// JournalHeaderSize, ErrJournalMagic when b does not start with the magic,
// and ErrJournalHeader when the page size is not a power of two in
// 512..65536 or the sector size is not a power of two in 32..65536 (the
// checks of SQLite's pager.c readJournalHdr). With ErrJournalHeader the
// returned header holds the fields as stored.
func ParseJournalHeader(b []byte) (JournalHeader, error) {
	if len(b) < JournalHeaderSize {
		return JournalHeader{}, fmt.Errorf("%w: %d of %d bytes", ErrJournalShort, len(b), JournalHeaderSize)
	}
	if !bytes.Equal(b[:8], journalMagic) {
		return JournalHeader{}, fmt.Errorf("%w: starts % x", ErrJournalMagic, b[:8])
	}
	be := binary.BigEndian
	h := JournalHeader{
		NRec:         be.Uint32(b[8:]),
		Nonce:        be.Uint32(b[12:]),
		InitialPages: be.Uint32(b[16:]),
		SectorSize:   be.Uint32(b[20:]),
		PageSize:     be.Uint32(b[24:]),
	}
	if !pow2In(h.PageSize, 512, 65536) {
		return h, fmt.Errorf("%w: page size %d", ErrJournalHeader, h.PageSize)
	}
	if !pow2In(h.SectorSize, 32, 65536) {
		return h, fmt.Errorf("%w: sector size %d", ErrJournalHeader, h.SectorSize)
	}
	return h, nil
}

func pow2In(v, lo, hi uint32) bool {
	return v >= lo && v <= hi && v&(v-1) == 0
}

// LockState says whether a lock was seen on a file.
type LockState string

const (
	// LockHeld: another process holds the lock (F_GETLK reported it).
	LockHeld LockState = "held"
	// LockFree: no other process holds it.
	LockFree LockState = "free"
	// LockUnknown: the probe could not tell (unsupported GOOS, or the file
	// could not be opened or queried).
	LockUnknown LockState = "unknown"
)

// Journal describes the rollback journal (path+"-journal") and any -wal
// beside a database. The zero value means "nothing found".
type Journal struct {
	// Path is the journal path, the database path plus "-journal".
	Path string `json:"path"`
	// Exists reports whether the journal file exists.
	Exists bool `json:"exists"`
	// SizeBytes is the journal size in bytes; 0 when absent.
	SizeBytes int64 `json:"size_bytes"`
	// NonZero reports a non-empty journal whose first byte is not zero:
	// SQLite's own test for a hot journal (pager.c hasHotJournal). When it
	// holds and no writer holds the RESERVED lock, a read-only open of the
	// database fails with SQLITE_READONLY_ROLLBACK and the next read-write
	// opener rolls the journal back.
	NonZero bool `json:"non_zero"`
	// HeaderValid reports that the first JournalHeaderSize bytes parse with
	// ParseJournalHeader (magic, page size and sector size valid).
	HeaderValid bool `json:"header_valid"`
	// HeaderErr is why the header did not parse; empty when HeaderValid or
	// when the journal is absent or empty.
	HeaderErr string `json:"header_error,omitempty"`
	// Header is the parsed header; zero unless HeaderValid (or the header
	// had the magic but invalid sizes).
	Header JournalHeader `json:"header"`
	// Segments is the number of journal segments with a valid header. A
	// writer whose cache spills starts a new segment, with its own header
	// at a sector boundary, at each spill.
	Segments int `json:"segments"`
	// Records is the number of page records (original page images) in
	// those segments: the pages a rollback restores. Records after a last
	// header whose NRec is 0 (written but not yet synced when the writer
	// died, so not yet in the database either) are not counted; SQLite's
	// hot rollback ignores them too (pager.c pager_playback). 0 unless the
	// header parsed.
	Records int64 `json:"records"`
	// WriterLock is the state of the RESERVED lock byte (offset 0x40000001)
	// of the database file (https://sqlite.org/lockingv3.html), probed with
	// F_GETLK when the journal is non-empty; LockUnknown otherwise. A writer in
	// a rollback-mode transaction holds it while its journal exists; such a
	// journal is live, not hot.
	WriterLock LockState `json:"writer_lock"`
	// Hot reports a journal that the next writer rolls back
	// (https://sqlite.org/lockingv3.html#hot_journals): non-empty, the
	// header starts with the journal magic, WriterLock is not LockHeld, and
	// the database is not empty (SQLite deletes a journal beside an empty
	// database instead of playing it back).
	// A database with a hot journal holds a half-applied transaction; the
	// journal must be kept with it (https://sqlite.org/howtocorrupt.html#delhotjrnl).
	Hot bool `json:"hot"`
	// DBMode is the journalling family from the database header;
	// empty when the database header could not be read.
	DBMode sqlitefile.JournalMode `json:"db_mode,omitempty"`
	// StrayWAL reports a -wal (of any size) beside a database whose header
	// says rollback mode. SQLite opens an existing -wal of a non-empty
	// database whatever the header says (pager.c pagerOpenWalIfPresent), so
	// the frames of a non-empty one can still change what readers see.
	StrayWAL bool `json:"stray_wal"`
	// StrayWALSizeBytes is the size of that -wal in bytes; 0 when empty or
	// not StrayWAL.
	StrayWALSizeBytes int64 `json:"stray_wal_size_bytes,omitempty"`
}

// InspectJournal reads the database header of dbPath and the first bytes of
// dbPath+"-journal", stats dbPath+"-wal" and, on Linux, asks the kernel
// (F_GETLK) whether another process holds the RESERVED lock on dbPath. It
// opens files read-only and never creates, modifies, locks or deletes
// anything; see the package comment on POSIX locks.
//
// A missing journal is not an error. InspectJournal returns an error when
// the journal or the -wal exists but cannot be stat'ed or read, or when the
// database exists but its header cannot be read; the Journal then holds what
// was learned.
func InspectJournal(dbPath string) (Journal, error) {
	j := Journal{Path: dbPath + "-journal", WriterLock: LockUnknown}
	db, dbErr := sqlitefile.Inspect(dbPath)
	if db.Header != nil {
		j.DBMode = db.JournalMode
	}
	if db.JournalMode == sqlitefile.JournalRollback && db.WAL.Exists {
		j.StrayWAL = true
		j.StrayWALSizeBytes = db.WAL.SizeBytes
	}

	f, err := rawfile.Open(j.Path, true)
	if errors.Is(err, fs.ErrNotExist) {
		return j, dbErr
	}
	if err != nil {
		return j, fmt.Errorf("inspect journal: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return j, fmt.Errorf("inspect journal: %w", err)
	}
	j.Exists = true
	j.SizeBytes = fi.Size()
	if j.SizeBytes == 0 {
		return j, dbErr
	}
	var buf [JournalHeaderSize]byte
	n, err := f.ReadAt(buf[:], 0)
	if err != nil && err != io.EOF {
		return j, fmt.Errorf("inspect journal: read %s: %w", j.Path, err)
	}
	j.NonZero = n > 0 && buf[0] != 0
	h, err := ParseJournalHeader(buf[:n])
	switch {
	case err == nil:
		j.HeaderValid = true
		j.Header = h
		j.Segments, j.Records = journalSegments(f, j.SizeBytes, h)
	case errors.Is(err, ErrJournalHeader):
		j.Header = h
		j.HeaderErr = err.Error()
	default:
		j.HeaderErr = err.Error()
	}
	magic := n >= len(journalMagic) && bytes.Equal(buf[:len(journalMagic)], journalMagic)
	if !db.New {
		j.WriterLock = reservedLock(dbPath)
	}
	j.Hot = magic && j.WriterLock != LockHeld && !db.New
	return j, dbErr
}

// journalSegments walks the segments of a journal of size bytes whose first
// header is first: each segment is a SectorSize-byte header followed by
// NRec records of PageSize+8 bytes, and the next header starts at the next
// sector boundary (pager.c journalHdrOffset). The walk stops at the first
// header that does not parse.
func journalSegments(r io.ReaderAt, size int64, first JournalHeader) (segments int, records int64) {
	var buf [JournalHeaderSize]byte
	h, off := first, int64(0)
	for {
		n := h.Records(size - off)
		segments++
		records += n
		sector := int64(h.SectorSize)
		next := off + sector + n*(int64(h.PageSize)+8)
		next = (next + sector - 1) / sector * sector
		if next <= off || next+JournalHeaderSize > size {
			return segments, records
		}
		if _, err := r.ReadAt(buf[:], next); err != nil {
			return segments, records
		}
		nh, err := ParseJournalHeader(buf[:])
		if err != nil {
			return segments, records
		}
		h, off = nh, next
	}
}
