package rules_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"

	"github.com/preflight-sqlite/preflight/report"
	"github.com/preflight-sqlite/preflight/rules"
)

// TestIDsAreTheTable: every ID constant of ids.go names a rule of the
// table, and every rule's ID is one of those constants.
func TestIDsAreTheTable(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "ids.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{} // value -> name, for string-literal constants
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, v := range vs.Values {
			if lit, ok := v.(*ast.BasicLit); ok {
				s, _ := strconv.Unquote(lit.Value)
				consts[s] = vs.Names[i].Name
			}
		}
		return true
	})
	inTable := map[string]bool{}
	for _, r := range append(rules.Rules(), rules.Refusals()...) {
		inTable[string(r.ID)] = true
		if _, ok := consts[string(r.ID)]; !ok && r.ID != rules.HeaderPageSizeInvalid && r.ID != rules.DBTruncated &&
			r.ID != rules.HeaderReservedBytes && r.ID != rules.HeaderTextEncodingInvalid && r.ID != rules.HeaderTorn {
			t.Errorf("rule %s has no constant in ids.go", r.ID)
		}
	}
	for v, name := range consts {
		if !inTable[v] {
			t.Errorf("ids.go: %s (%q) names no rule", name, v)
		}
	}
}

// TestActions: callers learn what to do from the rules, not from IDs.
func TestActions(t *testing.T) {
	for _, c := range []struct {
		f    report.Finding
		a    rules.Action
		want bool
	}{
		{report.Finding{ID: rules.WALOnNetworkFS, Level: report.LevelError}, rules.ActConvert, true},
		{report.Finding{ID: rules.WALOnFuse, Level: report.LevelWarn}, rules.ActConvert, true},
		{report.Finding{ID: rules.WALOnSandboxFS, Level: report.LevelWarn}, rules.ActConvert, false},
		{report.Finding{ID: rules.BindOnDesktop, Level: report.LevelError}, rules.ActRewriteBind, true},
		{report.Finding{ID: rules.VolumeOnNetwork, Level: report.LevelError}, rules.ActRewriteBind, false},
		{report.Finding{ID: "no-such-finding", Level: report.LevelError}, rules.ActConvert, false},
	} {
		if got := rules.Wants(c.f, c.a); got != c.want {
			t.Errorf("Wants(%s, %d) = %v, want %v", c.f.ID, c.a, got, c.want)
		}
	}
	r := &report.Report{Findings: []report.Finding{{ID: rules.WALOnCrossVM, Level: report.LevelError, Path: "/data/app.db"}}}
	if !rules.Has(r, "/data/app.db", rules.ActConvert, true) || rules.Has(r, "/data/other.db", rules.ActConvert, false) {
		t.Errorf("Has over %+v: want true for /data/app.db only", r.Findings)
	}
	for _, c := range []struct {
		f    report.Finding
		want bool
	}{
		{report.Finding{ID: rules.WALWithoutDatabase, Level: report.LevelError}, true},
		{report.Finding{ID: rules.DBHeaderDamaged, Level: report.LevelError}, true},
		{report.Finding{ID: rules.DBHeaderDamaged, Level: report.LevelWarn}, false},
		{report.Finding{ID: rules.WALWithoutDatabase, Level: report.LevelInfo, Ignored: true}, false},
		{report.Finding{ID: rules.WALOnCrossVM, Level: report.LevelError}, false},
	} {
		why, ok := rules.StartRefusal(c.f)
		if ok != c.want || ok && why == "" {
			t.Errorf("StartRefusal(%s at %s) = %q, %v; want %v with a reason", c.f.ID, c.f.Level, why, ok, c.want)
		}
	}
}
