package kubetest_test

import (
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/kubetest"
)

// TestObjects reads manifests in each form Apply and Create take, without a
// server.
func TestObjects(t *testing.T) {
	type meta struct {
		Name string `json:"name"`
	}
	type sa struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   meta   `json:"metadata"`
	}
	tests := []struct {
		name     string
		manifest any
		want     []string // kind/name of each object
	}{
		{"yaml documents", "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: b, namespace: a}\n", []string{"Namespace/a", "ServiceAccount/b"}},
		{"json bytes", []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`), []string{"Pod/p"}},
		{"list", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: p1}}\n- {apiVersion: v1, kind: Pod, metadata: {name: p2}}\n", []string{"Pod/p1", "Pod/p2"}},
		{"map", map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "m"}}, []string{"Pod/m"}},
		{"struct", sa{"v1", "ServiceAccount", meta{"s"}}, []string{"ServiceAccount/s"}},
	}
	for _, tt := range tests {
		objs, err := kubetest.Objects(tt.manifest)
		if err != nil {
			t.Errorf("Objects(%s): %v", tt.name, err)
			continue
		}
		var got []string
		for _, o := range objs {
			got = append(got, o["kind"].(string)+"/"+o["metadata"].(map[string]any)["name"].(string))
		}
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("Objects(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
	for _, bad := range []string{"kind: Pod\nmetadata: {name: p}\n", "apiVersion: v1\nkind: Pod\n", "apiVersion: v1\nkind: [\n"} {
		if _, err := kubetest.Objects(bad); err == nil {
			t.Errorf("Objects(%q) = nil error, want one", bad)
		}
	}
}
