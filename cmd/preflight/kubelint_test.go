package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/manifest"
)

// kubeTestdata is manifest/testdata: public/ holds real manifests with
// their sources, handwritten/ labelled minimal cases.
var kubeTestdata = filepath.Join("..", "..", "manifest", "testdata")

func needKube(t *testing.T) {
	t.Helper()
	if !manifest.Built {
		t.Skip("preflight kube is not built in (-tags nocompose)")
	}
}

// TestKubeExitCodes: preflight kube exits by the one table, by the
// verdict at --fail-on, and 2 on bad input.
func TestKubeExitCodes(t *testing.T) {
	needKube(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nmetadata: {name: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pub, hand := filepath.Join(kubeTestdata, "public"), filepath.Join(kubeTestdata, "handwritten")
	for _, c := range []struct {
		args []string
		want int
		out  string
	}{
		{[]string{"-f", filepath.Join(pub, "uptime-kuma-k8s")}, exitOK, "WARN rolling-update-on-sqlite-claim: admin-tools/deployment/uptime-kuma"},
		{[]string{"-f", filepath.Join(pub, "uptime-kuma-k8s"), "--fail-on", "warn"}, exitWarn, "run: kubectl patch deployment uptime-kuma -n admin-tools --type merge -p '{\"metadata\":{\"annotations\":{\"kube-score/ignore\":\"deployment-strategy,deployment-replicas\",\"polaris.fairwinds.com/deploymentMissingReplicas-exempt\":\"true\"}},\"spec\":{\"strategy\":{\"type\":\"Recreate\",\"rollingUpdate\":null}}}'"},
		{[]string{"-f", filepath.Join(pub, "uptime-kuma-k8s"), "--fail-on", "warn", "--ignore", "rolling-update-on-sqlite-claim"}, exitOK, "INFO rolling-update-on-sqlite-claim (ignored)"},
		{[]string{"-f", filepath.Join(pub, "uptime-kuma-example", "kubernetes-example.yaml"), "--fail-on", "warn"}, exitOK, "verdict: ok"},
		{[]string{"-f", filepath.Join(hand, "rwx-nfs-class.yaml")}, exitUnsafe, "ERROR rwx-on-network-class: claim vault/vw-data"},
		{[]string{"-f", filepath.Join(hand, "static-nfs-pv.yaml")}, exitOK, "not judged: 1 read-write claim of images not in the catalogue (name those that hold SQLite data with --data-claim):\n  jobs/job/importer claim jobs/app-db\n"},
		{[]string{"-f", filepath.Join(hand, "rwx-nfs-class.yaml"), "--fail-on", "never"}, exitOK, "verdict: unsafe"},
		{[]string{"-f", filepath.Join(kubeTestdata, "homelab", "pihole-dnspolicy-twice.yaml")}, exitOK, "WARN duplicate-manifest-key: " + filepath.Join(kubeTestdata, "homelab", "pihole-dnspolicy-twice.yaml") + ` line 53: key "dnsPolicy" of pihole/deployment/pihole is written 2 times in spec.template.spec (earlier at line 37): the value at line 53 was read`},
		{[]string{"-f", filepath.Join(kubeTestdata, "homelab", "vaultwarden-backup-cronjob.yaml")}, exitOK, "WARN cronjob-overlap-on-sqlite-claim: vaultwarden/cronjob/vaultwarden-backup has concurrencyPolicy Allow (the default: the field is absent) and mounts claim vaultwarden/vaultwarden-data"},
		{[]string{"-f", filepath.Join(kubeTestdata, "homelab", "uptime-kuma-helm-rwx.yaml")}, exitUnsafe, "ERROR replicas-on-sqlite-claim: monitoring/deployment/uptime-kuma runs replicas: 2"},
		{[]string{"-f", filepath.Join(kubeTestdata, "homelab", "homebox.yaml"), "-f", filepath.Join(kubeTestdata, "homelab", "homebox-secret.yaml"), "--fail-on", "warn"}, exitOK, "not SQLite:\n  homebox/deployment/homebox volume data: homebox uses another database engine: HBOX_DATABASE_DRIVER=postgres (Secret homebox-env, by envFrom)\n"},
		{[]string{"-f", bad}, exitUsage, ""},
		{[]string{"-f", filepath.Join(t.TempDir(), "missing.yaml")}, exitUsage, ""},
		{[]string{}, exitUsage, ""},
	} {
		out, stderr, code := runMain(t, append([]string{"kube"}, c.args...)...)
		if code != c.want || !strings.Contains(out, c.out) {
			t.Errorf("preflight kube %v: exit %d, want %d; stdout %q does not hold %q; stderr %q", c.args, code, c.want, out, c.out, stderr)
		}
		if c.want == exitUsage && !strings.HasPrefix(stderr, "preflight: error: ") {
			t.Errorf("preflight kube %v: stderr %q, want preflight: error: ...", c.args, stderr)
		}
	}
}

// TestKubeStdinJSON: -f - reads standard input (helm template | preflight
// kube -f -); the JSON carries the analysis and each finding's patch.
func TestKubeStdinJSON(t *testing.T) {
	needKube(t)
	src, err := os.ReadFile(filepath.Join(kubeTestdata, "handwritten", "static-nfs-pv.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { w.Write(src); w.Close() }()
	old := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = old }()
	out, stderr, code := runMain(t, "kube", "-f", "-", "--data-claim", "jobs/app-db", "--data-claim", "other", "--format", "json")
	if code != exitUnsafe {
		t.Fatalf("kube -f - --format json: exit %d, want %d\n%s", code, exitUnsafe, stderr)
	}
	if !strings.Contains(stderr, "preflight: warning: --data-claim other: no workload in the input mounts that claim") {
		t.Errorf("stderr %q, want the unused --data-claim warning", stderr)
	}
	var rep preflight.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("decode: %v\n%s", err, out)
	}
	if rep.Schema != preflight.Schema || rep.Manifests == nil || len(rep.Manifests.Files) != 1 || rep.Manifests.Files[0] != "-" || len(rep.Manifests.Mounts) != 1 || !rep.Manifests.Mounts[0].SQLite {
		t.Fatalf("report = schema %q, kube %+v; want the stdin analysis with one SQLite mount", rep.Schema, rep.Manifests)
	}
	got := map[string]string{}
	for _, f := range rep.Findings {
		if f.Patch != nil {
			var b bytes.Buffer
			if err := json.Compact(&b, f.Patch.Merge); err != nil {
				t.Fatalf("finding %s patch %s: %v", f.ID, f.Patch.Merge, err)
			}
			got[string(f.ID)] = b.String()
		}
	}
	want := map[string]string{"replicas-on-sqlite-claim": `{"spec":{"parallelism":1}}`, "rwx-on-network-class": `{"spec":{"accessModes":["ReadWriteOnce"]}}`}
	for id, p := range want {
		if got[id] != p {
			t.Errorf("finding %s patch = %q, want %q", id, got[id], p)
		}
	}
}

// TestKubeSARIF: each finding sits at the line of the object its patch
// changes (the claim for rwx-on-network-class), and the log validates.
func TestKubeSARIF(t *testing.T) {
	needKube(t)
	sch := loadSARIFSchema(t)
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(kubeTestdata, "handwritten", "rwx-nfs-class.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	out, stderr, code := runMain(t, "kube", "-f", "app.yaml", "--format", "sarif")
	if code != exitUnsafe {
		t.Fatalf("kube --format sarif: exit %d, want %d\n%s", code, exitUnsafe, stderr)
	}
	l := decodeSARIF(t, sch, out)
	for id, line := range map[string]int{"rwx-on-network-class": 12, "replicas-on-sqlite-claim": 24, "rolling-update-on-sqlite-claim": 24} {
		loc := sarifFind(t, l, id).Locations[0].PhysicalLocation
		if loc.ArtifactLocation.URI != "app.yaml" || loc.ArtifactLocation.URIBaseID != srcRoot || loc.Region.StartLine != line {
			t.Errorf("%s at %+v, want app.yaml (base %s) line %d", id, loc, srcRoot, line)
		}
	}
}

// TestKubeSARIFDuplicateKey: a duplicate key sits at the key's line (the
// one kept, as the text output says), in its own file: a workload's, and
// that of an object that is not a workload (a Service in the second file),
// not at the object's first line nor the first manifest.
func TestKubeSARIFDuplicateKey(t *testing.T) {
	needKube(t)
	sch := loadSARIFSchema(t)
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(kubeTestdata, "homelab", "pihole-dnspolicy-twice.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	svc := "# the DNS service\napiVersion: v1\nkind: Service\nmetadata: {name: pihole-dns, namespace: pihole}\nspec:\n  type: LoadBalancer\n  type: NodePort\n  ports: [{port: 53, protocol: UDP}]\n"
	for name, b := range map[string][]byte{"pihole.yaml": src, "service.yaml": []byte(svc)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	out, stderr, code := runMain(t, "kube", "-f", "pihole.yaml", "-f", "service.yaml", "--format", "sarif")
	if code != exitOK {
		t.Fatalf("kube --format sarif: exit %d, want %d\n%s", code, exitOK, stderr)
	}
	l := decodeSARIF(t, sch, out)
	var got []string
	for _, run := range l.Runs {
		for _, r := range run.Results {
			if r.RuleID == "duplicate-manifest-key" {
				loc := r.Locations[0].PhysicalLocation
				got = append(got, fmt.Sprintf("%s:%d", loc.ArtifactLocation.URI, loc.Region.StartLine))
			}
		}
	}
	if want := []string{"pihole.yaml:53", "service.yaml:7"}; !slices.Equal(got, want) {
		t.Errorf("duplicate-manifest-key results at %v, want %v", got, want)
	}
}

// TestKubeSARIFHelmStdin: objects read from stdin that helm template
// rendered are located at their chart template (its "# Source:" comment).
func TestKubeSARIFHelmStdin(t *testing.T) {
	needKube(t)
	sch := loadSARIFSchema(t)
	// Hand-written in the form helm template prints (a "# Source:" line
	// before each document).
	src := "---\n# Source: kuma/templates/deployment.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: kuma\nspec:\n  template:\n    spec:\n      containers:\n        - name: kuma\n          image: louislam/uptime-kuma:2\n          volumeMounts: [{name: data, mountPath: /app/data}]\n      volumes:\n        - name: data\n          persistentVolumeClaim: {claimName: kuma}\n"
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { w.Write([]byte(src)); w.Close() }()
	old := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = old }()
	t.Chdir(t.TempDir())
	out, stderr, code := runMain(t, "kube", "-f", "-", "--format", "sarif")
	if code != exitOK {
		t.Fatalf("kube -f - --format sarif: exit %d, want %d\n%s", code, exitOK, stderr)
	}
	loc := sarifFind(t, decodeSARIF(t, sch, out), "rolling-update-on-sqlite-claim").Locations[0].PhysicalLocation
	if loc.ArtifactLocation.URI != "kuma/templates/deployment.yaml" || loc.Region.StartLine != 0 {
		t.Errorf("rolling-update-on-sqlite-claim at %+v, want kuma/templates/deployment.yaml without a line", loc)
	}
}
