package manifest_test

import (
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/manifest"
)

// TestEnvOtherEngine: a catalogued application's data directory holds no
// SQLite data when its environment, as the kubelet builds it, selects
// another engine: envFrom in order, a later source winning, env winning
// over envFrom, Secret data base64 and stringData plain. A value that is
// not known (valueFrom, $(VAR), a ConfigMap or Secret not in the input
// after or over the setting, or in it twice with other values: which one
// the cluster holds depends on the order they are applied in) leaves the
// data possibly SQLite.
func TestEnvOtherEngine(t *testing.T) {
	const objects = `apiVersion: v1
kind: ConfigMap
metadata: {name: pg}
data: {HBOX_DATABASE_DRIVER: postgres}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: lite}
data: {HBOX_DATABASE_DRIVER: sqlite3}
---
apiVersion: v1
kind: Secret
metadata: {name: pg-secret, namespace: hb}
data: {DATABASE_DRIVER: cG9zdGdyZXM=}
---
apiVersion: v1
kind: Secret
metadata: {name: plain, namespace: hb}
data: {HBOX_DATABASE_DRIVER: c3FsaXRlMw==}
stringData: {HBOX_DATABASE_DRIVER: postgres}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: twice}
data: {HBOX_DATABASE_DRIVER: postgres}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: twice}
data: {HBOX_DATABASE_DRIVER: sqlite3}
`
	for _, c := range []struct {
		name, container string
		sqlite          bool
		other           string
		ns              string // the pod's namespace: hb unless set
	}{
		{"env value", `env: [{name: HBOX_DATABASE_DRIVER, value: postgres}]`, false, "(env of container app)", ""},
		{"configMap by envFrom", `envFrom: [{configMapRef: {name: pg}}]`, false, "(ConfigMap pg, by envFrom)", ""},
		{"secret data, with a prefix", `envFrom: [{prefix: HBOX_, secretRef: {name: pg-secret}}]`, false, "(Secret pg-secret, by envFrom)", ""},
		{"secret stringData over data", `envFrom: [{secretRef: {name: plain}}]`, false, "HBOX_DATABASE_DRIVER=postgres (Secret plain", ""},
		{"a later envFrom wins", `envFrom: [{configMapRef: {name: pg}}, {configMapRef: {name: lite}}]`, true, "", ""},
		{"env wins over envFrom", `{envFrom: [{configMapRef: {name: pg}}], env: [{name: HBOX_DATABASE_DRIVER, value: sqlite3}]}`, true, "", ""},
		{"valueFrom is unknown", `{envFrom: [{configMapRef: {name: pg}}], env: [{name: HBOX_DATABASE_DRIVER, valueFrom: {secretKeyRef: {name: s, key: k}}}]}`, true, "", ""},
		{"a $(VAR) reference is unknown", `env: [{name: HBOX_DATABASE_DRIVER, value: "$(DRIVER)"}]`, true, "", ""},
		{"a source not in the input may override", `envFrom: [{configMapRef: {name: pg}}, {secretRef: {name: elsewhere}}]`, true, "", ""},
		{"a known source after an unknown one", `envFrom: [{secretRef: {name: elsewhere}}, {configMapRef: {name: pg}}]`, false, "(ConfigMap pg, by envFrom)", ""},
		{"a ConfigMap in the input twice, with other values", `envFrom: [{configMapRef: {name: twice}}]`, true, "", ""},
		{"a Secret of another namespace", `envFrom: [{secretRef: {name: pg-secret}}]`, true, "", "other"},
	} {
		ns := c.ns
		if ns == "" {
			ns = "hb"
		}
		pod := objects + `---
apiVersion: v1
kind: Pod
metadata: {name: hb, namespace: ` + ns + `}
spec:
  containers:
  - {name: app, image: "ghcr.io/sysadminsmedia/homebox:0.15", volumeMounts: [{name: data, mountPath: /data}], ` + strings.Trim(c.container, "{}") + `}
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
`
		objs, err := manifest.Parse(strings.NewReader(pod), "pod.yaml")
		if err != nil {
			t.Fatalf("%s: Parse: %v", c.name, err)
		}
		a, err := manifest.Analyze(objs, []string{"pod.yaml"}, manifest.Options{Catalogue: compose.Builtin()})
		if err != nil {
			t.Fatalf("%s: Analyze: %v", c.name, err)
		}
		if len(a.Mounts) != 1 {
			t.Fatalf("%s: %d mounts, want 1", c.name, len(a.Mounts))
		}
		m := a.Mounts[0]
		if m.SQLite != c.sqlite || c.other == "" && m.OtherEngine != "" || !strings.Contains(m.OtherEngine, c.other) {
			t.Errorf("%s: mount sqlite %v, other engine %q; want sqlite %v, other engine holding %q", c.name, m.SQLite, m.OtherEngine, c.sqlite, c.other)
		}
	}
}
