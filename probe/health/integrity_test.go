package health_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/health"
)

// makeFixture creates a rollback-mode database at path with a table t
// (2000 rows), an index idx_a on t(a) and an FTS5 table docs (3000 rows).
func makeFixture(t testing.TB, path string) {
	t.Helper()
	execDB(t, path,
		"pragma journal_mode=delete",
		"create table t(id integer primary key, a text, b text)",
		"create index idx_a on t(a)",
		"create virtual table docs using fts5(body)",
		`with recursive c(x) as (select 1 union all select x+1 from c where x < 2000)
		 insert into t(a, b) select printf('a%05d', x), printf('%0100d', x) from c`,
		`with recursive c(x) as (select 1 union all select x+1 from c where x < 3000)
		 insert into docs(body) select 'word' || (x % 97) || ' other' || (x % 13) || ' text ' || x from c`,
	)
}

// leafPage returns a leaf page of object name (not its root), found with
// the dbstat virtual table.
func leafPage(t testing.TB, path, name string) int64 {
	t.Helper()
	db, err := sql.Open("sqlite", testdb.DSN(path, "mode=ro"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var pg int64
	err = db.QueryRow(`select pageno from dbstat where name = ? and pagetype = 'leaf' order by pageno limit 1 offset 1`, name).Scan(&pg)
	if err != nil {
		t.Fatalf("leaf page of %s: %v", name, err)
	}
	return pg
}

func kinds(ds []health.Damage) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Kind+":"+d.Object)
	}
	return out
}

func TestCheckIntegrityClassifiesDamage(t *testing.T) {
	for _, tc := range []struct {
		name      string
		corrupt   func(t *testing.T, path string)
		wantKind  string
		wantObj   string
		wantTable string
	}{
		{
			name: "index leaf zeroed",
			corrupt: func(t *testing.T, path string) {
				_, ps := rootPage(t, path, "idx_a")
				zeroPage(t, path, leafPage(t, path, "idx_a"), ps)
			},
			wantKind: health.KindIndex, wantObj: "idx_a", wantTable: "t",
		},
		{
			name: "table leaf zeroed",
			corrupt: func(t *testing.T, path string) {
				_, ps := rootPage(t, path, "t")
				zeroPage(t, path, leafPage(t, path, "t"), ps)
			},
			wantKind: health.KindTable, wantObj: "t", wantTable: "t",
		},
		{
			name: "fts5 docs_idx root zeroed",
			corrupt: func(t *testing.T, path string) {
				root, ps := rootPage(t, path, "docs_idx")
				zeroPage(t, path, root, ps)
			},
			wantKind: health.KindFTS, wantObj: "docs_idx", wantTable: "docs",
		},
		{
			name: "fts5 docs_data leaf zeroed",
			corrupt: func(t *testing.T, path string) {
				_, ps := rootPage(t, path, "docs_data")
				zeroPage(t, path, leafPage(t, path, "docs_data"), ps)
			},
			wantKind: health.KindFTS, wantObj: "docs_data", wantTable: "docs",
		},
		{
			name: "fts5 docs_content leaf zeroed",
			corrupt: func(t *testing.T, path string) {
				_, ps := rootPage(t, path, "docs_content")
				zeroPage(t, path, leafPage(t, path, "docs_content"), ps)
			},
			wantKind: health.KindTable, wantObj: "docs_content", wantTable: "docs",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "app.db")
			makeFixture(t, path)
			if got := health.CheckIntegrity(context.Background(), path, health.Options{}); !got.OK || got.Summary != "ok" {
				t.Fatalf("CheckIntegrity(healthy) = %+v, want OK", got)
			}
			tc.corrupt(t, path)
			for _, full := range []bool{false, true} {
				got := health.CheckIntegrity(context.Background(), path, health.Options{Full: full})
				t.Logf("Full=%v: summary %q, messages %q, damage %q", full, got.Summary, got.Messages, kinds(got.Damage))
				if !got.Ran || got.OK || got.Err != "" {
					t.Fatalf("CheckIntegrity(Full=%v) = Ran %v OK %v Err %q, want Ran, not OK, no Err", full, got.Ran, got.OK, got.Err)
				}
				i := slices.IndexFunc(got.Damage, func(d health.Damage) bool { return d.Object == tc.wantObj })
				if i < 0 {
					t.Fatalf("CheckIntegrity(Full=%v).Damage = %q, want one for %s", full, kinds(got.Damage), tc.wantObj)
				}
				d := got.Damage[i]
				if d.Kind != tc.wantKind || d.Table != tc.wantTable || d.Repair != "" {
					t.Errorf("Damage for %s = %+v, want kind %s, table %s, no repair text", tc.wantObj, d, tc.wantKind, tc.wantTable)
				}
				if !got.Classified || got.Summary != "" {
					t.Errorf("Summary = %q, Classified %v; want it left to the rules layer", got.Summary, got.Classified)
				}
				for _, d := range got.Damage {
					if d.Kind == health.KindUnknown {
						t.Errorf("unclassified damage %+v", d)
					}
				}
			}
		})
	}
}

func TestCheckIntegrityTruncated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	makeFixture(t, path)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	ps, err := health.CheckHeaderFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !hasProblem(ps, health.ProblemTruncated) {
		t.Errorf("CheckHeaderFile(truncated) = %+v, want %s", ps, health.ProblemTruncated)
	}
	got := health.CheckIntegrity(context.Background(), path, health.Options{})
	t.Logf("summary %q, messages %q, damage %q, schema err %q, header %+v", got.Summary, got.Messages, kinds(got.Damage), got.SchemaErr, ps)
	if !got.Ran || got.OK || len(got.Damage) != 1 || got.Damage[0].Object != "database" || !hasProblem(got.HeaderProblems, health.ProblemTruncated) {
		t.Errorf("CheckIntegrity(truncated) = %+v, want one Damage for the whole database and header problem %s", got, health.ProblemTruncated)
	}
}

func TestCheckIntegrityTornHeader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	makeFixture(t, path)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A torn sector: the header string survives, bytes 18..99 are garbage.
	garbage := []byte(strings.Repeat("\xa5\x5a\x33\xcc", 21))[:82]
	if _, err := f.WriteAt(garbage, 18); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ps, err := health.CheckHeaderFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !hasProblem(ps, health.ProblemTorn) {
		t.Errorf("CheckHeaderFile(torn) = %+v, want %s", ps, health.ProblemTorn)
	}
	got := health.CheckIntegrity(context.Background(), path, health.Options{})
	t.Logf("torn: ran %v, err %q, summary %q, messages %q", got.Ran, got.Err, got.Summary, got.Messages)
	if !got.Ran || got.OK || !hasProblem(got.HeaderProblems, health.ProblemTorn) {
		t.Errorf("CheckIntegrity(torn header) = %+v, want Ran, not OK, header problem %s", got, health.ProblemTorn)
	}
}

func hasProblem(ps []health.Problem, id string) bool {
	return slices.ContainsFunc(ps, func(p health.Problem) bool { return p.ID == id })
}
