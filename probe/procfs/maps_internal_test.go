package procfs

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Internal test: parseMaps is unexported and has no observable effect of
// its own outside Scan.

func TestParseMapsCaptured(t *testing.T) {
	// testdata/sqlite3-wal.maps: /proc/PID/maps of Debian's sqlite3 3.40.1
	// with a WAL database open; its -shm had st_dev 0xfe00 (65024), inode
	// 9986097.
	b, err := os.ReadFile("testdata/sqlite3-wal.maps")
	if err != nil {
		t.Fatal(err)
	}
	var shm []mapping
	n := 0
	parseMaps(b, func(m mapping) bool {
		n++
		if m.Ino == 9986097 {
			shm = append(shm, m)
		}
		return true
	})
	want := []mapping{{Major: 0xfe, Minor: 0, Ino: 9986097, Path: []byte("/tmp/exp/w.db-shm")}}
	if diff := cmp.Diff(want, shm); diff != "" {
		t.Errorf("parseMaps(sqlite3-wal.maps) -shm mappings (-want +got):\n%s", diff)
	}
	if n != 41 { // 52 lines, 11 with inode 0
		t.Errorf("parseMaps(sqlite3-wal.maps) reported %d file mappings, want 41", n)
	}
}

func TestParseMapsLine(t *testing.T) {
	tests := []struct {
		line string
		want mapping
		ok   bool
	}{
		{"7f0dcc720000-7f0dcc728000 rw-s 00000000 fe:00 9986097                    /tmp/exp/w.db-shm",
			mapping{0xfe, 0, 9986097, []byte("/tmp/exp/w.db-shm")}, true},
		{"7f0dcc720000-7f0dcc728000 rw-s 00000000 103:0a 12 /data/app.db-shm (deleted)",
			mapping{0x103, 0xa, 12, []byte("/data/app.db-shm (deleted)")}, true},
		{"7f0dcc720000-7f0dcc728000 rw-s 00000000 fe:00 12", mapping{0xfe, 0, 12, nil}, true},
		{"7ffd5a1e0000-7ffd5a201000 rw-p 00000000 00:00 0                          [stack]", mapping{}, false},
		{"7ffd5a1e0000-7ffd5a201000 rw-p 00000000 00:00 0", mapping{}, false},
		{"", mapping{}, false},
		{"a b c d", mapping{}, false},
		{"a b c fe:00 x /p", mapping{}, false},
		{"a b c fe:zz 12 /p", mapping{}, false},
		{"a b c fe 12 /p", mapping{}, false},
		{"a b c fe:00 99999999999999999999999 /p", mapping{}, false},
		{"a b c fffffffff:00 12 /p", mapping{}, false},
	}
	for _, tt := range tests {
		got, ok := parseMapsLine([]byte(tt.line))
		if ok != tt.ok || ok && !cmp.Equal(got, tt.want, cmpopts.EquateEmpty()) {
			t.Errorf("parseMapsLine(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzParseMaps(f *testing.F) {
	if b, err := os.ReadFile("testdata/sqlite3-wal.maps"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("0-1 r 0 fe:00 1 /x\n\n0-1 r 0 0:0 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseMaps(b, func(m mapping) bool {
			if m.Ino == 0 {
				t.Errorf("parseMaps(%q) reported inode 0", b)
			}
			return true
		})
	})
}
