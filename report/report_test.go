package report_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/report"
)

// TestJSONShape: the typed IDs, statuses and writer kinds marshal as the
// bare strings they were, and the fields the orchestration keeps for
// itself (ResolvedPath, Saved, DBFile) stay out of the JSON.
func TestJSONShape(t *testing.T) {
	db := report.Database{
		Writers:      []report.Writer{{Kind: report.WriterProcess, PID: 7}},
		WriterProbes: report.WriterProbes{Processes: report.ProbeRan, Locks: report.ProbeUnsupported, Docker: "no-daemon", Activity: report.ProbeOff},
		ResolvedPath: "/real/app.db",
	}
	db.Path = "/data/app.db"
	r := report.Report{
		Schema:   report.Schema,
		Verdict:  report.VerdictUnsafe,
		Probes:   map[string]report.ProbeStatus{"docker": "no-daemon", "processes": report.ProbeNoDatabase},
		DataDirs: []report.DataDir{{Path: "/data", Databases: []report.Database{db}, Saved: true, DBFile: true}},
		Findings: []report.Finding{{ID: "wal-on-cross-vm", Level: report.LevelError, Path: "/data/app.db", Message: "m"}},
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{
		`"probes":{"docker":"no-daemon","processes":"no database"}`,
		`"writers":[{"kind":"process","pid":7}]`,
		`"writer_probes":{"processes":"ran","locks":"unsupported","docker":"no-daemon","activity":"off","sure":false}`,
		`"findings":[{"id":"wal-on-cross-vm","level":"error","path":"/data/app.db","message":"m"}]`,
		`"verdict":"unsafe"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("json.Marshal(Report) lacks %s:\n%s", want, s)
		}
	}
	for _, not := range []string{"ResolvedPath", "/real/app.db", "Saved", "DBFile"} {
		if strings.Contains(s, not) {
			t.Errorf("json.Marshal(Report) holds %s:\n%s", not, s)
		}
	}
}

// TestWorst: the verdict follows the worst level.
func TestWorst(t *testing.T) {
	r := report.Report{Findings: []report.Finding{{Level: report.LevelInfo}, {Level: report.LevelWarn}}}
	if w := r.Worst(); w != report.LevelWarn || report.VerdictOf(w) != report.VerdictWarn {
		t.Errorf("Worst() = %s (verdict %s), want warn", w, report.VerdictOf(w))
	}
	if v := report.VerdictOf((&report.Report{}).Worst()); v != report.VerdictOK {
		t.Errorf("verdict of no findings = %s, want ok", v)
	}
}
