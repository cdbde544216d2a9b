package sqlitefile_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "header", name))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	return b
}

// withBytes returns a copy of b with the bytes at off replaced by v.
func withBytes(b []byte, off int, v ...byte) []byte {
	c := bytes.Clone(b)
	copy(c[off:], v)
	return c
}

func TestParseHeader(t *testing.T) {
	wal := readFixture(t, "wal-4096.bin")
	tests := []struct {
		name    string
		in      []byte
		want    sqlitefile.Header
		wantErr error
	}{
		{
			name: "wal-4096.bin",
			in:   wal,
			want: sqlitefile.Header{PageSize: 4096, WriteVersion: 2, ReadVersion: 2, ChangeCounter: 2, DatabaseSizePages: 2,
				TextEncoding: 1, VersionValidFor: 2, SQLiteVersion: 3040001},
		},
		{
			name: "rollback-4096.bin",
			in:   readFixture(t, "rollback-4096.bin"),
			want: sqlitefile.Header{PageSize: 4096, WriteVersion: 1, ReadVersion: 1, ChangeCounter: 2, DatabaseSizePages: 2,
				TextEncoding: 1, VersionValidFor: 2, SQLiteVersion: 3040001},
		},
		{
			name: "rollback-65536.bin stores page size 1",
			in:   readFixture(t, "rollback-65536.bin"),
			want: sqlitefile.Header{PageSize: 65536, WriteVersion: 1, ReadVersion: 1, ChangeCounter: 1, DatabaseSizePages: 2,
				TextEncoding: 1, VersionValidFor: 1, SQLiteVersion: 3040001},
		},
		{
			name: "utf16le-512.bin",
			in:   readFixture(t, "utf16le-512.bin"),
			want: sqlitefile.Header{PageSize: 512, WriteVersion: 1, ReadVersion: 1, ChangeCounter: 1, DatabaseSizePages: 2,
				TextEncoding: 2, VersionValidFor: 1, SQLiteVersion: 3040001},
		},
		{
			name: "trailing bytes ignored",
			in:   append(bytes.Clone(wal), "more page data"...),
			want: sqlitefile.Header{PageSize: 4096, WriteVersion: 2, ReadVersion: 2, ChangeCounter: 2, DatabaseSizePages: 2,
				TextEncoding: 1, VersionValidFor: 2, SQLiteVersion: 3040001},
		},
		{
			name: "invalid page size kept as stored",
			in:   withBytes(wal, 16, 0x03, 0x00, 3, 1, 7),
			want: sqlitefile.Header{PageSize: 768, WriteVersion: 3, ReadVersion: 1, ReservedBytes: 7, ChangeCounter: 2, DatabaseSizePages: 2,
				TextEncoding: 1, VersionValidFor: 2, SQLiteVersion: 3040001},
		},
		{name: "empty", in: nil, wantErr: sqlitefile.ErrTruncated},
		{name: "magic only", in: wal[:16], wantErr: sqlitefile.ErrTruncated},
		{name: "50 bytes", in: wal[:50], wantErr: sqlitefile.ErrTruncated},
		{name: "99 bytes", in: wal[:99], wantErr: sqlitefile.ErrTruncated},
		{name: "prefix of magic", in: wal[:5], wantErr: sqlitefile.ErrTruncated},
		{name: "short text", in: []byte("hello"), wantErr: sqlitefile.ErrNotSQLite},
		{name: "SQLite 2 header", in: withBytes(wal, 0, []byte("** This file contains an SQLite 2.1 database **")...), wantErr: sqlitefile.ErrNotSQLite},
		{name: "magic without NUL", in: withBytes(wal, 15, ' '), wantErr: sqlitefile.ErrNotSQLite},
		{name: "zeros", in: make([]byte, 100), wantErr: sqlitefile.ErrNotSQLite},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := sqlitefile.ParseHeader(tt.in)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("ParseHeader(%d bytes) error = %v, want %v", len(tt.in), err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseHeader(%d bytes) mismatch (-want +got):\n%s", len(tt.in), diff)
			}
		})
	}
}

func TestHeaderJournalMode(t *testing.T) {
	tests := []struct {
		write, read uint8
		want        sqlitefile.JournalMode
	}{
		{1, 1, sqlitefile.JournalRollback},
		{2, 2, sqlitefile.JournalWAL},
		{1, 2, sqlitefile.JournalUnknown},
		{2, 1, sqlitefile.JournalUnknown},
		{3, 2, sqlitefile.JournalUnknown},
		{0, 0, sqlitefile.JournalUnknown},
	}
	for _, tt := range tests {
		h := sqlitefile.Header{WriteVersion: tt.write, ReadVersion: tt.read}
		if got := h.JournalMode(); got != tt.want {
			t.Errorf("Header{WriteVersion: %d, ReadVersion: %d}.JournalMode() = %q, want %q", tt.write, tt.read, got, tt.want)
		}
	}
}

func TestHeaderPageSizeValid(t *testing.T) {
	for _, tt := range []struct {
		size int
		want bool
	}{
		{0, false}, {1, false}, {256, false}, {511, false}, {512, true}, {768, false},
		{1024, true}, {4096, true}, {32768, true}, {65536, true}, {65535, false}, {131072, false},
	} {
		if got := (sqlitefile.Header{PageSize: tt.size}).PageSizeValid(); got != tt.want {
			t.Errorf("Header{PageSize: %d}.PageSizeValid() = %v, want %v", tt.size, got, tt.want)
		}
	}
}

func TestHeaderInHeaderSizeValid(t *testing.T) {
	for _, tt := range []struct {
		h    sqlitefile.Header
		want bool
	}{
		{sqlitefile.Header{DatabaseSizePages: 2, ChangeCounter: 5, VersionValidFor: 5}, true},
		{sqlitefile.Header{DatabaseSizePages: 2, ChangeCounter: 6, VersionValidFor: 5}, false},
		{sqlitefile.Header{DatabaseSizePages: 0, ChangeCounter: 5, VersionValidFor: 5}, false},
	} {
		if got := tt.h.InHeaderSizeValid(); got != tt.want {
			t.Errorf("%+v.InHeaderSizeValid() = %v, want %v", tt.h, got, tt.want)
		}
	}
}

func FuzzParseHeader(f *testing.F) {
	entries, err := os.ReadDir(filepath.Join("testdata", "header"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".bin" {
			b := readFixture(f, e.Name())
			f.Add(b)
			f.Add(b[:50])
		}
	}
	f.Add([]byte{})
	f.Add([]byte("SQLite format 3\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := sqlitefile.ParseHeader(b)
		isMagic := len(b) >= 16 && string(b[:16]) == "SQLite format 3\x00"
		if err != nil {
			truncated, notSQLite := errors.Is(err, sqlitefile.ErrTruncated), errors.Is(err, sqlitefile.ErrNotSQLite)
			if truncated == notSQLite {
				t.Fatalf("ParseHeader(%q) error = %v, want exactly one of ErrTruncated, ErrNotSQLite", b, err)
			}
			if truncated && len(b) >= sqlitefile.HeaderSize {
				t.Fatalf("ParseHeader(%d bytes) = ErrTruncated for a full header", len(b))
			}
			if notSQLite && isMagic {
				t.Fatalf("ParseHeader(%q) = ErrNotSQLite for the right header string", b[:16])
			}
			if h != (sqlitefile.Header{}) {
				t.Fatalf("ParseHeader(%q) = %+v with error, want zero Header", b, h)
			}
			// Every rejected header has a format; a truncated SQLite one
			// is never called another program's.
			switch ft := sqlitefile.SniffFormat(b); {
			case ft == "":
				t.Fatalf("SniffFormat(%q) = empty", b)
			case truncated && ft != sqlitefile.FormatSQLiteTruncated && ft != sqlitefile.FormatZeros:
				t.Fatalf("SniffFormat(%q) = %q for a truncated SQLite header", b, ft)
			}
			return
		}
		if len(b) < sqlitefile.HeaderSize || !isMagic {
			t.Fatalf("ParseHeader(%q) accepted %d bytes", b, len(b))
		}
		raw := int(binary.BigEndian.Uint16(b[16:18]))
		if raw == 1 && h.PageSize != 65536 || raw != 1 && h.PageSize != raw {
			t.Fatalf("ParseHeader: PageSize = %d for stored value %d", h.PageSize, raw)
		}
		if h.PageSizeValid() != (h.PageSize >= 512 && h.PageSize <= 65536 && h.PageSize&(h.PageSize-1) == 0) {
			t.Fatalf("Header{PageSize: %d}.PageSizeValid() = %v", h.PageSize, h.PageSizeValid())
		}
		if h.WriteVersion != b[18] || h.ReadVersion != b[19] || h.SQLiteVersion != binary.BigEndian.Uint32(b[96:100]) {
			t.Fatalf("ParseHeader(%q) = %+v, fields do not match the bytes", b[:100], h)
		}
		switch m := h.JournalMode(); m {
		case sqlitefile.JournalRollback, sqlitefile.JournalWAL, sqlitefile.JournalUnknown:
		default:
			t.Fatalf("Header.JournalMode() = %q, not one of the constants", m)
		}
	})
}

func TestHeaderLibraryVersion(t *testing.T) {
	for _, tt := range []struct {
		v    uint32
		want string
	}{{3040001, "3.40.1"}, {3051003, "3.51.3"}, {3007000, "3.7.0"}, {3053003, "3.53.3"}, {0, ""}} {
		if got := (sqlitefile.Header{SQLiteVersion: tt.v}).LibraryVersion(); got != tt.want {
			t.Errorf("Header{SQLiteVersion: %d}.LibraryVersion() = %q, want %q", tt.v, got, tt.want)
		}
	}
}
