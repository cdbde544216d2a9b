package manifest_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/manifest"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

func analyze(t *testing.T, opts manifest.Options, inputs ...string) *manifest.Analysis {
	t.Helper()
	objs, files, err := manifest.Load(inputs, nil)
	if err != nil {
		t.Fatalf("Load(%v): %v", inputs, err)
	}
	if opts.Catalogue == nil {
		opts.Catalogue = compose.Builtin()
	}
	a, err := manifest.Analyze(objs, files, opts)
	if err != nil {
		t.Fatalf("Analyze(%v): %v", inputs, err)
	}
	return a
}

// mountFacts is what the tests compare of each mount.
type mountFacts struct {
	Workload, Volume, Source, Claim string
	Class                           mounts.Class
	SQLite                          bool
	App                             string
	ReadOnly                        bool
}

func facts(a *manifest.Analysis) []mountFacts {
	var out []mountFacts
	for _, m := range a.Mounts {
		f := mountFacts{Workload: a.Workloads[m.Workload].Key(), Volume: m.Volume, Source: m.Source,
			Class: m.Storage.Class, SQLite: m.SQLite, App: m.App, ReadOnly: m.ReadOnly}
		if m.Claim >= 0 {
			f.Claim = a.Claims[m.Claim].Key()
			f.Class = a.Claims[m.Claim].Storage.Class
		}
		out = append(out, f)
	}
	return out
}

// The real public manifests: which volume holds SQLite data, and what is
// known of the storage behind it.
func TestAnalyzePublic(t *testing.T) {
	pub := filepath.Join("testdata", "public")
	for _, c := range []struct {
		name   string
		inputs []string
		want   []mountFacts
		surge  bool
	}{
		{"uptime-kuma-k8s", []string{filepath.Join(pub, "uptime-kuma-k8s")}, []mountFacts{
			{"admin-tools/deployment/uptime-kuma", "kuma-vol", "claim", "admin-tools/kuma-pvc", mounts.ClassUnknown, true, "uptime-kuma", false},
		}, true},
		{"uptime-kuma-k8s with an NFS standard class", []string{filepath.Join(pub, "uptime-kuma-k8s"), filepath.Join("testdata", "handwritten", "standard-is-nfs.yaml")}, []mountFacts{
			{"admin-tools/deployment/uptime-kuma", "kuma-vol", "claim", "admin-tools/kuma-pvc", mounts.ClassNetwork, true, "uptime-kuma", false},
		}, true},
		{"uptime-kuma-example", []string{filepath.Join(pub, "uptime-kuma-example", "kubernetes-example.yaml")}, []mountFacts{
			{"uptime-kuma/deployment/uptime-kuma", "uptime-kuma-data", "claim", "uptime-kuma/uptime-kuma-data", mounts.ClassUnknown, true, "uptime-kuma", false},
		}, false},
		{"uptime-kuma-statefulset", []string{filepath.Join(pub, "uptime-kuma-statefulset")}, []mountFacts{
			{"statefulset/uptime-kuma", "uptime-kuma-data", "template", "uptime-kuma-data-uptime-kuma-*", mounts.ClassUnknown, true, "uptime-kuma", false},
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := analyze(t, manifest.Options{}, c.inputs...)
			if d := cmp.Diff(c.want, facts(a)); d != "" {
				t.Errorf("Analyze mounts (-want +got):\n%s", d)
			}
			if len(a.Workloads) != 1 || a.Workloads[0].Surge != c.surge {
				t.Errorf("Analyze workloads = %+v, want one with Surge %v", a.Workloads, c.surge)
			}
		})
	}
}

func TestAnalyzeHandwritten(t *testing.T) {
	a := analyze(t, manifest.Options{DataClaims: []string{"jobs/app-db", "nowhere"}}, filepath.Join("testdata", "handwritten"))
	got := map[string]mountFacts{}
	for _, f := range facts(a) {
		got[f.Workload+" "+f.Volume] = f
	}
	for k, want := range map[string]mountFacts{
		"jobs/job/importer db":              {"jobs/job/importer", "db", "claim", "jobs/app-db", mounts.ClassNetwork, true, "", false},
		"daemonset/per-node data":           {"daemonset/per-node", "data", "hostPath", "", mounts.ClassLocal, true, "uptime-kuma", false},
		"pod/kuma-backup data":              {"pod/kuma-backup", "data", "claim", "kuma", mounts.ClassLocal, true, "uptime-kuma", true},
		"git/statefulset/gitea data":        {"git/statefulset/gitea", "data", "template", "git/data-gitea-*", mounts.ClassNetwork, true, "gitea", false},
		"git/statefulset/gitea cache":       {"git/statefulset/gitea", "cache", "template", "git/cache-gitea-*", mounts.ClassLocal, false, "", false},
		"vault/deployment/vaultwarden data": {"vault/deployment/vaultwarden", "data", "claim", "vault/vw-data", mounts.ClassNetwork, true, "vaultwarden", false},
		"notes/deployment/memos data":       {"notes/deployment/memos", "data", "claim", "notes/memos", mounts.ClassUnknown, true, "memos", false},
	} {
		if d := cmp.Diff(want, got[k]); d != "" {
			t.Errorf("Analyze mount %s (-want +got):\n%s", k, d)
		}
	}
	if d := cmp.Diff([]string{"nowhere"}, a.DataClaimsUnused); d != "" {
		t.Errorf("DataClaimsUnused (-want +got):\n%s", d)
	}
	for _, w := range a.Workloads {
		if w.Key() == "notes/deployment/memos" && (w.Surge || w.MaxSurge != "0") {
			t.Errorf("memos (maxSurge: 0) = %+v, want no surge", w)
		}
	}
}

// TestUseOverlaps: two mounts of one volume reach the same files when one
// subPath is equal to or inside the other by path components, when
// either is the volume's root, or when either is a subPathExpr with
// variables. Case is not a difference: an SMB share folds it.
func TestUseOverlaps(t *testing.T) {
	for _, c := range []struct {
		a, b manifest.Use
		want bool
	}{
		{manifest.Use{SubPath: "sonarr/config"}, manifest.Use{SubPath: "radarr/config"}, false},
		{manifest.Use{SubPath: "vaultwarden"}, manifest.Use{SubPath: "vaultwarden-backup"}, false},
		{manifest.Use{SubPath: "sonarr"}, manifest.Use{SubPath: "sonarr/config"}, true},
		{manifest.Use{SubPath: "./sonarr/config/"}, manifest.Use{SubPath: "sonarr/config"}, true},
		{manifest.Use{SubPath: "sonarr/config"}, manifest.Use{}, true},
		{manifest.Use{SubPath: "."}, manifest.Use{SubPath: "memos"}, true},
		{manifest.Use{SubPath: "Vaultwarden"}, manifest.Use{SubPath: "vaultwarden/"}, true},
		{manifest.Use{SubPath: "Sonarr"}, manifest.Use{SubPath: "sonarr/config"}, true},
		{manifest.Use{SubPath: "$(POD_NAME)", SubPathUnknown: true}, manifest.Use{SubPath: "memos"}, true},
	} {
		if got := c.a.Overlaps(c.b); got != c.want {
			t.Errorf("Use{SubPath: %q}.Overlaps(Use{SubPath: %q}) = %v, want %v", c.a.SubPath, c.b.SubPath, got, c.want)
		}
		if got := c.b.Overlaps(c.a); got != c.want {
			t.Errorf("Use{SubPath: %q}.Overlaps(Use{SubPath: %q}) = %v, want %v", c.b.SubPath, c.a.SubPath, got, c.want)
		}
	}
}

// A container of an image the catalogue does not know declares its data
// itself: preflight run --data-dir in its command or args, or
// PREFLIGHT_DATA_DIR in its env or a ConfigMap it loads, at, below or
// above the mount; not after preflight run's "--", nor another directory.
func TestAnalyzeDeclaredDataDir(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: pf}\ndata: {PREFLIGHT_DATA_DIR: /srv/app}\n---\n"
	for _, c := range []struct {
		name, fields string
		sqlite       bool
		why          string
	}{
		{"command", "command: [preflight, run, --data-dir, /srv/app, --, app]", true, "container app runs preflight run --data-dir /srv/app"},
		{"command and args, below the mount", "command: [/bin/preflight]\n          args: [run, \"--data-dir=/etc,/srv/app/db\", --, app]", true, "container app runs preflight run --data-dir /srv/app/db"},
		{"after tini", "command: [tini, --, preflight, run, --data-dir, /srv, --, app]", true, "container app runs preflight run --data-dir /srv"},
		{"after --", "command: [preflight, run, --, app, --data-dir, /srv/app]", false, ""},
		{"another directory", "command: [preflight, run, --data-dir, /srv/application, --, app]", false, ""},
		{"env", "env: [{name: PREFLIGHT_DATA_DIR, value: \"/tmp,/srv/app\"}]", true, "container app has PREFLIGHT_DATA_DIR=/tmp,/srv/app (env of container app)"},
		{"env from a ConfigMap", "envFrom: [{configMapRef: {name: pf}}]", true, "container app has PREFLIGHT_DATA_DIR=/srv/app (ConfigMap pf, by envFrom)"},
		{"env valueFrom", "env: [{name: PREFLIGHT_DATA_DIR, valueFrom: {configMapKeyRef: {name: pf, key: dir}}}]", false, ""},
	} {
		y := cm + `apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: app
          image: registry.example/me/app:1
          ` + c.fields + `
          volumeMounts: [{name: data, mountPath: /srv/app}]
      volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
`
		objs, err := manifest.Parse(strings.NewReader(y), "app.yaml")
		if err != nil {
			t.Fatalf("%s: Parse: %v", c.name, err)
		}
		a, err := manifest.Analyze(objs, []string{"app.yaml"}, manifest.Options{Catalogue: compose.Builtin()})
		if err != nil {
			t.Fatalf("%s: Analyze: %v", c.name, err)
		}
		m := a.Mounts[0]
		if m.SQLite != c.sqlite || m.Why != c.why || m.Declared != c.sqlite {
			t.Errorf("%s: mount SQLite %v, Declared %v, Why %q; want %v, %q", c.name, m.SQLite, m.Declared, m.Why, c.sqlite, c.why)
		}
	}
}
