package sqlitefile_test

import (
	"encoding/binary"
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

func TestSniffFormat(t *testing.T) {
	at := func(off int, v ...byte) []byte {
		b := make([]byte, 100)
		copy(b[off:], v)
		b[99] = 0xff // not all zero
		return b
	}
	le := func(off int, v uint32) []byte {
		b := at(0)
		binary.LittleEndian.PutUint32(b[off:], v)
		return b
	}
	beb := func(off int, v uint32) []byte {
		b := at(0)
		binary.BigEndian.PutUint32(b[off:], v)
		return b
	}
	random := make([]byte, 100)
	rand.New(rand.NewSource(1)).Read(random)
	tests := []struct {
		name string
		in   []byte
		want sqlitefile.Format
	}{
		{"zero page", make([]byte, 100), sqlitefile.FormatZeros},
		{"five zero bytes", make([]byte, 5), sqlitefile.FormatZeros},
		{"magic, short", []byte("SQLite format 3\x00\x10\x00\x02\x02"), sqlitefile.FormatSQLiteTruncated},
		{"magic prefix", []byte("SQLite f"), sqlitefile.FormatSQLiteTruncated},
		{"json lines", []byte("{\"_id\":\"1\",\"a\":2}\n{\"_id\":\"2\"}\n"), sqlitefile.FormatText},
		{"bbolt", le(16, 0xED0CDAED), sqlitefile.FormatBolt},
		{"berkeley db btree", le(12, 0x00053162), sqlitefile.FormatBerkeleyDB},
		{"berkeley db hash, big-endian", beb(12, 0x00061561), sqlitefile.FormatBerkeleyDB},
		{"duckdb", at(8, 'D', 'U', 'C', 'K'), sqlitefile.FormatDuckDB},
		{"h2", []byte("H:2,block:2,blockSize:1000,chunk:1,\x00\x00"), sqlitefile.FormatH2},
		{"random (encrypted, overwritten)", random, sqlitefile.FormatUnknown},
		{"zero page, one byte set", at(50, 1), sqlitefile.FormatUnknown},
	}
	for _, tt := range tests {
		if got := sqlitefile.SniffFormat(tt.in); got != tt.want {
			t.Errorf("SniffFormat(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// A zero-filled first page is reported with its format, and a file of any
// name with a -wal or -journal beside it is listed although its header is
// not SQLite; a file of another name without either is still skipped.
func TestDiscoverDamagedHeader(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(t.TempDir(), "src.db")
	createDB(t, src, "pragma journal_mode=wal", "create table t(a)")
	db := readFile(t, src)
	zeroed := append(make([]byte, 4096), db[4096:]...)
	walBytes := make([]byte, 32+2*(24+4096)) // contents do not matter here
	random := make([]byte, 4096)
	rand.New(rand.NewSource(2)).Read(random)

	writeFile(t, filepath.Join(dir, "app.sqlite"), zeroed)
	writeFile(t, filepath.Join(dir, "app.sqlite-wal"), walBytes)
	writeFile(t, filepath.Join(dir, "store"), zeroed)
	writeFile(t, filepath.Join(dir, "store-wal"), walBytes)
	writeFile(t, filepath.Join(dir, "tiny"), []byte("SQLite"))
	writeFile(t, filepath.Join(dir, "tiny-journal"), nil)
	writeFile(t, filepath.Join(dir, "cache"), random) // no sidecar: not a database
	writeFile(t, filepath.Join(dir, "blob"), zeroed)  // no sidecar: not a database

	res, err := sqlitefile.Discover([]string{dir}, sqlitefile.DiscoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Path      string
		NotSQLite bool
		Format    sqlitefile.Format
		WAL, Jnl  bool
	}
	var got []row
	for _, d := range res.Databases {
		got = append(got, row{filepath.Base(d.Path), d.NotSQLite, d.Format, d.WAL.Exists, d.Journal.Exists})
	}
	want := []row{
		{"app.sqlite", true, sqlitefile.FormatZeros, true, false},
		{"store", true, sqlitefile.FormatZeros, true, false},
		{"tiny", true, sqlitefile.FormatSQLiteTruncated, false, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Discover(%s) mismatch (-want +got):\n%s", dir, diff)
	}
}
