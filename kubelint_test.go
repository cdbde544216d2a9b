package preflight_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/manifest"
)

type kubeCase struct {
	name       string
	inputs     []string
	dataClaims []string
	// want is every finding as "level id path", in report order.
	want    []string
	verdict preflight.Verdict
}

var (
	kubePublic = filepath.Join("manifest", "testdata", "public")
	kubeHand   = filepath.Join("manifest", "testdata", "handwritten")
	kubeHome   = filepath.Join("manifest", "testdata", "homelab")
)

// kubeCases are the real public manifests (manifest/testdata/public, with
// their sources), alone and with a StorageClass a cluster might have, and
// the labelled hand-written edge cases.
var kubeCases = []kubeCase{
	{"uptime-kuma k8s: default strategy", []string{filepath.Join(kubePublic, "uptime-kuma-k8s")}, nil,
		[]string{"warn rolling-update-on-sqlite-claim admin-tools/deployment/uptime-kuma"}, preflight.VerdictWarn},
	{"uptime-kuma docker/k8s: default strategy", []string{filepath.Join(kubePublic, "uptime-kuma-docker-k8s")}, nil,
		[]string{"warn rolling-update-on-sqlite-claim deployment/kuma"}, preflight.VerdictWarn},
	{"uptime-kuma k8s on an NFS standard class", []string{filepath.Join(kubePublic, "uptime-kuma-k8s"), filepath.Join(kubeHand, "standard-is-nfs.yaml")}, nil,
		[]string{"error rolling-update-on-sqlite-claim admin-tools/deployment/uptime-kuma"}, preflight.VerdictUnsafe},
	{"uptime-kuma example: Recreate, one replica", []string{filepath.Join(kubePublic, "uptime-kuma-example")}, nil, nil, preflight.VerdictOK},
	{"uptime-kuma kustomize: Recreate, one replica", []string{filepath.Join(kubePublic, "uptime-kuma-kustomize")}, nil, nil, preflight.VerdictOK},
	{"uptime-kuma statefulset: one claim per replica", []string{filepath.Join(kubePublic, "uptime-kuma-statefulset")}, nil, nil, preflight.VerdictOK},
	{"vaultwarden on RWX NFS, two replicas", []string{filepath.Join(kubeHand, "rwx-nfs-class.yaml")}, nil, []string{
		"error rolling-update-on-sqlite-claim vault/deployment/vaultwarden",
		"error replicas-on-sqlite-claim vault/deployment/vaultwarden",
		"error rwx-on-network-class vault/deployment/vaultwarden",
	}, preflight.VerdictUnsafe},
	{"job on a static NFS PV, named claim", []string{filepath.Join(kubeHand, "static-nfs-pv.yaml")}, []string{"jobs/app-db"}, []string{
		"error replicas-on-sqlite-claim jobs/job/importer",
		"error rwx-on-network-class jobs/job/importer",
	}, preflight.VerdictUnsafe},
	{"kube-score and Polaris annotations that ask for replicas", []string{filepath.Join(kubeHand, "linter-annotations.yaml")}, nil, []string{
		"warn rolling-update-on-sqlite-claim git/deployment/gitea",
		"warn replicas-on-sqlite-claim git/deployment/gitea",
		"warn linter-annotation-conflict git/deployment/gitea",
	}, preflight.VerdictWarn},
	{"job of parallelism 3 on a static NFS PV, claim not named: not judged, several writers", []string{filepath.Join(kubeHand, "static-nfs-pv.yaml")}, nil, []string{
		"warn claim-not-judged jobs/job/importer",
	}, preflight.VerdictWarn},
	{"daemonset and deployment on one claim", []string{filepath.Join(kubeHand, "daemonset-shared.yaml")}, nil, []string{
		"error daemonset-on-sqlite-claim daemonset/kuma-agent",
		"warn shared-sqlite-claim daemonset/kuma-agent",
	}, preflight.VerdictUnsafe},
	{"cronjobs beside a deployment", []string{filepath.Join(kubeHand, "cronjob.yaml")}, nil, []string{
		"warn shared-sqlite-claim media/deployment/radarr",
		"warn replicas-on-sqlite-claim media/cronjob/radarr-export",
		"warn cronjob-overlap-on-sqlite-claim media/cronjob/radarr-export",
	}, preflight.VerdictWarn},
	{"pi-hole with dnsPolicy twice: the last is read, a warning", []string{filepath.Join(kubeHome, "pihole-dnspolicy-twice.yaml")}, nil, []string{
		"warn duplicate-manifest-key pihole/deployment/pihole",
	}, preflight.VerdictWarn},
	{"vaultwarden, memos, linkding on one NFS claim by subPath: not one database", []string{filepath.Join(kubeHome, "nfs-apps-by-subpath.yaml")}, nil, []string{
		"error rwx-on-network-class apps/deployment/linkding",
	}, preflight.VerdictUnsafe},
	{"sonarr and radarr configs by subPath of one claim", []string{filepath.Join(kubeHome, "arr-config-subpaths.yaml")}, nil, nil, preflight.VerdictOK},
	{"sonarr and radarr configs, with a subPathExpr and a root mount beside them", []string{filepath.Join(kubeHome, "arr-config-subpaths.yaml"), filepath.Join(kubeHome, "arr-config-overlap.yaml")}, nil, []string{
		"warn shared-sqlite-claim media/deployment/sonarr",
		"warn shared-sqlite-claim media/deployment/radarr",
	}, preflight.VerdictWarn},
	{"vaultwarden and a backup CronJob of a plain image running sqlite3", []string{filepath.Join(kubeHome, "vaultwarden-backup-cronjob.yaml")}, nil, []string{
		"warn shared-sqlite-claim vaultwarden/deployment/vaultwarden",
		"warn cronjob-overlap-on-sqlite-claim vaultwarden/cronjob/vaultwarden-backup",
	}, preflight.VerdictWarn},
	{"uptime-kuma helm output: two replicas on a ReadWriteMany claim of a class not in the input", []string{filepath.Join(kubeHome, "uptime-kuma-helm-rwx.yaml")}, nil, []string{
		"error rolling-update-on-sqlite-claim monitoring/deployment/uptime-kuma",
		"error replicas-on-sqlite-claim monitoring/deployment/uptime-kuma",
		"warn rwx-on-network-class monitoring/deployment/uptime-kuma",
	}, preflight.VerdictUnsafe},
	{"homebox on PostgreSQL by a Secret it loads with envFrom", []string{filepath.Join(kubeHome, "homebox.yaml"), filepath.Join(kubeHome, "homebox-secret.yaml")}, nil, nil, preflight.VerdictOK},
	{"homebox without its Secret in the input: possibly SQLite", []string{filepath.Join(kubeHome, "homebox.yaml")}, nil, []string{
		"warn rolling-update-on-sqlite-claim homebox/deployment/homebox",
	}, preflight.VerdictWarn},
	{"gitea kustomize output on PostgreSQL by a generated ConfigMap", []string{filepath.Join(kubeHome, "gitea-kustomize.yaml")}, nil, nil, preflight.VerdictOK},
	{"statefulset RWX CephFS template, a List", []string{filepath.Join(kubeHand, "statefulset-cephfs.yaml")}, nil, []string{
		"warn rwx-on-network-class git/statefulset/gitea",
	}, preflight.VerdictWarn},
}

func loadKube(t *testing.T, inputs []string) ([]manifest.Object, []string) {
	t.Helper()
	objs, files, err := manifest.Load(inputs, nil)
	if err != nil {
		t.Fatalf("manifest.Load(%v): %v", inputs, err)
	}
	return objs, files
}

func checkKube(t *testing.T, objs []manifest.Object, files []string, c kubeCase) *preflight.Report {
	t.Helper()
	r, err := preflight.CheckKube(preflight.KubeOptions{Objects: objs, Files: files, DataClaims: c.dataClaims})
	if err != nil {
		t.Fatalf("CheckKube(%v): %v", c.inputs, err)
	}
	return r
}

func kubeFindings(r *preflight.Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, string(f.Level)+" "+string(f.ID)+" "+f.Path)
	}
	return out
}

func TestCheckKube(t *testing.T) {
	for _, c := range kubeCases {
		t.Run(c.name, func(t *testing.T) {
			objs, files := loadKube(t, c.inputs)
			r := checkKube(t, objs, files, c)
			if d := cmp.Diff(c.want, kubeFindings(r)); d != "" {
				t.Errorf("CheckKube(%v) findings (-want +got):\n%s", c.inputs, d)
			}
			if r.Verdict != c.verdict {
				t.Errorf("CheckKube(%v) verdict = %s, want %s", c.inputs, r.Verdict, c.verdict)
			}
			for _, f := range r.Findings {
				if len(f.Remedy) == 0 || !strings.Contains(f.Message, strings.SplitN(f.Path, "/", 3)[len(strings.SplitN(f.Path, "/", 3))-1]) {
					t.Errorf("finding %s: message %q or remedy %q does not name the object", f.ID, f.Message, f.Remedy)
				}
			}
		})
	}
}

// TestKubePatchesFix applies each finding's JSON merge patch to its object
// with evanphx/json-patch (RFC 7386, as kubectl patch --type merge does),
// lints again, and wants that finding gone and no new one.
func TestKubePatchesFix(t *testing.T) {
	patched := 0
	for _, c := range kubeCases {
		objs, files := loadKube(t, c.inputs)
		r := checkKube(t, objs, files, c)
		for _, f := range r.Findings {
			p := f.Patch
			if p == nil {
				if slices.Contains([]string{"rolling-update-on-sqlite-claim", "replicas-on-sqlite-claim", "rwx-on-network-class"}, string(f.ID)) {
					t.Errorf("%s: finding %s at %s has no patch", c.name, f.ID, f.Path)
				}
				continue
			}
			if p.Live && !strings.Contains(p.Command, "kubectl patch "+strings.ToLower(p.Kind)+" "+p.Name) || p.Live && !strings.Contains(p.Command, "--type merge -p '"+string(p.Merge)+"'") {
				t.Errorf("%s: %s patch command %q does not patch %s %s with %s", c.name, f.ID, p.Command, p.Kind, p.Name, p.Merge)
			}
			again := applyPatch(t, objs, p)
			r2 := checkKube(t, again, files, c)
			for _, f2 := range r2.Findings {
				if f2.ID == f.ID && f2.Path == f.Path {
					t.Errorf("%s: after the patch %s to %s %s, %s is still reported: %s", c.name, p.Merge, p.Kind, p.Name, f.ID, f2.Message)
				}
				if !slices.ContainsFunc(r.Findings, func(f preflight.Finding) bool {
					return f.ID == f2.ID && f.Path == f2.Path && f2.Level.Rank() <= f.Level.Rank()
				}) { // a level the patch lowered is not new
					t.Errorf("%s: the patch %s brought a new finding %s %s", c.name, p.Merge, f2.ID, f2.Path)
				}
			}
			patched++
		}
	}
	if patched < 6 {
		t.Errorf("%d patches applied, want every patched finding of the cases (at least 6)", patched)
	}
}

// applyPatch returns objs with the patch's object merge-patched.
func applyPatch(t *testing.T, objs []manifest.Object, p *preflight.KubePatch) []manifest.Object {
	t.Helper()
	out := slices.Clone(objs)
	for i, o := range objs {
		if o.Kind != p.Kind || o.Name != p.Name || o.At != p.At {
			continue
		}
		b, err := jsonpatch.MergePatch(o.JSON, p.Merge)
		if err != nil {
			t.Fatalf("MergePatch(%s %s, %s): %v", o.Kind, o.Name, p.Merge, err)
		}
		n, err := manifest.Parse(bytes.NewReader(b), o.At.File)
		if err != nil || len(n) != 1 {
			t.Fatalf("the patched %s %s does not parse: %v", o.Kind, o.Name, err)
		}
		n[0].At = o.At
		out[i] = n[0]
		return out
	}
	t.Fatalf("no object %s %s at %v for the patch", p.Kind, p.Name, p.At)
	return nil
}

// The strategy patch also fixes a live Deployment, whose strategy the API
// server has defaulted to RollingUpdate with a rollingUpdate block (which
// it refuses beside type Recreate): the patch must remove that block.
func TestKubeStrategyPatchOnLiveObject(t *testing.T) {
	objs, files := loadKube(t, []string{filepath.Join(kubePublic, "uptime-kuma-k8s")})
	r := checkKube(t, objs, files, kubeCase{})
	if len(r.Findings) == 0 || r.Findings[0].Patch == nil {
		t.Fatalf("CheckKube findings = %v, want the rolling-update patch", kubeFindings(r))
	}
	live := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"uptime-kuma"},"spec":{"replicas":1,"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%","maxUnavailable":"25%"}}}}`)
	b, err := jsonpatch.MergePatch(live, r.Findings[0].Patch.Merge)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Spec struct {
			Strategy map[string]any `json:"strategy"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.Spec.Strategy["type"] != "Recreate" || d.Spec.Strategy["rollingUpdate"] != nil {
		t.Errorf("patched live strategy = %v, want type Recreate and no rollingUpdate", d.Spec.Strategy)
	}
}

// TestKubeMergedPatches: Report.Patches holds one patch per object, which
// fixes every finding of that object that has a patch at once (applied
// with evanphx/json-patch, as kubectl patch --type merge does), brings no
// new one, and whose command carries that one patch; an object of three
// findings (rolling update, replicas, linter annotations) gets one.
func TestKubeMergedPatches(t *testing.T) {
	merged := 0
	for _, c := range kubeCases {
		objs, files := loadKube(t, c.inputs)
		r := checkKube(t, objs, files, c)
		seen := map[string]bool{}
		for _, p := range r.Patches {
			key := manifest.ObjectKey(p.Kind, p.Name, p.Namespace)
			if seen[key] {
				t.Errorf("%s: two merged patches of %s", c.name, key)
			}
			seen[key] = true
			if p.Live && !strings.HasSuffix(p.Command, " --type merge -p '"+string(p.Merge)+"'") {
				t.Errorf("%s: merged patch command %q does not carry the patch %s", c.name, p.Command, p.Merge)
			}
			again := applyPatch(t, objs, &p)
			r2 := checkKube(t, again, files, c)
			for _, f := range r.Findings {
				if f.Patch == nil || manifest.ObjectKey(f.Patch.Kind, f.Patch.Name, f.Patch.Namespace) != key {
					continue
				}
				if !slices.Contains(p.Fixes, f.ID) {
					t.Errorf("%s: the merged patch of %s does not list %s", c.name, key, f.ID)
				}
				for _, f2 := range r2.Findings {
					if f2.ID == f.ID && f2.Path == f.Path {
						t.Errorf("%s: after the merged patch %s, %s still gets %s: %s", c.name, p.Merge, key, f.ID, f2.Message)
					}
				}
			}
			for _, f2 := range r2.Findings {
				if !slices.ContainsFunc(r.Findings, func(f preflight.Finding) bool { return f.ID == f2.ID && f.Path == f2.Path }) {
					t.Errorf("%s: the merged patch %s brought a new finding %s %s", c.name, p.Merge, f2.ID, f2.Path)
				}
			}
			if len(p.Fixes) > 1 {
				merged++
			}
		}
		for _, f := range r.Findings {
			if f.Patch != nil && !seen[manifest.ObjectKey(f.Patch.Kind, f.Patch.Name, f.Patch.Namespace)] {
				t.Errorf("%s: %s has a patch but its object no merged one", c.name, f.ID)
			}
		}
	}
	if merged < 2 {
		t.Errorf("%d merged patches fix several findings, want at least 2 of the cases", merged)
	}
}
