package compose_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/preflight-sqlite/preflight/compose"
)

// rewriteAll loads src as compose.yaml in dir and plans the rewrite of
// every bind mount of a data directory (what the rules do on a VM engine).
func rewriteAll(t testing.TB, dir string, src []byte) (*compose.Analysis, []compose.FileEdit, error) {
	name := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(name, src, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := compose.Load(context.Background(), compose.LoadOptions{Files: []string{name}, ProjectName: "fuzz", Env: []string{}})
	if err != nil {
		return nil, nil, err
	}
	a, err := compose.Analyze(context.Background(), l, compose.Options{Platform: compose.PlatformDesktop, NoDisk: true})
	if err != nil {
		return nil, nil, err
	}
	var which []int
	for i, m := range a.Mounts {
		if m.DataDir && m.Type == "bind" {
			which = append(which, i)
		}
	}
	edits, err := a.Plan(which, nil, compose.PlanOptions{MigrateImage: "preflight"})
	return a, edits, err
}

func seeds(f *testing.F) {
	for _, pat := range []string{"../testdata/compose/golden/*/compose.yaml", "../testdata/compose/corpus/*.yaml"} {
		files, _ := filepath.Glob(pat)
		for _, p := range files {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
}

// FuzzRewrite: any input either fails to load cleanly, or its rewrite is
// YAML that parses and differs from the input only in the rewritten
// volume entries and the added top-level volumes; with nothing to rewrite
// the file is untouched.
func FuzzRewrite(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		a, edits, err := rewriteAll(t, t.TempDir(), src)
		if err != nil || a == nil {
			return
		}
		names := map[string]bool{}
		for _, rw := range a.Rewrites {
			if rw.Refused == "" {
				names[rw.Volume] = true
			}
		}
		for _, e := range edits {
			if !e.Changed() {
				continue
			}
			if len(names) == 0 {
				t.Fatalf("%s changed with no rewrite", e.File)
			}
			var before, after any
			if err := yaml.Unmarshal(e.Before, &before); err != nil {
				t.Fatalf("original does not parse: %v", err)
			}
			if err := yaml.Unmarshal(e.After, &after); err != nil {
				t.Fatalf("rewrite does not parse: %v\n%s", err, e.After)
			}
			if why := sameExcept(before, after, names, ""); why != "" {
				t.Fatalf("rewrite changed more than the volume entries: %s\n--- before\n%s\n--- after\n%s", why, e.Before, e.After)
			}
		}
	})
}

// sameExcept compares two decoded documents, allowing only the rewrite's
// changes: a volume source replaced by one of names, a long entry's type
// bind -> volume and its bind: options removed, and names added to the
// top-level volumes.
func sameExcept(a, b any, names map[string]bool, at string) string {
	switch av := a.(type) {
	case string:
		bv, ok := b.(string)
		if !ok {
			return at + ": type changed"
		}
		if av == bv || av == "bind" && bv == "volume" {
			return ""
		}
		name, rest, _ := strings.Cut(bv, ":")
		if names[name] && (rest == "" || strings.HasSuffix(av, ":"+rest)) {
			return ""
		}
		return at + ": " + av + " -> " + bv
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return at + ": type changed"
		}
		for k, x := range av {
			y, ok := bv[k]
			if !ok {
				if k == "bind" && bv["type"] == "volume" {
					continue
				}
				return at + "." + k + ": removed"
			}
			if why := sameExcept(x, y, names, at+"."+k); why != "" {
				return why
			}
		}
		for k, y := range bv {
			if _, ok := av[k]; ok {
				continue
			}
			if at == "" && k == "volumes" || at == ".volumes" && names[k] && (y == nil || reflect.DeepEqual(y, map[string]any{})) {
				if m, ok := y.(map[string]any); ok && at == "" {
					for n := range m {
						if !names[n] {
							return ".volumes." + n + ": added"
						}
					}
				}
				continue
			}
			return at + "." + k + ": added"
		}
		return ""
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return at + ": list changed"
		}
		for i := range av {
			if why := sameExcept(av[i], bv[i], names, at+"[]"); why != "" {
				return why
			}
		}
		return ""
	}
	if !reflect.DeepEqual(a, b) {
		return at + ": value changed"
	}
	return ""
}

// TestRewriteSeeds runs the fuzz property over every seed, and checks that
// a second plan over the rewritten file proposes nothing.
func TestRewriteSeeds(t *testing.T) {
	for _, pat := range []string{"../testdata/compose/golden/*/compose.yaml", "../testdata/compose/corpus/*.yaml"} {
		files, _ := filepath.Glob(pat)
		for _, p := range files {
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			_, edits, err := rewriteAll(t, dir, src)
			if err != nil {
				continue // include/extends cases need their other files
			}
			for _, e := range edits {
				if !e.Changed() {
					continue
				}
				a2, edits2, err := rewriteAll(t, t.TempDir(), e.After)
				if err != nil {
					t.Errorf("%s: the rewrite does not load: %v", p, err)
					continue
				}
				for _, e2 := range edits2 {
					if e2.Changed() {
						t.Errorf("%s: a second rewrite changes it again: %+v", p, a2.Rewrites)
					}
				}
			}
		}
	}
}
