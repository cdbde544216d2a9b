package health_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/health"
)

// pokeByte overwrites one byte of the file at path.
func pokeByte(t testing.TB, path string, off int64, b byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte{b}, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// badFragmentation sets the fragmented-bytes count (b-tree page header
// byte 7) of a leaf page of object name to 60, which integrity_check and
// quick_check report as "Fragmentation of F bytes reported as 60 on page
// N", a message that names the page but not its b-tree.
func badFragmentation(t testing.TB, path, name string) int64 {
	t.Helper()
	_, ps := rootPage(t, path, name)
	pg := leafPage(t, path, name)
	pokeByte(t, path, (pg-1)*ps+7, 60)
	return pg
}

// TestCheckIntegrityTiesPageToOwner: a message naming only a page ("...
// on page N") is damage to the b-tree that owns page N, over databases
// made by the Go driver and by sqlite3.
func TestCheckIntegrityTiesPageToOwner(t *testing.T) {
	sqlite3 := requireTool(t, "sqlite3")
	for _, tc := range []struct {
		name, obj   string
		make        func(t testing.TB, path string)
		kind, table string
	}{
		{name: "sqlite3 index ax", obj: "ax", make: func(t testing.TB, path string) {
			out, err := exec.Command(sqlite3, path, `pragma journal_mode=delete; create table t(id integer primary key, a text);
				create index ax on t(a);
				with recursive c(x) as (select 1 union all select x+1 from c where x < 3000) insert into t(a) select printf('v%06d', x) from c;`).CombinedOutput()
			if err != nil {
				t.Fatalf("sqlite3: %v: %s", err, out)
			}
		}, kind: health.KindIndex, table: "t"},
		{name: "driver index idx_a", obj: "idx_a", make: makeFixture, kind: health.KindIndex, table: "t"},
		{name: "driver table t", obj: "t", make: makeFixture, kind: health.KindTable, table: "t"},
		{name: "driver fts5 docs_data", obj: "docs_data", make: makeFixture, kind: health.KindFTS, table: "docs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "i.db")
			tc.make(t, path)
			pg := badFragmentation(t, path, tc.obj)
			root, _ := rootPage(t, path, tc.obj)
			for _, full := range []bool{false, true} {
				got := health.CheckIntegrity(context.Background(), path, health.Options{Full: full})
				t.Logf("Full=%v: messages %q, owners %v, damage %q, walk err %q", full, got.Messages, got.PageOwners, kinds(got.Damage), got.PageWalkErr)
				if !strings.Contains(strings.Join(got.Messages, "\n"), fmt.Sprintf("on page %d", pg)) {
					t.Fatalf("CheckIntegrity(Full=%v).Messages = %q, want one about page %d", full, got.Messages, pg)
				}
				if diff := cmp.Diff([]int64{root}, got.PageOwners[pg]); diff != "" {
					t.Errorf("CheckIntegrity(Full=%v).PageOwners[%d] (-want +got):\n%s", full, pg, diff)
				}
				if len(got.Damage) != 1 {
					t.Fatalf("CheckIntegrity(Full=%v).Damage = %q, want one for %s", full, kinds(got.Damage), tc.obj)
				}
				d := got.Damage[0]
				if d.Kind != tc.kind || d.Object != tc.obj || d.Table != tc.table || d.Repair != "" {
					t.Errorf("CheckIntegrity(Full=%v).Damage[0] = %+v, want kind %s, object %s, table %s, no repair text", full, d, tc.kind, tc.obj, tc.table)
				}
			}
			if tc.kind != health.KindIndex {
				return
			}
			// The repair offered does repair it.
			out, err := exec.Command(sqlite3, path, "REINDEX "+tc.obj+"; PRAGMA integrity_check;").CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "ok" {
				t.Errorf("sqlite3 REINDEX %s; PRAGMA integrity_check = %q, %v, want ok", tc.obj, out, err)
			}
		})
	}
}

// TestPageOwnersMatchesDbstat: the raw walk over the file's pages gives
// every b-tree page (interior, leaf, overflow) the owner SQLite's dbstat
// gives it, and free pages no owner.
func TestPageOwnersMatchesDbstat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	makeFixture(t, path)
	execDB(t, path,
		"create table big(id integer primary key, b blob)",
		"create index big_b on big(b)",
		`with recursive c(x) as (select 1 union all select x+1 from c where x < 40) insert into big(b) select randomblob(900 + x * 150) from c`,
		"delete from t where id % 3 = 0", // free pages
	)
	db, err := sql.Open("sqlite", testdb.DSN(path, "mode=ro"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want := map[int64][]int64{}
	rows, err := db.Query(`select d.pageno, coalesce(m.rootpage, 1) from dbstat d left join sqlite_master m on m.name = d.name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var pg, root int64
		if err := rows.Scan(&pg, &root); err != nil {
			t.Fatal(err)
		}
		want[pg] = []int64{root}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var roots []int64
	rs, err := db.Query(`select rootpage from sqlite_master where rootpage > 0 order by rootpage`)
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var r int64
		if err := rs.Scan(&r); err != nil {
			t.Fatal(err)
		}
		roots = append(roots, r)
	}
	var free int
	if err := db.QueryRow("pragma freelist_count").Scan(&free); err != nil || free == 0 {
		t.Fatalf("freelist_count = %d, %v: want free pages", free, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const ps = 4096
	count := uint32(len(b) / ps)
	var all []int64
	for p := int64(1); p <= int64(count); p++ {
		all = append(all, p)
	}
	read := func(pg uint32) ([]byte, error) { return b[(pg-1)*ps : pg*ps], nil }
	got, err := health.PageOwners(read, append([]int64{1}, roots...), all, count, ps)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PageOwners over %d pages (%d free) differs from dbstat (-dbstat +walk):\n%s", count, free, diff)
	}
}

// TestClassifyOwned: a page-numbered message is damage to each b-tree
// owning the page; a page no b-tree owns is page-accounting damage; without
// owners the message stays unclassified.
func TestClassifyOwned(t *testing.T) {
	schema := []health.SchemaEntry{
		{Type: "table", Name: "t", TblName: "t", RootPage: 2},
		{Type: "index", Name: "ax", TblName: "t", RootPage: 3},
	}
	frag := "Fragmentation of 1136 bytes reported as 0 on page 12"
	multi := "Multiple uses for byte 400 of page 9"
	for _, tc := range []struct {
		msg    string
		owners map[int64][]int64
		want   []string
	}{
		{frag, map[int64][]int64{12: {3}}, []string{"index:ax"}},
		{frag, map[int64][]int64{12: {2}}, []string{"table:t"}},
		{frag, map[int64][]int64{12: {}}, []string{"structural:"}},
		{frag, nil, []string{"unknown:"}},
		{multi, map[int64][]int64{9: {3}}, []string{"index:ax"}},
		{"2nd reference to page 9", map[int64][]int64{9: {2, 3}}, []string{"structural:", "table:t", "index:ax"}},
		{"Page 9: btreeInitPage() returns error code 11", map[int64][]int64{9: {3}}, []string{"index:ax"}},
		{"Page 9: never used", map[int64][]int64{}, []string{"structural:"}},
	} {
		got := kinds(health.ClassifyOwned([]string{tc.msg}, schema, tc.owners))
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ClassifyOwned(%q, owners %v) (-want +got):\n%s", tc.msg, tc.owners, diff)
		}
	}
}
