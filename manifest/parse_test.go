package manifest_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/preflight-sqlite/preflight/manifest"
)

func TestParse(t *testing.T) {
	in := `# helm template output starts with comments
---
# Source: chart/templates/pvc.yaml
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  namespace: ns
spec: {accessModes: [ReadWriteOnce]}
---
---
null
---
{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "app"}}
---
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Pod
    metadata: {name: a}
  - apiVersion: v1
    kind: Pod
    metadata: {name: b}
`
	objs, err := manifest.Parse(strings.NewReader(in), "in.yaml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	type got struct {
		Kind, Name, Namespace string
		Line                  int
	}
	var gs []got
	for _, o := range objs {
		gs = append(gs, got{o.Kind, o.Name, o.Namespace, o.At.Line})
		if o.At.File != "in.yaml" {
			t.Errorf("object %s: file %q, want in.yaml", o.Name, o.At.File)
		}
	}
	want := []got{
		{"PersistentVolumeClaim", "data", "ns", 4},
		{"Deployment", "app", "", 14},
		{"Pod", "a", "", 19},
		{"Pod", "b", "", 22},
	}
	if d := cmp.Diff(want, gs); d != "" {
		t.Errorf("Parse objects (-want +got):\n%s", d)
	}
	if objs[0].At.Template != "chart/templates/pvc.yaml" || objs[1].At.Template != "" {
		t.Errorf("Parse templates = %q, %q; want helm's # Source: chart/templates/pvc.yaml on the first only", objs[0].At.Template, objs[1].At.Template)
	}
	if !strings.Contains(string(objs[0].JSON), `"accessModes":["ReadWriteOnce"]`) {
		t.Errorf("Parse JSON of the claim = %s, want its spec", objs[0].JSON)
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"- a\n- b\n", "line 1: a document is not a mapping"},
		{"apiVersion: v1\nmetadata: {name: x}\n", "line 1: a document without kind"},
		{"kind: Pod\nmetadata: {name: [\n", "parse x.yaml"},
		{"kind: Pod\n---\nkind: Pod\n1: 2\n", ""}, // integer keys decode as strings
		{"kind: List\nitems:\n  - metadata: {name: a}\n", "line 3: a list item without kind"},
	} {
		_, err := manifest.Parse(strings.NewReader(c.in), "x.yaml")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Parse(%q) = %v, want no error", c.in, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("Parse(%q) = %v, want an error with %q", c.in, err, c.want)
		}
	}
}

func TestParseTooLarge(t *testing.T) {
	big := strings.NewReader("kind: Pod\n# " + strings.Repeat("x", manifest.MaxInput) + "\n")
	if _, err := manifest.Parse(big, "-"); !errors.Is(err, manifest.ErrTooLarge) {
		t.Errorf("Parse of %d bytes = %v, want ErrTooLarge", manifest.MaxInput+12, err)
	}
}

// FuzzParse: no panic, and every object Parse returns has a kind. Seeds:
// every manifest in testdata.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*", "*", "*.y*ml"))
	hand, _ := filepath.Glob(filepath.Join("testdata", "handwritten", "*.yaml"))
	home, _ := filepath.Glob(filepath.Join("testdata", "homelab", "*.yaml"))
	for _, p := range slices.Concat(seeds, hand, home) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b))
		}
	}
	f.Add("kind: Pod\nmetadata: {name: a}\n")
	f.Add("---\nkind: List\nitems: [{kind: Pod}]\n")
	f.Add("kind: Pod\nkind: Pod\nspec: &s {a: 1, a: 2}\nother: *s\nx: {<<: *s, a: 3}\n")
	f.Fuzz(func(t *testing.T, s string) {
		objs, err := manifest.Parse(strings.NewReader(s), "f")
		if err == nil {
			for _, o := range objs {
				if o.Kind == "" {
					t.Errorf("Parse(%q) returned an object without kind", s)
				}
				for _, d := range o.Duplicates {
					if len(d.Dropped) == 0 || d.At.Line == 0 || d.Object == "" {
						t.Errorf("Parse(%q) duplicate %+v names no dropped line, kept line or object", s, d)
					}
				}
			}
		}
	})
}

// TestParseDuplicateKeys: a key written twice in one mapping keeps its
// last value, as kubectl does, and is reported where it was written;
// keys of the same name in different mappings, and of a List's items,
// are each their own object's.
func TestParseDuplicateKeys(t *testing.T) {
	objs, err := manifest.Parse(mustOpen(t, filepath.Join("testdata", "homelab", "pihole-dnspolicy-twice.yaml")), "pihole.yaml")
	if err != nil {
		t.Fatalf("Parse(pihole-dnspolicy-twice.yaml): %v", err)
	}
	if len(objs) != 2 {
		t.Fatalf("Parse(pihole-dnspolicy-twice.yaml) = %d objects, want 2", len(objs))
	}
	want := []manifest.DuplicateKey{{Object: "pihole/deployment/pihole", At: manifest.Location{File: "pihole.yaml", Line: 53},
		Key: "dnsPolicy", Path: "spec.template.spec", Dropped: []int{37}}}
	if d := cmp.Diff(want, objs[1].Duplicates); d != "" || objs[0].Duplicates != nil {
		t.Errorf("Parse duplicates (-want +got):\n%s (claim: %v)", d, objs[0].Duplicates)
	}
	if !strings.Contains(string(objs[1].JSON), `"dnsPolicy":"None"`) || strings.Contains(string(objs[1].JSON), "ClusterFirstWithHostNet") {
		t.Errorf("Parse kept %s, want the last dnsPolicy (None) only", objs[1].JSON)
	}
	list := "apiVersion: v1\nkind: List\nitems:\n- kind: Pod\n  metadata: {name: a}\n  spec: {restartPolicy: Never, restartPolicy: Always}\n- kind: Pod\n  metadata: {name: b, name: c}\n"
	objs, err = manifest.Parse(strings.NewReader(list), "list.yaml")
	if err != nil {
		t.Fatalf("Parse(list): %v", err)
	}
	if len(objs) != 2 || len(objs[0].Duplicates) != 1 || objs[0].Duplicates[0].Key != "restartPolicy" || len(objs[1].Duplicates) != 1 || objs[1].Name != "c" || objs[1].Duplicates[0].Object != "pod/c" {
		t.Errorf("Parse(list) = %+v, want a's restartPolicy and b's name, each on its own item (the second named c)", objs)
	}
}

func mustOpen(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
