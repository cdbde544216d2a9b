package rules_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/probe/health"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
	"github.com/preflight-sqlite/preflight/report"
	"github.com/preflight-sqlite/preflight/rules"
)

// TestConvertFailures: the failures convert reports for a database it
// cannot convert at all are the rules table's (StageRead, StageDisk),
// worded there; they are no refusals.
func TestConvertFailures(t *testing.T) {
	wal := sqlitefile.Database{Path: "/data/app.db", JournalMode: sqlitefile.JournalWAL}
	with := func(f func(*sqlitefile.Database)) *report.Database {
		db := wal
		f(&db)
		return &report.Database{Database: db}
	}
	for _, tt := range []struct {
		name   string
		stage  rules.ConvertStage
		facts  rules.ConvertFacts
		id     rules.ID
		msg    string
		remedy string
	}{
		{"not sqlite", rules.StageRead, rules.ConvertFacts{DB: with(func(d *sqlitefile.Database) { d.NotSQLite = true })},
			rules.NotSQLite, "/data/app.db is not a SQLite database: bad header", "check the path; nothing was changed"},
		{"unreadable", rules.StageRead, rules.ConvertFacts{DB: with(func(d *sqlitefile.Database) { d.Err = "open /data/app.db: permission denied" })},
			rules.DBUnreadable, "open /data/app.db: permission denied", "run preflight as the user that owns the database, or as root"},
		{"unknown journal mode", rules.StageRead, rules.ConvertFacts{DB: with(func(d *sqlitefile.Database) { d.JournalMode = sqlitefile.JournalUnknown })},
			rules.JournalModeUnknown, "/data/app.db: header bytes 18/19 name no known journal mode", "PRAGMA integrity_check"},
		{"new", rules.StageRead, rules.ConvertFacts{DB: with(func(d *sqlitefile.Database) { d.New, d.JournalMode = true, sqlitefile.JournalUnknown })}, "", "", ""},
		{"damaged header", rules.StageDisk, rules.ConvertFacts{DB: with(func(*sqlitefile.Database) {}), HeaderProblems: []health.Problem{{ID: health.ProblemTorn, Detail: "bytes 21..23 are 0, 0, 0"}}},
			rules.DBHeaderDamaged, "/data/app.db: bytes 21..23 are 0, 0, 0 (header-torn)", "preflight recover /data/app.db --to /data/app.db.recovered"},
		{"reserved bytes only", rules.StageDisk, rules.ConvertFacts{DB: with(func(*sqlitefile.Database) {}), HeaderProblems: []health.Problem{{ID: health.ProblemReservedBytes}}}, "", "", ""},
		{"hot journal", rules.StageDisk, rules.ConvertFacts{DB: with(func(*sqlitefile.Database) {}), Journal: &health.Journal{Path: "/data/app.db-journal", SizeBytes: 4608, Hot: true}},
			rules.HotJournal, "/data/app.db has a hot rollback journal (/data/app.db-journal, 4608 bytes)", "never delete the -journal"},
	} {
		if !tt.stage.Fails() {
			t.Fatalf("%s: stage %d is no failure stage", tt.name, tt.stage)
		}
		tt.facts.Report = &report.Report{}
		tt.facts.Dir = &report.DataDir{Path: "/data"}
		got := rules.Convert(&tt.facts, tt.stage)
		if tt.id == "" {
			if len(got) != 0 {
				t.Errorf("Convert(%s) = %v, want no failure", tt.name, got)
			}
			continue
		}
		if len(got) != 1 || got[0].ID != tt.id ||
			!strings.HasPrefix(got[0].Message, tt.msg) || len(got[0].Remedy) != 1 || !strings.Contains(got[0].Remedy[0], tt.remedy) {
			t.Errorf("Convert(%s) = %+v, want %s %q with a remedy naming %q", tt.name, got, tt.id, tt.msg, tt.remedy)
		}
	}
	refusals := rules.Refusals()
	for _, id := range []rules.ID{rules.NotSQLite, rules.DBUnreadable, rules.JournalModeUnknown, rules.HotJournal} {
		if slices.ContainsFunc(refusals, func(r rules.Rule) bool { return r.ID == id }) {
			t.Errorf("Refusals() lists %s, a failure, not a refusal", id)
		}
	}
}
