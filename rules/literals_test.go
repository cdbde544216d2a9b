package rules_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/rules"
)

// exempt lists the files outside package rules that may spell a finding
// ID, and why.
var exempt = map[string]string{
	// The header problem codes are the probe's facts and appear in the
	// JSON as header_problems[].id; the rules table adopts them as the
	// header findings' IDs (ids.go) instead of spelling them again.
	"probe/health/header.go": "header problem codes",
}

// TestNoFindingIDLiterals fails when a string literal that is a finding
// ID or a refusal reason appears in the module's source outside package
// rules and tests: callers ask the rules (Wants, Has, StartRefusal) or use
// the constants of ids.go. A probe's own status word that happens to be a
// reason ("activity" is a probe's name in Report.Probes) is allowed as a
// map key or a probe name only where listed in wordIDs.
func TestNoFindingIDLiterals(t *testing.T) {
	ids := map[string]bool{}
	for _, r := range append(rules.Rules(), rules.Refusals()...) {
		ids[string(r.ID)] = true
	}
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir("..", func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("..", path)
		if e.IsDir() {
			if rel != "." && (rel == "rules" || rel == "integration" || strings.HasPrefix(e.Name(), ".") || e.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || exempt[filepath.ToSlash(rel)] != "" {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.IndexExpr:
				// Report.Probes["activity"]: a probe's name, not a reason.
				if lit, ok := n.Index.(*ast.BasicLit); ok && wordIDs[unquote(lit)] {
					return false
				}
			case *ast.BasicLit:
				if n.Kind == token.STRING && ids[unquote(n)] && !wordIn[filepath.ToSlash(rel)+" "+unquote(n)] {
					t.Errorf("%s: finding ID %s spelt as a literal outside package rules", fset.Position(n.Pos()), n.Value)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked %d files, want the whole module", checked)
	}
}

// wordIDs are reasons that are also plain words of another vocabulary:
// "activity" is a probe's name (Report.Probes["activity"]).
var wordIDs = map[string]bool{"activity": true}

// wordIn allows a reason that is also another word in one file: "file word".
var wordIn = map[string]bool{
	"convert/litestream_linux.go litestream": true, // the process name in /proc/PID/comm
}

func unquote(lit *ast.BasicLit) string {
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return ""
	}
	return s
}
