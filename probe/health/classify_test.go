package health_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/health"
)

// schema is testdb.Schema: a table, an index, an FTS5 table and an FTS4
// table, as SQLite 3.53.3 lists them.
var schema = testdb.Schema()

func TestClassify(t *testing.T) {
	type kv struct{ Kind, Object, Table string }
	for _, tc := range []struct {
		name    string
		msgs    []string
		want    []kv
		summary string
	}{
		{"ok", []string{"ok"}, nil, "ok"},
		{"3.53.3 index", []string{"*** in database main ***", "Tree 3 page 3 cell 3: Extends off end of page", "Page 8: never used", "wrong # of entries in index notes_body", "database disk image is malformed (11)"},
			[]kv{{health.KindIndex, "notes_body", "notes"}, {health.KindStructural, "", ""}},
			"index notes_body damaged: REINDEX notes_body; structural damage (page accounting): VACUUM INTO a new file"},
		{"3.40.1 index", []string{"*** in database main ***", "On tree page 3 cell 3: Extends off end of page", "Page 8 is never used"},
			[]kv{{health.KindIndex, "notes_body", "notes"}, {health.KindStructural, "", ""}}, ""},
		{"3.40.1 non-root page", []string{"On tree page 17 cell 0: invalid page number 99"},
			[]kv{{health.KindStructural, "", ""}}, ""},
		{"table via NFS short read", []string{"Tree 2 page 40: unable to get the page. error code=522"},
			[]kv{{health.KindTable, "notes", "notes"}}, "table notes damaged: rows at risk"},
		{"index entries", []string{"row 3 missing from index notes_body", "non-unique entry in index notes_body"},
			[]kv{{health.KindIndex, "notes_body", "notes"}}, "index notes_body damaged: REINDEX notes_body"},
		{"fts5 blob", []string{`fts5: corruption found reading blob 137438953485 from table "ft"`},
			[]kv{{health.KindFTS, "ft", "ft"}}, "search index ft damaged, data intact"},
		{"fts5 inverted index", []string{"malformed inverted index for FTS5 table main.ft"},
			[]kv{{health.KindFTS, "ft", "ft"}}, ""},
		{"fts5 shadows", []string{"Tree 4 page 4: btreeInitPage() returns error code 11", "Tree 5 page 5: btreeInitPage() returns error code 11", "Tree 8 page 8: x", "Tree 7 page 7: x"},
			[]kv{{health.KindFTS, "ft_data", "ft"}, {health.KindFTS, "ft_idx", "ft"}, {health.KindFTS, "ft_config", "ft"}, {health.KindFTS, "ft_docsize", "ft"}}, "search index ft damaged, data intact"},
		{"fts5 content holds rows", []string{"Tree 6 page 30: btreeInitPage() returns error code 11"},
			[]kv{{health.KindTable, "ft_content", "ft"}}, "table ft_content damaged: rows at risk"},
		{"fts4 segdir and its autoindex", []string{"Tree 9 page 9: x", "Tree 10 page 10: x"},
			[]kv{{health.KindFTS, "old_segdir", "old"}, {health.KindFTS, "sqlite_autoindex_old_segdir_1", "old"}}, "search index old damaged, data intact"},
		{"freelist", []string{"Freelist: size is 0 but should be 4", "freelist leaf count too big on page 12", "max rootpage (5) disagrees with header (6)"},
			[]kv{{health.KindStructural, "", ""}}, "structural damage (page accounting): VACUUM INTO a new file"},
		{"schema page", []string{"Tree 1 page 1: btreeInitPage() returns error code 11"},
			[]kv{{health.KindTable, "sqlite_schema", "sqlite_schema"}}, "table sqlite_schema damaged: rows at risk"},
		{"constraints", []string{"NULL value in notes.body", "CHECK constraint failed in notes"},
			[]kv{{health.KindTable, "notes", "notes"}}, ""},
		{"unknown root", []string{"Tree 99 page 99: x"}, []kv{{health.KindUnknown, "b-tree 99 (not in sqlite_schema)", ""}}, "unclassified damage: rows may be at risk"},
		{"statement error only", []string{"database disk image is malformed (11)"}, []kv{{health.KindUnknown, "", ""}}, ""},
		{"not a database", []string{"file is not a database (26)"}, []kv{{health.KindUnknown, "database", ""}}, "database unreadable: rows may be at risk"},
		{"table beats index", []string{"Tree 3 page 3: x", "Tree 2 page 2: x", "Tree 11 page 11: x"},
			[]kv{{health.KindIndex, "notes_body", "notes"}, {health.KindTable, "notes", "notes"}, {health.KindTable, "odd name", "odd name"}},
			"tables notes, odd name damaged: rows at risk; index notes_body damaged: REINDEX notes_body"},
	} {
		got := health.Classify(tc.msgs, schema)
		var gotKV []kv
		for _, d := range got {
			gotKV = append(gotKV, kv{d.Kind, d.Object, d.Table})
			if d.Message == "" {
				t.Errorf("%s: Damage %+v lacks a message", tc.name, d)
			}
			if d.Repair != "" {
				t.Errorf("%s: Damage %+v has repair text; the rules layer words repairs", tc.name, d)
			}
		}
		if diff := cmp.Diff(tc.want, gotKV, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: Classify(%q) (-want +got):\n%s", tc.name, tc.msgs, diff)
		}
	}
}

// FuzzClassify: no panic; every Damage has a kind and a message, and no
// repair text (rules.FuzzRepair covers the repairs).
func FuzzClassify(f *testing.F) {
	f.Add("Tree 3 page 3 cell 3: Extends off end of page\nPage 8: never used")
	f.Add(`fts5: corruption found reading blob 1 from table "ft"`)
	f.Add("row 3 missing from index \"x.y\"\nNULL value in a.b.c")
	f.Fuzz(func(t *testing.T, s string) {
		msgs := []string{s, s + " x"}
		for _, d := range health.Classify(msgs, schema) {
			if d.Kind == "" || d.Message == "" || d.Repair != "" {
				t.Fatalf("Classify(%q) gave %+v", msgs, d)
			}
		}
		for _, d := range health.Classify(msgs, nil) {
			if d.Kind == "" || d.Repair != "" {
				t.Fatalf("Classify(%q, nil schema) gave %+v", msgs, d)
			}
		}
	})
}
