package rules_test

import (
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/health"
	"github.com/preflight-sqlite/preflight/rules"
)

// schema is testdb.Schema (a table, an index, FTS5 and FTS4 tables).
var schema = testdb.Schema()

// TestSummarize: the summary of the damage health.Classify finds.
func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name, summary string
		msgs          []string
	}{
		{"ok", "ok", []string{"ok"}},
		{"3.53.3 index", "index notes_body damaged: REINDEX notes_body; structural damage (page accounting): VACUUM INTO a new file",
			[]string{"*** in database main ***", "Tree 3 page 3 cell 3: Extends off end of page", "Page 8: never used", "wrong # of entries in index notes_body", "database disk image is malformed (11)"}},
		{"table via NFS short read", "table notes damaged: rows at risk", []string{"Tree 2 page 40: unable to get the page. error code=522"}},
		{"index entries", "index notes_body damaged: REINDEX notes_body", []string{"row 3 missing from index notes_body", "non-unique entry in index notes_body"}},
		{"fts5 blob", "search index ft damaged, data intact", []string{`fts5: corruption found reading blob 137438953485 from table "ft"`}},
		{"fts5 shadows", "search index ft damaged, data intact", []string{"Tree 4 page 4: btreeInitPage() returns error code 11", "Tree 5 page 5: btreeInitPage() returns error code 11", "Tree 8 page 8: x", "Tree 7 page 7: x"}},
		{"fts5 content holds rows", "table ft_content damaged: rows at risk", []string{"Tree 6 page 30: btreeInitPage() returns error code 11"}},
		{"fts4 segdir and its autoindex", "search index old damaged, data intact", []string{"Tree 9 page 9: x", "Tree 10 page 10: x"}},
		{"freelist", "structural damage (page accounting): VACUUM INTO a new file", []string{"Freelist: size is 0 but should be 4", "freelist leaf count too big on page 12", "max rootpage (5) disagrees with header (6)"}},
		{"schema page", "table sqlite_schema damaged: rows at risk", []string{"Tree 1 page 1: btreeInitPage() returns error code 11"}},
		{"unknown root", "unclassified damage: rows may be at risk", []string{"Tree 99 page 99: x"}},
		{"not a database", "database unreadable: rows may be at risk", []string{"file is not a database (26)"}},
		{"table beats index", "tables notes, odd name damaged: rows at risk; index notes_body damaged: REINDEX notes_body", []string{"Tree 3 page 3: x", "Tree 2 page 2: x", "Tree 11 page 11: x"}},
	} {
		if s := rules.Summarize(health.Classify(tc.msgs, schema)); s != tc.summary {
			t.Errorf("%s: Summarize = %q, want %q", tc.name, s, tc.summary)
		}
	}
}

// TestRepair: the repair of the damage health.Classify finds, naming the
// database path and quoting it for a shell.
func TestRepair(t *testing.T) {
	for _, tc := range []struct {
		msg, db, want string
	}{
		{"Tree 2 page 2: x", "/data/app.db", `restore from a backup, or recover into a new file: preflight recover /data/app.db --to /data/app.db.recovered`},
		{"Tree 2 page 2: x", "/data/my app.db", `restore from a backup, or recover into a new file: preflight recover "/data/my app.db" --to "/data/my app.db.recovered"`},
		{"Tree 3 page 3: x", "/d.db", "REINDEX notes_body"},
		{"Tree 4 page 4: x", "/d.db", "INSERT INTO ft(ft) VALUES('rebuild')"},
		{"Page 8: never used", "/data/it's.db", `copy into a new file: sqlite3 "/data/it's.db" "VACUUM INTO '/data/it''s.db.vacuumed'"; or restore from a backup, or recover into a new file: preflight recover "/data/it's.db" --to "/data/it's.db.recovered"`},
	} {
		got := health.Classify([]string{tc.msg}, schema)
		if len(got) != 1 || rules.Repair(got[0], tc.db) != tc.want {
			t.Errorf("Repair(Classify(%q), db %q) = %+v, want repair %q", tc.msg, tc.db, got, tc.want)
		}
	}
	if got := health.Classify([]string{"Tree 11 page 11: x", "row 1 missing from index \"odd idx\""}, schema); len(got) != 2 || rules.Repair(got[1], "/d.db") != `REINDEX "odd idx"` {
		t.Errorf("Repair(Classify(odd names)) = %+v, want REINDEX \"odd idx\"", got)
	}
}

// TestRepairOfCheckedDamage: the repair and summary of the damage that
// health.CheckIntegrity finds in real damaged databases (its tests
// TestCheckIntegrityClassifiesDamage and TestCheckIntegrityTiesPageToOwner
// check those facts).
func TestRepairOfCheckedDamage(t *testing.T) {
	for _, tc := range []struct {
		kind, obj, table string
		summary          string // prefix of the summary
		repair           string // substring of the repair
	}{
		{health.KindIndex, "idx_a", "t", "index idx_a damaged: REINDEX idx_a", "REINDEX idx_a"},
		{health.KindIndex, "ax", "t", "index ax damaged: REINDEX ax", "REINDEX ax"},
		{health.KindTable, "t", "t", "table t damaged: rows at risk", "preflight recover /data/app.db --to"},
		{health.KindFTS, "docs_idx", "docs", "search index docs damaged, data intact", "INSERT INTO docs(docs) VALUES('rebuild')"},
		{health.KindFTS, "docs_data", "docs", "search index docs damaged, data intact", "INSERT INTO docs(docs) VALUES('rebuild')"},
		{health.KindTable, "docs_content", "docs", "table docs_content damaged: rows at risk", "holds the rows of full-text table docs"},
	} {
		in := health.Integrity{Ran: true, Classified: true, Path: "/data/app.db", Damage: []health.Damage{{Kind: tc.kind, Object: tc.obj, Table: tc.table, Message: "m"}}}
		rules.FillRepairs(&in)
		if d := in.Damage[0]; !strings.Contains(d.Repair, tc.repair) || !strings.Contains(d.Repair, "/data/app.db") && tc.kind == health.KindTable {
			t.Errorf("FillRepairs(%s %s).Repair = %q, want it to contain %q", tc.kind, tc.obj, d.Repair, tc.repair)
		}
		if !strings.HasPrefix(in.Summary, tc.summary) {
			t.Errorf("FillRepairs(%s %s).Summary = %q, want prefix %q", tc.kind, tc.obj, in.Summary, tc.summary)
		}
	}
	notRun := health.Integrity{Summary: "not checked"}
	if rules.FillRepairs(&notRun); notRun.Summary != "not checked" {
		t.Errorf("FillRepairs(not classified).Summary = %q, want it kept", notRun.Summary)
	}
}

// FuzzRepair: every Damage health.Classify finds has a repair.
func FuzzRepair(f *testing.F) {
	f.Add("Tree 3 page 3 cell 3: Extends off end of page\nPage 8: never used")
	f.Add(`fts5: corruption found reading blob 1 from table "ft"`)
	f.Add("row 3 missing from index \"x.y\"\nNULL value in a.b.c")
	f.Fuzz(func(t *testing.T, s string) {
		msgs := []string{s, s + " x"}
		for _, sc := range [][]health.SchemaEntry{schema, nil} {
			for _, d := range health.Classify(msgs, sc) {
				if rules.Repair(d, "/d.db") == "" {
					t.Fatalf("Repair(Classify(%q)) empty for %+v", msgs, d)
				}
			}
		}
	})
}
