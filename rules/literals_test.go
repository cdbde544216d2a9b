package rules_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/probe/health"
	"github.com/preflight-sqlite/preflight/rules"
)

// exempt lists the files outside package rules that may spell finding
// IDs, and which: only those, so that any other ID spelt there still fails.
var exempt = map[string]map[string]bool{
	// The header problem codes are the probe's facts and appear in the
	// JSON as header_problems[].id; the rules table adopts them as the
	// header findings' IDs (ids.go) instead of spelling them again.
	"probe/health/header.go": {health.ProblemPageSize: true, health.ProblemTruncated: true, health.ProblemReservedBytes: true,
		health.ProblemTextEncoding: true, health.ProblemTorn: true},
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
	checked, err := idLiterals("..", ids, func(pos token.Position, lit string) {
		t.Errorf("%s: finding ID %s spelt as a literal outside package rules", pos, lit)
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked %d files, want the whole module", checked)
	}
}

// idLiterals calls found with each string literal of the module's source
// (sourceFiles) that is one of ids and not allowed there (exempt, wordIDs,
// wordIn); it returns how many files it parsed.
func idLiterals(root string, ids map[string]bool, found func(pos token.Position, lit string)) (int, error) {
	return sourceFiles(root, func(rel string, fset *token.FileSet, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.IndexExpr:
				// Report.Probes["activity"]: a probe's name, not a reason.
				if lit, ok := n.Index.(*ast.BasicLit); ok && wordIDs[unquote(lit)] {
					return false
				}
			case *ast.BasicLit:
				u := unquote(n)
				if n.Kind == token.STRING && ids[u] && !wordIn[filepath.ToSlash(rel)+" "+u] && !exempt[filepath.ToSlash(rel)][u] {
					found(fset.Position(n.Pos()), n.Value)
				}
			}
			return true
		})
	})
}

// sourceFiles parses every Go file under root but package rules, tests,
// integration and testdata, and calls each with its path relative to root;
// it returns how many files it parsed.
func sourceFiles(root string, each func(rel string, fset *token.FileSet, f *ast.File)) (int, error) {
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if e.IsDir() {
			if rel != "." && (rel == "rules" || rel == "integration" || strings.HasPrefix(e.Name(), ".") || e.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		checked++
		each(rel, fset, f)
		return nil
	})
	return checked, err
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

// TestIDLiteralsExemptOnlyItsIDs: a file of exempt may spell its own IDs
// only; another finding ID there is reported like anywhere else, and
// package rules and tests are not looked at.
func TestIDLiteralsExemptOnlyItsIDs(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"probe/health/header.go": "package health\n\nconst ProblemTorn = \"header-torn\"\n\nvar leak = \"wal-loss\"\n",
		"cmd/x/x.go":             "package x\n\nvar y = \"wal-on-fuse\"\n",
		"rules/ids.go":           "package rules\n\nvar z = \"wal-loss\"\n",
		"cmd/x/x_test.go":        "package x\n\nvar w = \"wal-loss\"\n",
	}
	for name, src := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ids := map[string]bool{"header-torn": true, "wal-loss": true, "wal-on-fuse": true}
	var got []string
	if _, err := idLiterals(root, ids, func(pos token.Position, lit string) {
		rel, _ := filepath.Rel(root, pos.Filename)
		got = append(got, filepath.ToSlash(rel)+" "+lit)
	}); err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	want := []string{`cmd/x/x.go "wal-on-fuse"`, `probe/health/header.go "wal-loss"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("reported %q, want %q", got, want)
	}
}
