package health_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/preflight-sqlite/preflight/probe/health"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// FuzzHeaderProblems: no panic, at most one Problem per ID, known IDs only,
// and the raw-byte checks only ever add (never remove) problems.
func FuzzHeaderProblems(f *testing.F) {
	good, size := realHeader(f)
	f.Add(good, size)
	f.Add(good, int64(-1))
	f.Add(good, int64(0))
	torn := bytes.Clone(good)
	copy(torn[18:], bytes.Repeat([]byte{0xa5}, 82))
	f.Add(torn, size)
	f.Add([]byte("SQLite format 3\x00"), int64(16))
	known := map[string]bool{health.ProblemPageSize: true, health.ProblemTruncated: true, health.ProblemReservedBytes: true, health.ProblemTextEncoding: true, health.ProblemTorn: true}
	f.Fuzz(func(t *testing.T, b []byte, size int64) {
		ps, err := health.HeaderBytesProblems(b, size)
		if err != nil {
			return
		}
		h, _ := sqlitefile.ParseHeader(b)
		base := health.HeaderProblems(h, size)
		seen := map[string]bool{}
		for _, p := range ps {
			if !known[p.ID] || seen[p.ID] || p.Detail == "" {
				t.Fatalf("HeaderBytesProblems = %+v: unknown, repeated or empty problem", ps)
			}
			seen[p.ID] = true
		}
		for _, p := range base {
			if !seen[p.ID] {
				t.Fatalf("HeaderProblems has %s, HeaderBytesProblems %+v lacks it", p.ID, ps)
			}
		}
	})
}

// FuzzParseJournalHeader: no panic; a nil error means the magic and sane
// sizes; Records never negative.
func FuzzParseJournalHeader(f *testing.F) {
	hdr := []byte{0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7, 0, 0, 0, 8, 1, 2, 3, 4, 0, 0, 1, 47, 0, 0, 2, 0, 0, 0, 16, 0}
	f.Add(hdr, int64(1290768))
	ff := bytes.Clone(hdr)
	copy(ff[8:], []byte{0xff, 0xff, 0xff, 0xff})
	f.Add(ff, int64(512+3*4104))
	f.Add(make([]byte, 28), int64(28))
	f.Add(hdr[:10], int64(10))
	f.Fuzz(func(t *testing.T, b []byte, size int64) {
		h, err := health.ParseJournalHeader(b)
		if err != nil {
			return
		}
		if !bytes.HasPrefix(b, hdr[:8]) || h.PageSize < 512 || h.PageSize > 65536 || h.PageSize&(h.PageSize-1) != 0 || h.SectorSize < 32 {
			t.Fatalf("ParseJournalHeader(% x) = %+v, nil: accepted an invalid header", b, h)
		}
		if n := h.Records(size); n < 0 {
			t.Fatalf("Records(%d) = %d", size, n)
		}
	})
}

// FuzzPageOwners walks b-trees over arbitrary page bytes (the pages of a
// real database, then fuzzed, at the 512-byte minimum page size): no
// panic, each page read at most once, owners only of pages asked for,
// each naming a root it was given.
func FuzzPageOwners(f *testing.F) {
	path := filepath.Join(f.TempDir(), "f.db")
	execDB(f, path, "pragma page_size=512", "pragma journal_mode=delete",
		"create table t(id integer primary key, a text, b blob)", "create index ta on t(a)",
		`with recursive c(x) as (select 1 union all select x+1 from c where x < 60) insert into t(a, b) select printf('%0*d', x * 7, x), randomblob(x * 20) from c`)
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:512*3])
	f.Fuzz(func(t *testing.T, b []byte) {
		const ps = 512
		count := uint32(len(b) / ps)
		reads := map[uint32]int{}
		read := func(pg uint32) ([]byte, error) {
			if pg < 1 || pg > count {
				t.Fatalf("PageOwners read page %d of %d", pg, count)
			}
			reads[pg]++
			if reads[pg] > 1 {
				t.Fatalf("PageOwners read page %d twice", pg)
			}
			return b[(pg-1)*ps : pg*ps], nil
		}
		roots := []int64{1, 2, 3}
		want := []int64{2, 4, 5, 9}
		owners, _ := health.PageOwners(read, roots, want, count, ps)
		for pg, rs := range owners {
			if !slices.Contains(want, pg) {
				t.Fatalf("PageOwners gave owners of page %d, not asked for", pg)
			}
			for _, r := range rs {
				if !slices.Contains(roots, r) {
					t.Fatalf("PageOwners gave page %d owner %d, not a root", pg, r)
				}
			}
		}
	})
}
