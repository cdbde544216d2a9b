package policy_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/preflight-sqlite/preflight/policy"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// classConstants lists the values of every constant of type Class declared
// in probe/mounts, read from its source: a constant added there without a
// policy entry fails TestEveryClassHasAnEntry.
func classConstants(t *testing.T) []mounts.Class {
	t.Helper()
	files, err := filepath.Glob("../probe/mounts/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []mounts.Class
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Class" {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok {
						t.Fatalf("%s: a Class constant that is not a string literal", fset.Position(v.Pos()))
					}
					s, _ := strconv.Unquote(lit.Value)
					out = append(out, mounts.Class(s))
				}
			}
		}
	}
	if len(out) < 7 {
		t.Fatalf("found %d Class constants in probe/mounts, want at least 7: %v", len(out), out)
	}
	return out
}

func TestEveryClassHasAnEntry(t *testing.T) {
	consts := classConstants(t)
	for _, c := range consts {
		if !policy.Known(c) {
			t.Errorf("class %s has no entry in policy's table", c)
		}
	}
	if got := len(policy.Classes()); got != len(consts) {
		t.Errorf("policy has %d entries, probe/mounts %d Class constants", got, len(consts))
	}
}

// TestUnlistedClassIsUnknown: a class without an entry is never safe.
func TestUnlistedClassIsUnknown(t *testing.T) {
	for _, c := range []mounts.Class{"", "some-new-class"} {
		if policy.Known(c) || policy.Of(c) != policy.Of(mounts.ClassUnknown) {
			t.Errorf("Of(%q) = %+v, want unknown's entry", c, policy.Of(c))
		}
		if !policy.Riskier(c, mounts.ClassLocal) || !policy.PreferDelete(c) || !policy.FarSideBlind(c) {
			t.Errorf("class %q is judged safer than unknown", c)
		}
	}
}

// TestOrder pins the risk order the rules rely on.
func TestOrder(t *testing.T) {
	want := []mounts.Class{mounts.ClassCrossVM, mounts.ClassNetwork, mounts.ClassFUSE, mounts.ClassUnknown, mounts.ClassSandbox, mounts.ClassEphemeral, mounts.ClassLocal}
	got := policy.Classes()
	if len(got) != len(want) {
		t.Fatalf("Classes() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Classes() = %v, want %v", got, want)
		}
	}
	for c, w := range map[mounts.Class][4]bool{ // WALUnsafe, PreferDelete, FarSideBlind, Ephemeral
		mounts.ClassCrossVM:   {true, true, true, false},
		mounts.ClassNetwork:   {true, true, true, false},
		mounts.ClassFUSE:      {true, true, true, false},
		mounts.ClassUnknown:   {false, true, true, false},
		mounts.ClassSandbox:   {false, false, true, false},
		mounts.ClassEphemeral: {false, false, false, true},
		mounts.ClassLocal:     {false, false, false, false},
	} {
		got := [4]bool{policy.WALUnsafe(c), policy.PreferDelete(c), policy.FarSideBlind(c), policy.Ephemeral(c)}
		if got != w {
			t.Errorf("%s: WALUnsafe, PreferDelete, FarSideBlind, Ephemeral = %v, want %v", c, got, w)
		}
	}
}

// TestWritersCorrupt: several writers are corruption on every WAL-unsafe
// class, and on any class when several nodes mount the storage
// read-write; elsewhere a risk.
func TestWritersCorrupt(t *testing.T) {
	for _, c := range policy.Classes() {
		if !policy.WritersCorrupt(c, true) {
			t.Errorf("WritersCorrupt(%s, many nodes) = false, want true", c)
		}
		if got := policy.WritersCorrupt(c, false); got != policy.WALUnsafe(c) {
			t.Errorf("WritersCorrupt(%s, one node) = %v, want WALUnsafe %v", c, got, policy.WALUnsafe(c))
		}
	}
	if !policy.WritersCorrupt("nfs-client", true) || policy.WritersCorrupt(mounts.ClassLocal, false) {
		t.Error("WritersCorrupt: a class without an entry on many nodes is not corruption, or one local node is")
	}
}
