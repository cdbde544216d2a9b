package convert_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestGuardGathersFacts: convert words none of its refusals or failures
// and branches on no finding's ID or message: the rules table (rules/
// convert.go) judges the facts the guard gathers. Its source names no ID
// constant of rules/ids.go and reads no Message field to decide.
func TestGuardGathersFacts(t *testing.T) {
	fset := token.NewFileSet()
	ids, err := parser.ParseFile(fset, "../rules/ids.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	idNames := map[string]bool{}
	for _, d := range ids.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, s := range g.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					idNames[n.Name] = true
				}
			}
		}
	}
	if len(idNames) < 50 {
		t.Fatalf("found %d ID constants in rules/ids.go, want them all", len(idNames))
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "rules" && idNames[n.Sel.Name] {
					t.Errorf("%s: convert names finding ID rules.%s: ask the rules (RefusalWants, WriterHere) instead", fset.Position(n.Pos()), n.Sel.Name)
				}
			case *ast.CallExpr:
				fn, ok := n.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := fn.X.(*ast.Ident); !ok || x.Name != "strings" {
					return true
				}
				for _, a := range n.Args {
					if sel, ok := a.(*ast.SelectorExpr); ok && sel.Sel.Name == "Message" {
						t.Errorf("%s: convert branches on a finding's message (strings.%s): ask the rules instead", fset.Position(n.Pos()), fn.Sel.Name)
					}
				}
			case *ast.FuncDecl:
				// The failures the check's facts decide are the rules'
				// (StageRead, StageDisk): no function of the guard words them.
				for _, w := range []string{"is not a SQLite database", "name no known journal mode", "hot rollback journal", "preflight recover"} {
					ast.Inspect(n, func(m ast.Node) bool {
						if lit, ok := m.(*ast.BasicLit); ok && lit.Kind == token.STRING {
							if s, _ := strconv.Unquote(lit.Value); strings.Contains(s, w) {
								t.Errorf("%s: convert words a failure itself (%q): the rules table does", fset.Position(lit.Pos()), s)
							}
						}
						return true
					})
				}
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("checked %d files of package convert, want them all", checked)
	}
}
