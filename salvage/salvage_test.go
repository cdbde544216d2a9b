package salvage_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/kube"
	"github.com/preflight-sqlite/preflight/salvage"
)

const pageSize = 1024

// build creates the original database of the corpus at path from seed:
// a rowid table with an INTEGER PRIMARY KEY and overflowing blobs, a large
// rowid table (several b-tree levels), a WITHOUT ROWID table, a full-text
// table, indexes, a view and a trigger. mode is "delete" or "wal"; with
// wal, the rows of later are written after the checkpoint, so that only
// the -wal holds them, and the connection is returned open (so the -wal
// stays); otherwise nil.
func build(t testing.TB, path string, seed int64, mode string, later func(*sql.DB)) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", testdb.DSN(path, fmt.Sprintf("_pragma=page_size(%d)", pageSize), "_pragma=journal_mode("+mode+")"))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	rng := rand.New(rand.NewSource(seed))
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + rng.Intn(26))
		}
		return string(b)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT NOT NULL, score REAL, data BLOB, n INTEGER)")
	exec("CREATE TABLE big(a INTEGER, b TEXT, c TEXT)")
	exec("CREATE TABLE kv(k TEXT PRIMARY KEY, v INTEGER, w TEXT) WITHOUT ROWID")
	exec("CREATE VIRTUAL TABLE docs USING fts5(title, body)")
	exec("CREATE INDEX big_b ON big(b)")
	exec("CREATE INDEX items_name ON items(name)")
	exec("CREATE VIEW v_items AS SELECT id, name FROM items WHERE n > 5")
	exec("CREATE TABLE audit(x INTEGER)")
	exec("CREATE TRIGGER items_ins AFTER INSERT ON items BEGIN INSERT INTO audit VALUES (new.id); END")
	exec("BEGIN")
	for i := 1; i <= 600; i++ {
		var data any
		switch {
		case i%40 == 0:
			data = bytes.Repeat([]byte(word(7)), 500) // 3500 bytes: overflow pages
		case i%7 == 0:
			data = nil
		default:
			data = []byte(word(rng.Intn(30)))
		}
		exec("INSERT INTO items(id, name, score, data, n) VALUES(?, ?, ?, ?, ?)", i*3, word(5+rng.Intn(20)), rng.Float64()*100, data, rng.Int63n(1<<40)-(1<<39))
	}
	for i := 0; i < 3000; i++ {
		exec("INSERT INTO big(a, b, c) VALUES(?, ?, ?)", rng.Intn(1000000), word(8+rng.Intn(10)), word(rng.Intn(40)))
	}
	for i := 0; i < 600; i++ {
		exec("INSERT INTO kv(k, v, w) VALUES(?, ?, ?)", fmt.Sprintf("key-%05d-%s", i, word(6)), rng.Intn(5000), word(10+rng.Intn(30)))
	}
	for i := 0; i < 100; i++ {
		exec("INSERT INTO docs(title, body) VALUES(?, ?)", word(8), word(5)+" "+word(7)+" "+word(6))
	}
	exec("COMMIT")
	if later == nil {
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		return nil
	}
	exec("PRAGMA wal_checkpoint(TRUNCATE)")
	exec("PRAGMA wal_autocheckpoint=0")
	later(db)
	return db
}

// tables of the corpus and the query that reads each with its key first.
var tables = map[string]string{
	"items": "SELECT id, name, score, data, n FROM items",
	"big":   "SELECT rowid, a, b, c FROM big",
	"kv":    "SELECT k, v, w FROM kv",
	"docs":  "SELECT rowid, title, body FROM docs",
}

// snapshot reads every row of the corpus tables: table -> key -> row.
func snapshot(t testing.TB, path string) map[string]map[string]string {
	t.Helper()
	db, err := sql.Open("sqlite", testdb.DSN(path, "mode=ro"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]map[string]string{}
	for name, q := range tables {
		out[name] = readRows(t, db, q)
	}
	return out
}

func readRows(t testing.TB, db *sql.DB, q string) map[string]string {
	t.Helper()
	out, err := tryRows(db, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// tryRows is readRows returning the error; a table that is not there
// reads as empty.
func tryRows(db *sql.DB, q string) (map[string]string, error) {
	rows, err := db.Query(q)
	if err != nil && strings.Contains(err.Error(), "no such table") {
		return map[string]string{}, nil // not recovered
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	out := map[string]string{}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		var b strings.Builder
		for _, v := range vals[1:] {
			fmt.Fprintf(&b, "%T:%v|", v, v)
		}
		out[fmt.Sprint(vals[0])] = b.String()
	}
	return out, rows.Err()
}

// tally compares the recovered file with the original rows: per table,
// rows found with the original's content, and rows with a content (or
// key) no original row has.
type tally struct{ found, wrong, total int }

func compare(t testing.TB, path string, want map[string]map[string]string) map[string]tally {
	t.Helper()
	db, err := sql.Open("sqlite", testdb.DSN(path, "mode=ro"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]tally{}
	for name, q := range tables {
		got := readRows(t, db, q)
		var c tally
		c.total = len(want[name])
		for k, v := range got {
			if want[name][k] == v {
				c.found++
			} else {
				c.wrong++
			}
		}
		out[name] = c
	}
	var ic string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&ic); err != nil || ic != "ok" {
		t.Errorf("integrity_check of %s = %q, %v", path, ic, err)
	}
	return out
}

// pages returns the pages of b-tree name of the kind ("internal", "leaf",
// "overflow") in the original, with the dbstat table; the root first.
func pages(t testing.TB, path, name, kind string) []int64 {
	t.Helper()
	db, err := sql.Open("sqlite", testdb.DSN(path, "mode=ro"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT pageno FROM dbstat WHERE name = ? AND pagetype = ? ORDER BY path", name, kind)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var p int64
		rows.Scan(&p)
		out = append(out, p)
	}
	if len(out) == 0 {
		t.Fatalf("no %s page of %s", kind, name)
	}
	return out
}

func patch(t testing.TB, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func zeroPage(t testing.TB, path string, pg int64) {
	patch(t, path, (pg-1)*pageSize, make([]byte, pageSize))
}

// fingerprint is the names and hashes of the files in dir.
func fingerprint(t testing.TB, dir string) map[string][32]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][32]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = sha256.Sum256(b)
	}
	return out
}

// recoverInto runs salvage.Run on src into a new file in another
// directory, checking that nothing in src's directory changed, and
// returns the result and the new file.
func recoverInto(t *testing.T, src string, opts salvage.Options) (*salvage.Result, string) {
	t.Helper()
	before := fingerprint(t, filepath.Dir(src))
	to := filepath.Join(t.TempDir(), "new.db")
	opts.Source, opts.To = src, to
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := salvage.Run(ctx, opts)
	if err != nil {
		t.Fatalf("Run(%s) = %v", src, err)
	}
	after := fingerprint(t, filepath.Dir(src))
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Errorf("the source's directory changed: before %v, after %v", keys(before), keys(after))
	}
	if res.IntegrityCheck != "ok" {
		t.Errorf("Run(%s): integrity_check %q", src, res.IntegrityCheck)
	}
	return res, to
}

func keys(m map[string][32]byte) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s:%x", k, v[:4]))
	}
	sort.Strings(out)
	return out
}

func table(res *salvage.Result, name string) salvage.Table {
	for _, tb := range res.Tables {
		if tb.Name == name {
			return tb
		}
	}
	return salvage.Table{}
}

// corpusCase is a damage of the corpus: it damages the original at path
// (built from seed 1) and says what must come back.
type corpusCase struct {
	name   string
	damage func(t *testing.T, path string) // before recovery
	// missing, per table, is how many original rows may be absent at
	// most (-1: any number); a table not named must be complete.
	missing map[string]int
	loss    bool
	lost    int // rows in lost_and_found, -1 any
	check   func(t *testing.T, res *salvage.Result)
	// wrongOK is how many rows may have content no original row has (a
	// flipped byte inside a value, which no reader can see).
	wrongOK int
}

// corpus is the damage cases, small: TestRecoverCorpus asserts each, and
// TestCompareDotRecover measures SQLite's .recover on the same files.
var corpus = []corpusCase{
	{
		name: "random-byte-flips",
		damage: func(t *testing.T, p string) {
			b, _ := os.ReadFile(p)
			rng := rand.New(rand.NewSource(7))
			for range 40 {
				pg := 1 + rng.Intn(len(b)/pageSize-1)
				b[pg*pageSize+rng.Intn(pageSize)] ^= byte(1 + rng.Intn(255))
			}
			os.WriteFile(p, b, 0o644)
		},
		missing: map[string]int{"items": -1, "big": -1, "kv": -1, "docs": -1}, loss: true, lost: -1, wrongOK: 40,
	},
	{
		name: "several-zeroed-leaves",
		damage: func(t *testing.T, p string) {
			for _, pg := range pages(t, p, "big", "leaf")[10:14] {
				zeroPage(t, p, pg)
			}
		},
		missing: map[string]int{"big": 4 * 40}, loss: true,
	},
	{
		name: "several-tables-damaged",
		damage: func(t *testing.T, p string) {
			zeroPage(t, p, pages(t, p, "items", "leaf")[5])
			zeroPage(t, p, pages(t, p, "kv", "leaf")[3])
			zeroPage(t, p, pages(t, p, "big", "internal")[0])
		},
		missing: map[string]int{"items": 60, "kv": 40}, loss: true,
	},
	{
		name:   "fts5-index-damaged",
		damage: func(t *testing.T, p string) { zeroPage(t, p, pages(t, p, "docs_data", "leaf")[0]) },
	},
	{
		// The schema is larger than page 1: its rows on its own leaves
		// name the tables again.
		name: "schema-page-zeroed",
		damage: func(t *testing.T, p string) {
			patch(t, p, 100, make([]byte, pageSize-100))
		},
		missing: map[string]int{"items": 30, "big": 30, "kv": 30, "docs": 30}, loss: true, lost: -1,
	},
	{name: "intact", damage: func(*testing.T, string) {}},
	{
		name:    "zeroed-table-leaf",
		damage:  func(t *testing.T, p string) { zeroPage(t, p, pages(t, p, "items", "leaf")[3]) },
		missing: map[string]int{"items": 60}, loss: true,
	},
	{
		name:   "zeroed-root-of-large-table",
		damage: func(t *testing.T, p string) { zeroPage(t, p, pages(t, p, "big", "internal")[0]) },
		loss:   true,
		check: func(t *testing.T, res *salvage.Result) {
			if tb := table(res, "big"); tb.Attributed != 3000 {
				t.Errorf("big: %d rows attributed from orphan pages, want 3000", tb.Attributed)
			}
		},
	},
	{
		name:   "zeroed-interior-of-large-table",
		damage: func(t *testing.T, p string) { zeroPage(t, p, pages(t, p, "big", "internal")[1]) },
		loss:   true,
	},
	{
		name:   "torn-page-1-header",
		damage: func(t *testing.T, p string) { patch(t, p, 16, bytes.Repeat([]byte{0xa5}, 84)) },
		check: func(t *testing.T, res *salvage.Result) {
			if !res.PageSizeGuessed || res.PageSize != pageSize {
				t.Errorf("page size %d (guessed %v), want %d guessed", res.PageSize, res.PageSizeGuessed, pageSize)
			}
		},
	},
	{
		name: "truncated-by-a-tenth",
		damage: func(t *testing.T, p string) {
			fi, _ := os.Stat(p)
			if err := os.Truncate(p, fi.Size()-fi.Size()/10/pageSize*pageSize); err != nil {
				t.Fatal(err)
			}
		},
		missing: map[string]int{"items": -1, "big": -1, "kv": -1, "docs": -1}, loss: true, lost: -1,
	},
	{
		name: "zeroed-overflow-page",
		damage: func(t *testing.T, p string) {
			zeroPage(t, p, pages(t, p, "items", "overflow")[1])
		},
		missing: map[string]int{"items": 1}, loss: true, lost: 1,
	},
	{
		name:   "index-only-damage",
		damage: func(t *testing.T, p string) { zeroPage(t, p, pages(t, p, "big_b", "leaf")[2]) },
	},
	{
		name:    "without-rowid-leaf-zeroed",
		damage:  func(t *testing.T, p string) { zeroPage(t, p, pages(t, p, "kv", "leaf")[1]) },
		missing: map[string]int{"kv": 40}, loss: true,
	},
	{
		name:   "without-rowid-root-zeroed",
		damage: func(t *testing.T, p string) { zeroPage(t, p, pages(t, p, "kv", "internal")[0]) },
		loss:   true,
		check: func(t *testing.T, res *salvage.Result) {
			if tb := table(res, "kv"); tb.Attributed < 550 {
				t.Errorf("kv: %d rows attributed, want nearly all 600 (interior cells were lost with the root)", tb.Attributed)
			}
		},
		missing: map[string]int{"kv": 50},
	},
}

func TestRecoverCorpus(t *testing.T) {
	cases := corpus
	dir := t.TempDir()
	orig := filepath.Join(dir, "orig.db")
	build(t, orig, 1, "delete", nil)
	want := snapshot(t, orig)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "app.db")
			b, err := os.ReadFile(orig)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(src, b, 0o644); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, src)
			res, to := recoverInto(t, src, salvage.Options{})
			got := compare(t, to, want)
			for name, c := range got {
				miss, ok := tc.missing[name]
				if c.wrong > tc.wrongOK {
					t.Errorf("%s: %d rows with content no original row has", name, c.wrong)
				}
				switch {
				case !ok && c.found != c.total:
					t.Errorf("%s: %d of %d rows recovered, want all", name, c.found, c.total)
				case ok && miss >= 0 && c.total-c.found > miss:
					t.Errorf("%s: %d of %d rows recovered, want at most %d missing", name, c.found, c.total, miss)
				}
			}
			if res.Loss() != tc.loss {
				t.Errorf("Loss() = %v, want %v (%+v)", res.Loss(), tc.loss, res)
			}
			if tc.lost >= 0 && res.LostAndFound != int64(tc.lost) {
				t.Errorf("lost_and_found rows = %d, want %d", res.LostAndFound, tc.lost)
			}
			if tc.check != nil {
				tc.check(t, res)
			}
			t.Logf("%s: %+v", tc.name, got)
		})
	}
}

// TestRecoverWAL recovers rows that only the -wal's committed frames hold,
// and leaves the uncommitted ones.
func TestRecoverWAL(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "app.db")
	db := build(t, src, 2, "wal", func(db *sql.DB) {
		for i := 0; i < 200; i++ {
			if _, err := db.Exec("INSERT INTO big(a, b, c) VALUES(?, 'walrow', 'x')", 7000000+i); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.Exec("UPDATE items SET name = 'changed-in-wal' WHERE id = 30"); err != nil {
			t.Fatal(err)
		}
	})
	want := snapshot(t, src)
	// A copy of the files while the connection holds them: the -wal is
	// not checkpointed.
	cp := filepath.Join(t.TempDir(), "copy.db")
	for _, suf := range []string{"", "-wal"} {
		b, err := os.ReadFile(src + suf)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cp+suf, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	res, to := recoverInto(t, cp, salvage.Options{})
	if res.WALFrames == 0 {
		t.Errorf("WALFrames = 0, want the committed frames")
	}
	for name, c := range compare(t, to, want) {
		if c.found != c.total || c.wrong != 0 {
			t.Errorf("%s: %+v, want all %d rows with the -wal's content", name, c, c.total)
		}
	}
	if len(want["big"]) != 3200 {
		t.Fatalf("the original has %d rows in big, want 3200", len(want["big"]))
	}
}

// TestRecoverByteFlips flips random bytes in random pages: recovery must
// finish, NEW pass integrity_check, and rows with wrong content be no
// more than the bytes flipped (a flip inside a value SQLite cannot see
// either).
func TestRecoverByteFlips(t *testing.T) {
	dir := t.TempDir()
	orig := filepath.Join(dir, "orig.db")
	build(t, orig, 3, "delete", nil)
	want := snapshot(t, orig)
	b, _ := os.ReadFile(orig)
	for seed := int64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			d := append([]byte(nil), b...)
			const flips = 40
			for range flips {
				pg := 1 + rng.Intn(len(d)/pageSize-1)
				d[pg*pageSize+rng.Intn(pageSize)] ^= byte(1 + rng.Intn(255))
			}
			src := filepath.Join(t.TempDir(), "app.db")
			os.WriteFile(src, d, 0o644)
			_, to := recoverInto(t, src, salvage.Options{})
			wrong, found := 0, 0
			for _, c := range compare(t, to, want) {
				wrong += c.wrong
				found += c.found
			}
			if wrong > flips {
				t.Errorf("%d rows with wrong content after %d flipped bytes", wrong, flips)
			}
			t.Logf("seed %d: %d rows recovered intact, %d with wrong content", seed, found, wrong)
		})
	}
}

// TestRecoverHostile: pointer loops, huge cell counts and a page size
// that lies stay bounded in time and never crash.
func TestRecoverHostile(t *testing.T) {
	dir := t.TempDir()
	orig := filepath.Join(dir, "orig.db")
	build(t, orig, 4, "delete", nil)
	b, _ := os.ReadFile(orig)
	u32 := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
	cases := map[string]func(t *testing.T, p string){
		"interior-loop": func(t *testing.T, p string) {
			root := pages(t, p, "big", "internal")[0]
			patch(t, p, (root-1)*pageSize+8, u32(uint32(root))) // right child: itself
		},
		"child-loop": func(t *testing.T, p string) {
			in := pages(t, p, "big", "internal")
			patch(t, p, (in[1]-1)*pageSize+8, u32(uint32(in[0]))) // back to the root
		},
		"overflow-loop": func(t *testing.T, p string) {
			ov := pages(t, p, "items", "overflow")[0]
			patch(t, p, (ov-1)*pageSize, u32(uint32(ov)))
		},
		"huge-cell-count": func(t *testing.T, p string) {
			for _, pg := range pages(t, p, "big", "leaf")[:5] {
				patch(t, p, (pg-1)*pageSize+3, []byte{0xff, 0xff})
			}
		},
		"page-size-lies": func(t *testing.T, p string) { patch(t, p, 16, []byte{0x02, 0x00}) }, // 512
		"page-count-lies": func(t *testing.T, p string) {
			patch(t, p, 28, u32(1<<30))
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "app.db")
			os.WriteFile(src, b, 0o644)
			damage(t, src)
			start := time.Now()
			_, _ = recoverInto(t, src, salvage.Options{})
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("recovery took %s", d)
			}
		})
	}
}

// TestRecoverPageSizeLies: a header whose page size is another valid
// power of two, while its page count times the real page size is the
// file's size, is not trusted: the page size is found from the b-tree
// pages and every row comes back.
func TestRecoverPageSizeLies(t *testing.T) {
	dir := t.TempDir()
	orig := filepath.Join(dir, "orig.db")
	build(t, orig, 4, "delete", nil)
	want := snapshot(t, orig)
	b, _ := os.ReadFile(orig)
	for _, lie := range [][]byte{{0x02, 0x00}, {0x10, 0x00}, {0x00, 0x01}} { // 512, 4096, 65536
		t.Run(fmt.Sprintf("%x", lie), func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "app.db")
			os.WriteFile(src, b, 0o644)
			patch(t, src, 16, lie)
			res, to := recoverInto(t, src, salvage.Options{})
			if res.PageSize != pageSize {
				t.Errorf("page size %d, want %d", res.PageSize, pageSize)
			}
			for name, c := range compare(t, to, want) {
				if c.found != c.total || c.wrong != 0 {
					t.Errorf("%s: %+v, want every row", name, c)
				}
			}
		})
	}
}

// TestRecoverCellCountShort: a leaf whose cell count was lowered still
// holds the cells no pointer names (SQLite's integrity_check sees the
// space unaccounted for): the rows they hold are missing, and Loss says
// so rather than exit 0.
func TestRecoverCellCountShort(t *testing.T) {
	src := filepath.Join(t.TempDir(), "app.db")
	build(t, src, 4, "delete", nil)
	leaf := pages(t, src, "big", "leaf")[0]
	b, _ := os.ReadFile(src)
	n := binary.BigEndian.Uint16(b[(leaf-1)*pageSize+3:])
	patch(t, src, (leaf-1)*pageSize+3, binary.BigEndian.AppendUint16(nil, n/2))
	res, _ := recoverInto(t, src, salvage.Options{})
	if !res.Loss() {
		t.Errorf("Loss() = false with %d of the %d cells of page %d unnamed", n-n/2, n, leaf)
	}
	// On an interior page the unnamed cells are children, read as
	// orphans: every row is back and nothing is lost.
	src = filepath.Join(t.TempDir(), "app.db")
	build(t, src, 4, "delete", nil)
	want := snapshot(t, src)
	in := pages(t, src, "big", "internal")[0]
	b, _ = os.ReadFile(src)
	n = binary.BigEndian.Uint16(b[(in-1)*pageSize+3:])
	patch(t, src, (in-1)*pageSize+3, binary.BigEndian.AppendUint16(nil, n/2))
	res, to := recoverInto(t, src, salvage.Options{})
	if c := compare(t, to, want)["big"]; c.found != c.total || res.Loss() {
		t.Errorf("interior page %d's cell count halved: big %+v, Loss() = %v, want every row and no loss", in, c, res.Loss())
	}
}

// TestRecoverSchemaFrom rebuilds tables from --schema-from when the
// schema page is gone: rows come back from their pages by shape.
func TestRecoverSchemaFrom(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "app.db")
	build(t, src, 5, "delete", nil)
	want := snapshot(t, src)
	empty := filepath.Join(t.TempDir(), "schema.db")
	db := build(t, empty, 5, "delete", func(*sql.DB) {})
	db.Exec("DELETE FROM items")
	db.Exec("DELETE FROM big")
	db.Exec("DELETE FROM kv")
	db.Exec("DELETE FROM docs")
	db.Close()
	// The schema's b-tree is page 1 after its header: zero it.
	patch(t, src, 100, make([]byte, pageSize-100))
	res, to := recoverInto(t, src, salvage.Options{SchemaFrom: empty})
	got := compare(t, to, want)
	if c := got["big"]; c.found != c.total || c.wrong != 0 {
		t.Errorf("big: %+v, want all rows back by shape", c)
	}
	if c := got["items"]; c.found < c.total*9/10 || c.wrong != 0 {
		t.Errorf("items: %+v, want nearly all rows back by shape", c)
	}
	if !res.Loss() {
		t.Errorf("Loss() = false with the schema page gone")
	}
}

func TestRecoverBadInput(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "app.db")
	build(t, src, 6, "delete", nil)
	ctx := context.Background()
	if _, err := salvage.Run(ctx, salvage.Options{Source: src, To: src}); err == nil {
		t.Errorf("Run with --to the source: no error")
	}
	junk := filepath.Join(dir, "junk")
	os.WriteFile(junk, bytes.Repeat([]byte("not a database "), 1000), 0o644)
	if _, err := salvage.Run(ctx, salvage.Options{Source: junk, To: filepath.Join(dir, "n.db")}); err == nil {
		t.Errorf("Run on a text file: no error")
	}
	if _, err := os.Stat(filepath.Join(dir, "n.db")); err == nil {
		t.Errorf("Run on a text file left n.db")
	}
}

// TestRecoverGuard: a process with the source open refuses the recovery
// (ErrRefused, reason writer), whatever --allow-unverified says; nothing
// is written.
func TestRecoverGuard(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "app.db")
	build(t, src, 7, "delete", nil)
	w := startWriter(t, src)
	w.Do(t, "BEGIN; SELECT count(*) FROM items; COMMIT")
	before := fingerprint(t, dir)
	to := filepath.Join(t.TempDir(), "new.db")
	g := &preflight.Options{Writers: preflight.WriterOptions{Docker: docker.Options{Mode: docker.ModeOff}, Kube: kube.Options{Mode: kube.ModeOff}}}
	res, err := salvage.Run(context.Background(), salvage.Options{Source: src, To: to, Guard: g, AllowUnverified: true})
	if !errors.Is(err, salvage.ErrRefused) {
		t.Fatalf("Run with a writer = %v, want ErrRefused", err)
	}
	var reasons []string
	for _, r := range res.Refusals {
		reasons = append(reasons, r.Reason)
	}
	if !slices.Contains(reasons, "writer") {
		t.Errorf("refusals %q, want writer", reasons)
	}
	if _, err := os.Stat(to); err == nil {
		t.Errorf("refused, yet %s was created", to)
	}
	if fmt.Sprint(before) != fmt.Sprint(fingerprint(t, dir)) {
		t.Errorf("the source's directory changed")
	}
	w.Stop()
	res, err = salvage.Run(context.Background(), salvage.Options{Source: src, To: to, Guard: g, AllowUnverified: true})
	if err != nil || res.Loss() {
		t.Fatalf("Run with the writer gone = %v (loss %v), want a recovery", err, res != nil && res.Loss())
	}
}

// TestRecoverSchemaVariety: an intact database with the shapes a schema
// can take comes back row for row: rows written before ALTER TABLE ADD
// COLUMN (shorter records), stored and virtual generated columns, an
// AUTOINCREMENT table (sqlite_sequence), an external-content FTS5 table,
// a UTF-16 database, auto_vacuum's pointer-map pages, every serial type.
func TestRecoverSchemaVariety(t *testing.T) {
	for _, enc := range []string{"UTF-8", "UTF-16le"} {
		t.Run(enc, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "app.db")
			db, err := sql.Open("sqlite", testdb.DSN(src))
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{
				"PRAGMA page_size=1024",
				"PRAGMA auto_vacuum=1",
				"PRAGMA encoding='" + enc + "'",
				"CREATE TABLE a(id INTEGER PRIMARY KEY AUTOINCREMENT, x TEXT)",
				"INSERT INTO a(x) VALUES ('one'), ('two'), (NULL)",
				"ALTER TABLE a ADD COLUMN y INTEGER DEFAULT 42",
				"INSERT INTO a(x, y) VALUES ('three', 3)",
				"CREATE TABLE g(p REAL, q INTEGER, s TEXT GENERATED ALWAYS AS (q * 2) STORED, v TEXT GENERATED ALWAYS AS (p || 'x') VIRTUAL, r BLOB)",
				"INSERT INTO g(p, q, r) VALUES (1.5, 7, x'00ff'), (-2.25, -1, x''), (0, 0, NULL), (1e300, 9223372036854775807, zeroblob(3000)), (3, -9223372036854775808, 'text in blob')",
				"CREATE TABLE body(id INTEGER PRIMARY KEY, t TEXT)",
				"INSERT INTO body VALUES (1, 'alpha beta'), (2, 'gamma delta'), (5, 'épsilon ζeta')",
				"CREATE VIRTUAL TABLE ft USING fts5(t, content='body', content_rowid='id')",
				"INSERT INTO ft(ft) VALUES ('rebuild')",
			} {
				if _, err := db.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			db.Close()
			queries := map[string]string{
				"a":   "SELECT id, x, y FROM a",
				"g":   "SELECT rowid, p, q, s, v, r FROM g",
				"seq": "SELECT name, seq FROM sqlite_sequence",
				"ft":  "SELECT rowid, t FROM ft WHERE ft MATCH 'gamma OR ζeta'",
			}
			read := func(path string) map[string]map[string]string {
				db, err := sql.Open("sqlite", testdb.DSN(path, "mode=ro"))
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				out := map[string]map[string]string{}
				for k, q := range queries {
					out[k] = readRows(t, db, q)
				}
				return out
			}
			want := read(src)
			res, to := recoverInto(t, src, salvage.Options{})
			if res.Loss() || res.PageSize != 1024 {
				t.Errorf("Loss() on an intact database, or not its page size: %+v", res)
			}
			got := read(to)
			for k := range queries {
				for key, w := range want[k] {
					if got[k][key] != w {
						t.Errorf("%s row %s: got %.200q, want %.200q", k, key, got[k][key], w)
					}
				}
				if len(got[k]) != len(want[k]) {
					t.Errorf("%s: %d rows, want %d", k, len(got[k]), len(want[k]))
				}
			}
		})
	}
}

// TestRecoverHotJournal: files copied in the middle of a transaction whose
// cache spilled into the database file (a crash then) hold a hot
// -journal; the recovery reads them as the rollback would leave them: the
// rows before the transaction, none of its changes, and the source and
// its -journal untouched.
func TestRecoverHotJournal(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "live.db")
	build(t, src, 8, "delete", nil)
	want := snapshot(t, src)
	db, err := sql.Open("sqlite", testdb.DSN(src, "_pragma=cache_size(2)"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	cp := filepath.Join(t.TempDir(), "crashed.db")
	for _, q := range []string{"BEGIN", "UPDATE big SET c = 'changed ' || c", "DELETE FROM items WHERE id % 2 = 0", "INSERT INTO kv VALUES ('zzz', 1, 'new')"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, suf := range []string{"", "-journal"} {
		b, err := os.ReadFile(src + suf)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cp+suf, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db.Exec("ROLLBACK")
	if fi, err := os.Stat(cp + "-journal"); err != nil || fi.Size() < 10*pageSize {
		t.Fatalf("the copy's -journal: %v (want the transaction's original pages)", err)
	}
	changed, _ := os.ReadFile(cp)
	orig, _ := os.ReadFile(src)
	if bytes.Equal(changed, orig) {
		t.Fatalf("the cache did not spill: the copied database file is the original")
	}
	res, to := recoverInto(t, cp, salvage.Options{})
	if res.JournalPages == 0 {
		t.Errorf("JournalPages = 0, want the hot journal applied")
	}
	for name, c := range compare(t, to, want) {
		if c.found != c.total || c.wrong != 0 {
			t.Errorf("%s: %+v, want all %d rows as before the transaction", name, c, c.total)
		}
	}
}

// TestRecoverDeadline: a context that ends stops the recovery, which
// removes the new file (and its journal) and leaves the source alone.
func TestRecoverDeadline(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "app.db")
	build(t, src, 9, "delete", nil)
	before := fingerprint(t, dir)
	out := t.TempDir()
	to := filepath.Join(out, "new.db")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := salvage.Run(ctx, salvage.Options{Source: src, To: to})
	if err == nil {
		t.Skip("the recovery finished within 30 ms: nothing to interrupt")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run returned %s after its deadline", d)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("after %v, %s holds %v; want the new file removed", err, out, ents)
	}
	if fmt.Sprint(before) != fmt.Sprint(fingerprint(t, dir)) {
		t.Errorf("the source's directory changed")
	}
}

// TestRecoverTwinTables: two tables of the same shape; the pages under a
// zeroed root or interior page of one go back to that one (the rowid
// range its b-tree lost), not to lost_and_found as a tie of shapes.
func TestRecoverTwinTables(t *testing.T) {
	dir := t.TempDir()
	orig := filepath.Join(dir, "orig.db")
	db, err := sql.Open("sqlite", testdb.DSN(orig, fmt.Sprintf("_pragma=page_size(%d)", pageSize)))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE twin_a(id INTEGER PRIMARY KEY, v TEXT)",
		"CREATE TABLE twin_b(id INTEGER PRIMARY KEY, v TEXT)",
		"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 20000) INSERT INTO twin_a SELECT x, printf('a row %d', x) FROM c",
		"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 20000) INSERT INTO twin_b SELECT x + 50000, printf('b row %d', x) FROM c",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	read := func(path, table string) map[string]string {
		db, _ := sql.Open("sqlite", testdb.DSN(path, "mode=ro"))
		defer db.Close()
		return readRows(t, db, "SELECT id, v FROM "+table)
	}
	want := read(orig, "twin_b")
	b, _ := os.ReadFile(orig)
	for i, which := range []string{"root", "interior"} {
		t.Run(which, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "app.db")
			os.WriteFile(src, b, 0o644)
			zeroPage(t, src, pages(t, src, "twin_b", "internal")[i])
			res, to := recoverInto(t, src, salvage.Options{})
			got := read(to, "twin_b")
			if fmt.Sprint(got) != fmt.Sprint(want) || res.LostAndFound != 0 || len(read(to, "twin_a")) != 20000 {
				t.Errorf("twin_b: %d of %d rows (equal: %v), twin_a %d of 20000, lost_and_found %d; want all in their tables",
					len(got), len(want), fmt.Sprint(got) == fmt.Sprint(want), len(read(to, "twin_a")), res.LostAndFound)
			}
		})
	}
}

// TestRecoverConstraintFails: rows a constraint of the new schema refuses
// go to lost_and_found one by one, and the rest of their batch into the
// table.
func TestRecoverConstraintFails(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "app.db")
	db, _ := sql.Open("sqlite", testdb.DSN(src))
	db.Exec("CREATE TABLE t(a INTEGER, b TEXT)")
	db.Exec("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 1000) INSERT INTO t SELECT x, 'v' || x FROM c")
	db.Close()
	schema := filepath.Join(t.TempDir(), "schema.db")
	db, _ = sql.Open("sqlite", testdb.DSN(schema))
	db.Exec("CREATE TABLE t(a INTEGER CHECK (a % 10 <> 0), b TEXT)")
	db.Close()
	res, to := recoverInto(t, src, salvage.Options{SchemaFrom: schema})
	n, _ := sql.Open("sqlite", testdb.DSN(to, "mode=ro"))
	defer n.Close()
	var rows, bad int
	n.QueryRow("SELECT count(*) FROM t").Scan(&rows)
	n.QueryRow("SELECT count(*) FROM lost_and_found WHERE source_table = 't' AND reason LIKE 'insert failed: %CHECK%'").Scan(&bad)
	if rows != 900 || bad != 100 || res.LostAndFound != 100 || table(res, "t").LostAndFound != 100 {
		t.Errorf("t: %d rows, %d in lost_and_found for the CHECK (result %d, table %d); want 900 and 100", rows, bad, res.LostAndFound, table(res, "t").LostAndFound)
	}
}

// TestRecoverReplace: --replace backs the source, its -wal and -shm up,
// removes the -wal and -shm (they belong to the old file), renames NEW
// over the source and verifies it; with rows lost it refuses
// (ErrStranded) unless AcceptLoss, and the source stays as it was.
// TestRecoverReplaceSymlink: --replace of a source that is a symlink
// would rename NEW over the link and leave the database it points to
// damaged; it is refused, the link and its database as they were.
func TestRecoverReplaceSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "data", "app.db")
	os.Mkdir(filepath.Dir(real), 0o755)
	build(t, real, 4, "delete", nil)
	before, _ := os.ReadFile(real)
	link := filepath.Join(dir, "app.db")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	opts := salvage.Options{Source: link, To: link + ".recovered"}
	ctx := context.Background()
	res, err := salvage.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := salvage.Replace(ctx, opts, salvage.ReplaceOptions{}, res); err == nil {
		t.Errorf("Replace of a symlinked source: no error")
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("%s is no longer the symlink: %v", link, err)
	}
	if after, _ := os.ReadFile(real); !bytes.Equal(before, after) {
		t.Errorf("%s changed", real)
	}
}

func TestRecoverReplace(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(t.TempDir(), "live.db")
	db := build(t, live, 10, "wal", func(db *sql.DB) {
		db.Exec("INSERT INTO big(a, b, c) VALUES (1, 'only in the wal', '')")
	})
	want := snapshot(t, live)
	src := filepath.Join(dir, "app.db")
	for _, suf := range []string{"", "-wal"} {
		b, _ := os.ReadFile(live + suf)
		os.WriteFile(src+suf, b, 0o644)
	}
	db.Close()
	walBytes, _ := os.ReadFile(src + "-wal")
	opts := salvage.Options{Source: src, To: src + ".recovered"}
	ctx := context.Background()
	res, err := salvage.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := salvage.Replace(ctx, opts, salvage.ReplaceOptions{}, res)
	if err != nil || rep.IntegrityCheck != "ok" || !rep.RowsMatch {
		t.Fatalf("Replace = %+v, %v; want verified", rep, err)
	}
	for _, suf := range []string{"-wal", "-shm", ".recovered"} {
		if _, err := os.Lstat(src + suf); err == nil {
			t.Errorf("%s%s is still there after the replacement", src, suf)
		}
	}
	if b, err := os.ReadFile(filepath.Join(rep.Backup.Dir, "app.db-wal")); err != nil || !bytes.Equal(b, walBytes) {
		t.Errorf("the backup's -wal: %v (equal %v), want the original's", err, bytes.Equal(b, walBytes))
	}
	for name, c := range compare(t, src, want) {
		if c.found != c.total || c.wrong != 0 {
			t.Errorf("%s after the replacement: %+v", name, c)
		}
	}

	// A lossy recovery is not put in place without AcceptLoss.
	zeroPage(t, src, pages(t, src, "items", "leaf")[2])
	before, _ := os.ReadFile(src)
	opts.To = src + ".again"
	res, err = salvage.Run(ctx, opts)
	if err != nil || !res.Loss() {
		t.Fatalf("Run on a zeroed leaf = %v, loss %v", err, res != nil && res.Loss())
	}
	if _, err := salvage.Replace(ctx, opts, salvage.ReplaceOptions{}, res); !errors.Is(err, salvage.ErrStranded) {
		t.Errorf("Replace with rows lost = %v, want ErrStranded", err)
	}
	if after, _ := os.ReadFile(src); !bytes.Equal(before, after) {
		t.Errorf("the source changed although the replacement was refused")
	}
	rep, err = salvage.Replace(ctx, opts, salvage.ReplaceOptions{AcceptLoss: true, Now: func() time.Time { return time.Now().Add(time.Hour) }}, res)
	if err != nil || rep.IntegrityCheck != "ok" || !rep.RowsMatch {
		t.Errorf("Replace with AcceptLoss = %+v, %v", rep, err)
	}
}

// TestRecoverHostileRandom: pages copied over others (a page reached
// twice, trees crossing), random child and overflow pointers, a file cut
// anywhere: each recovery finishes within its deadline, never panics, and
// what it writes passes integrity_check.
func TestRecoverHostileRandom(t *testing.T) {
	dir := t.TempDir()
	orig := filepath.Join(dir, "orig.db")
	build(t, orig, 12, "delete", nil)
	b, _ := os.ReadFile(orig)
	n := len(b) / pageSize
	for it := 0; it < 24; it++ {
		rng := rand.New(rand.NewSource(int64(it)))
		d := append([]byte(nil), b...)
		switch it % 4 {
		case 0:
			for range 20 {
				copy(d[rng.Intn(n)*pageSize:], d[rng.Intn(n)*pageSize:][:pageSize])
			}
		case 1:
			for range 30 {
				binary.BigEndian.PutUint32(d[rng.Intn(n)*pageSize+8:], uint32(rng.Intn(n+5)))
			}
		case 2:
			for range 30 {
				binary.BigEndian.PutUint32(d[rng.Intn(n)*pageSize+rng.Intn(pageSize-4):], uint32(rng.Intn(n+5)))
			}
		case 3:
			d = d[:pageSize+rng.Intn(len(d)-pageSize)]
		}
		src := filepath.Join(t.TempDir(), "app.db")
		os.WriteFile(src, d, 0o644)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		start := time.Now()
		res, err := salvage.Run(ctx, salvage.Options{Source: src, To: filepath.Join(t.TempDir(), "new.db")})
		cancel()
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("damage %d: %s", it, d)
		}
		if err != nil {
			t.Errorf("damage %d: %v", it, err)
		} else if res.IntegrityCheck != "ok" {
			t.Errorf("damage %d: integrity_check %q", it, res.IntegrityCheck)
		}
	}
}

// TestRecoverSchemaLeaves: a schema too large for page 1 (sixty tables
// with long definitions) has leaves of its own; with page 1 zeroed, the
// header and the schema's root with it, the schema rows on those leaves
// name the tables again, and their rows come back without --schema-from.
func TestRecoverSchemaLeaves(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "app.db")
	db, err := sql.Open("sqlite", testdb.DSN(src, fmt.Sprintf("_pragma=page_size(%d)", pageSize)))
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 120)
	for i := range 60 {
		q := fmt.Sprintf("CREATE TABLE t%02d(id INTEGER PRIMARY KEY, v TEXT DEFAULT '%s', n%d INTEGER)", i, pad, i)
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(fmt.Sprintf("INSERT INTO t%02d(v, n%d) VALUES ('row of %d', %d)", i, i, i, i)); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	zeroPage(t, src, 1)
	res, to := recoverInto(t, src, salvage.Options{})
	n, _ := sql.Open("sqlite", testdb.DSN(to, "mode=ro"))
	defer n.Close()
	var tablesBack, rowsBack int
	n.QueryRow("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name LIKE 't%'").Scan(&tablesBack)
	for i := range 60 {
		var v string
		if n.QueryRow(fmt.Sprintf("SELECT v FROM t%02d WHERE id = 1", i)).Scan(&v) == nil && v == fmt.Sprintf("row of %d", i) {
			rowsBack++
		}
	}
	// Page 1 held the schema's first rows too: those tables are gone.
	if tablesBack < 40 || rowsBack != tablesBack || !res.Loss() {
		t.Errorf("%d of 60 tables back, %d with their row; loss %v; want most tables, each with its row, and a loss", tablesBack, rowsBack, res.Loss())
	}
	t.Logf("%d of 60 tables back, %d rows; notes %v", tablesBack, rowsBack, res.Notes)
}
