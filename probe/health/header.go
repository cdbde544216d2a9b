package health

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/preflight-sqlite/preflight/internal/rawfile"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// Problem IDs returned by HeaderProblems and HeaderBytesProblems. They are
// stable; callers map them to findings.
const (
	// ProblemPageSize: the page size (offset 16) is not a power of two in
	// 512..65536 (stored 1 means 65536;
	// https://sqlite.org/fileformat2.html#page_size). SQLite refuses the file.
	ProblemPageSize = "header-page-size-invalid"
	// ProblemTruncated: the file is shorter than the in-header database size
	// (offset 28) times the page size while that size is valid
	// (https://sqlite.org/fileformat2.html#in_header_database_size), or its
	// size is not a multiple of the page size. Pages past the end read as
	// zeros: data is missing. In WAL mode a non-empty -wal may still hold the
	// missing pages, so the fact is only conclusive without one.
	ProblemTruncated = "db-truncated"
	// ProblemReservedBytes: reserved bytes per page (offset 20) are not 0.
	// Informational: encryption and checksum extensions (SEE, SQLCipher,
	// cksumvfs) use them; stock SQLite writes 0.
	ProblemReservedBytes = "header-reserved-bytes"
	// ProblemTextEncoding: the text encoding (offset 56) is not 0 (no schema
	// yet), 1 (UTF-8), 2 (UTF-16le) or 3 (UTF-16be).
	ProblemTextEncoding = "header-text-encoding-invalid"
	// ProblemTorn: the header string is right but fields with fixed or
	// constrained values are wrong, as when page 1 was partly overwritten
	// or torn by a crash: file format versions (offsets 18, 19) not 1 or 2;
	// change counter (24) != version-valid-for (92); usable page size under
	// 480; and, from raw bytes only, payload fractions (21, 22, 23) not
	// 64, 32, 32, the reserved-for-expansion bytes 72..91 not zero, or the
	// schema format number (44) above 4
	// (https://sqlite.org/fileformat2.html#the_database_header).
	ProblemTorn = "header-torn"
)

// Problem is one implausibility found in a database header.
type Problem struct {
	// ID is one of the Problem* constants.
	ID string `json:"id"`
	// Detail says what was seen, e.g. "bytes 21..23 are 0, 0, 0; must be
	// 64, 32, 32".
	Detail string `json:"detail"`
}

// HeaderProblems checks the parsed header h of a database file of fileSize
// bytes and returns its problems in a fixed order (page size, truncation,
// reserved bytes, text encoding, torn), one Problem per ID at most, nil when
// none. A negative fileSize skips the size checks. sqlitefile.Header lacks
// bytes 21..23, 44 and 72..91; HeaderBytesProblems checks those too.
//
// The version-valid-for check reports a mismatch only when the header was
// last written by SQLite 3.7.0 or later (SQLiteVersion >= 3007000 or
// VersionValidFor != 0): older versions never maintained offset 92.
func HeaderProblems(h sqlitefile.Header, fileSize int64) []Problem {
	var ps []Problem
	pageOK := h.PageSizeValid()
	if !pageOK {
		ps = append(ps, Problem{ProblemPageSize, fmt.Sprintf("page size %d is not a power of two between 512 and 65536", h.PageSize)})
	}
	if pageOK && fileSize >= 0 {
		want := int64(h.DatabaseSizePages) * int64(h.PageSize)
		switch {
		case h.InHeaderSizeValid() && fileSize < want:
			ps = append(ps, Problem{ProblemTruncated, fmt.Sprintf("file is %d bytes; header says %d pages of %d bytes (%d bytes)", fileSize, h.DatabaseSizePages, h.PageSize, want)})
		case fileSize%int64(h.PageSize) != 0:
			ps = append(ps, Problem{ProblemTruncated, fmt.Sprintf("file size %d is not a multiple of the page size %d", fileSize, h.PageSize)})
		}
	}
	if h.ReservedBytes > 0 {
		ps = append(ps, Problem{ProblemReservedBytes, fmt.Sprintf("%d reserved bytes per page; info: used by encryption/checksum extensions", h.ReservedBytes)})
	}
	if h.TextEncoding > 3 {
		ps = append(ps, Problem{ProblemTextEncoding, fmt.Sprintf("text encoding %d; must be 1 (UTF-8), 2 (UTF-16le) or 3 (UTF-16be)", h.TextEncoding)})
	}
	var torn []string
	if !fileFormatOK(h.WriteVersion) || !fileFormatOK(h.ReadVersion) {
		torn = append(torn, fmt.Sprintf("file format versions (bytes 18, 19) are %d, %d; must be 1 or 2", h.WriteVersion, h.ReadVersion))
	}
	if h.ChangeCounter != h.VersionValidFor && (h.SQLiteVersion >= 3007000 || h.VersionValidFor != 0) {
		torn = append(torn, fmt.Sprintf("change counter %d != version-valid-for %d", h.ChangeCounter, h.VersionValidFor))
	}
	if pageOK && h.PageSize-int(h.ReservedBytes) < 480 {
		torn = append(torn, fmt.Sprintf("usable page size %d is under 480", h.PageSize-int(h.ReservedBytes)))
	}
	if len(torn) > 0 {
		ps = append(ps, Problem{ProblemTorn, strings.Join(torn, "; ")})
	}
	return ps
}

func fileFormatOK(v uint8) bool { return v == 1 || v == 2 }

// HeaderBytesProblems parses b, the first bytes of a database file of
// fileSize bytes, with sqlitefile.ParseHeader and returns HeaderProblems plus
// the checks that need raw bytes (payload fractions, reserved-for-expansion
// bytes, schema format number), merged into one header-torn Problem. It
// returns ParseHeader's error (wrapping sqlitefile.ErrNotSQLite or
// sqlitefile.ErrTruncated) when b is not a SQLite header.
func HeaderBytesProblems(b []byte, fileSize int64) ([]Problem, error) {
	h, err := sqlitefile.ParseHeader(b)
	if err != nil {
		return nil, err
	}
	ps := HeaderProblems(h, fileSize)
	var torn []string
	if b[21] != 64 || b[22] != 32 || b[23] != 32 {
		torn = append(torn, fmt.Sprintf("payload fractions (bytes 21..23) are %d, %d, %d; must be 64, 32, 32", b[21], b[22], b[23]))
	}
	for _, c := range b[72:92] {
		if c != 0 {
			torn = append(torn, "reserved-for-expansion bytes 72..91 are not zero")
			break
		}
	}
	if sf := binary.BigEndian.Uint32(b[44:48]); sf > 4 {
		torn = append(torn, fmt.Sprintf("schema format number (bytes 44..47) is %d; must be 0..4", sf))
	}
	if len(torn) == 0 {
		return ps, nil
	}
	for i := range ps {
		if ps[i].ID == ProblemTorn {
			ps[i].Detail = strings.Join(append([]string{ps[i].Detail}, torn...), "; ")
			return ps, nil
		}
	}
	return append(ps, Problem{ProblemTorn, strings.Join(torn, "; ")}), nil
}

// CheckHeaderFile reads the first sqlitefile.HeaderSize bytes of the
// database at path and returns HeaderBytesProblems for them and the file's
// size. It only reads, through rawfile.Open (what is not a regular file is
// an error, never a blocking open). A zero-length file (a new, empty database) has no
// problems. Errors are those of opening, stat'ing or reading the file, or of
// HeaderBytesProblems.
func CheckHeaderFile(path string) ([]Problem, error) {
	f, err := rawfile.Open(path, false)
	if err != nil {
		return nil, fmt.Errorf("check header: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("check header: %w", err)
	}
	if fi.Size() == 0 {
		return nil, nil
	}
	buf := make([]byte, sqlitefile.HeaderSize)
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("check header: read %s: %w", path, err)
	}
	ps, err := HeaderBytesProblems(buf[:n], fi.Size())
	if err != nil {
		return nil, fmt.Errorf("check header %s: %w", path, err)
	}
	return ps, nil
}
