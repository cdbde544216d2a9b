package preflight_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/convert"
	"github.com/preflight-sqlite/preflight/internal/kubetest"
	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/kube"
)

// kubePod is a pod manifest on node with the claim mounted at mountPath.
func kubePod(ns, name, node, claim, mountPath, owner string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
%s
spec:
  nodeName: %s
  containers:
  - name: app
    image: ghcr.io/example/app:1
    volumeMounts:
    - {name: data, mountPath: %q}
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: %s}
`, name, ns, owner, node, mountPath, claim)
}

// kubeNFSClaim is a namespace, an NFS PV of server:export bound to claim
// ns/claim (ReadWriteMany), and the claim.
func kubeNFSClaim(ns, pv, claim, export string, namespace bool) string {
	out := ""
	if namespace {
		out = fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n---\n", ns)
	}
	return out + fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata: {name: %s}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteMany]
  storageClassName: ""
  nfs: {server: 10.0.0.5, path: %s}
  claimRef: {namespace: %s, name: %s}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: %s, namespace: %s}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: ""
  volumeName: %s
  resources: {requests: {storage: 1Gi}}
`, pv, export, ns, claim, claim, ns, pv)
}

func kubeCheck(t *testing.T, c *kubetest.Cluster, dir, pod, token string) *preflight.Report {
	t.Helper()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := c.WriteKubeconfig(kc, token); err != nil {
		t.Fatal(err)
	}
	r, err := preflight.Check(context.Background(), preflight.Options{Paths: []string{dir}, Writers: preflight.WriterOptions{
		Docker: docker.Options{Mode: docker.ModeOff},
		Kube:   kube.Options{Kubeconfig: kc, Pod: pod, Timeout: 10 * time.Second},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustApply(t *testing.T, c *kubetest.Cluster, manifest string, running ...string) {
	t.Helper()
	c.MustApply(manifest)
	for _, nsName := range running {
		ns, name, _ := strings.Cut(nsName, "/")
		if err := c.PatchPodPhase(ns, name, "Running"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKubeWriterPods runs the Kubernetes probe and rules against a real
// API server: pods on one RWX NFS claim on two nodes, a pod on another PV
// of the same export, a Deployment's RollingUpdate and replicas, and a
// service account with too little RBAC.
func TestKubeWriterPods(t *testing.T) {
	c := kubetest.Start(t)
	t.Run("two-nodes-rwx-wal", func(t *testing.T) {
		dir := t.TempDir()
		testdb.Make(t, filepath.Join(dir, "app.db"), "wal", 3)
		mustApply(t, c, kubeNFSClaim("two", "two-pv", "data", "/export/two", true)+"---\n"+
			kubePod("two", "me", "node-a", "data", dir, "")+"---\n"+kubePod("two", "other", "node-b", "data", dir, ""),
			"two/me", "two/other")
		r := kubeCheck(t, c, dir, "two/me", c.AdminToken)
		f := finding(r, "live-writer-pod")
		if f == nil || f.Level != preflight.LevelError || !strings.Contains(f.Message, "pod two/other (node node-b, another node, Running") {
			t.Fatalf("live-writer-pod = %+v, want error naming pod two/other on node-b (findings %s)", f, ids(r))
		}
		if !strings.Contains(strings.Join(f.Remedy, " "), "kubectl -n two delete pod other") {
			t.Errorf("live-writer-pod remedy %q, want kubectl delete pod", f.Remedy)
		}
		if w := finding(r, "wal-on-network-fs"); w == nil || !strings.Contains(w.Message, "PV two-pv of claim data: nfs 10.0.0.5:/export/two, network; the mount table says") {
			t.Errorf("no wal-on-network-fs: the PV's NFS class must win over the mount table's local (findings %s)", ids(r))
		}
		if r.FSClass != "network" || r.JournalMode != "delete" {
			t.Errorf("fs_class %s, recommended journal mode %s; want network, delete (the PV is NFS)", r.FSClass, r.JournalMode)
		}
		if r.Verdict != preflight.VerdictUnsafe {
			t.Errorf("verdict %s, want unsafe", r.Verdict)
		}
		if db := r.DataDirs[0].Databases[0]; db.WriterProbes.Kube != "ran" {
			t.Errorf("writer_probes.kube = %q, want ran", db.WriterProbes.Kube)
		}
	})
	t.Run("convert-refuses", func(t *testing.T) {
		dir := t.TempDir()
		db := filepath.Join(dir, "app.db")
		testdb.Make(t, db, "wal", 3)
		mustApply(t, c, kubeNFSClaim("conv", "conv-pv", "data", "/export/conv", true)+"---\n"+
			kubePod("conv", "me", "node-a", "data", dir, "")+"---\n"+kubePod("conv", "other", "node-b", "data", dir, ""),
			"conv/me", "conv/other")
		kc := filepath.Join(t.TempDir(), "kubeconfig")
		if err := c.WriteKubeconfig(kc, c.AdminToken); err != nil {
			t.Fatal(err)
		}
		before, err := os.ReadFile(db)
		if err != nil {
			t.Fatal(err)
		}
		res, err := convert.Run(context.Background(), convert.Options{Paths: []string{dir}, Confirmed: true, AllowUnverified: true,
			Check: preflight.Options{Writers: preflight.WriterOptions{Docker: docker.Options{Mode: docker.ModeOff},
				Kube: kube.Options{Kubeconfig: kc, Pod: "conv/me", Timeout: 10 * time.Second}}}})
		if err != nil {
			t.Fatal(err)
		}
		d := res.Databases[0]
		var msgs []string
		for _, r := range d.Refusals {
			msgs = append(msgs, r.Message+" | "+strings.Join(r.Remedy, " "))
		}
		all := strings.Join(msgs, "; ")
		if d.Status != convert.StatusRefused || !strings.Contains(all, "pod conv/other (node node-b, another node, Running) mounts the database's storage read-write (same claim data)") || !strings.Contains(all, "kubectl -n conv delete pod other") {
			t.Fatalf("convert = %s, refusals %q; want refused naming pod conv/other and kubectl delete pod", d.Status, all)
		}
		if after, _ := os.ReadFile(db); string(after) != string(before) {
			t.Errorf("convert changed %s while refusing", db)
		}
	})
	t.Run("same-export-other-pv", func(t *testing.T) {
		dir := t.TempDir()
		testdb.Make(t, filepath.Join(dir, "app.db"), "delete", 3)
		mustApply(t, c, kubeNFSClaim("exp", "exp-pv1", "data", "/export/shared", true)+"---\n"+
			kubeNFSClaim("exp", "exp-pv2", "data2", "/export/shared/", false)+"---\n"+
			kubePod("exp", "me", "node-a", "data", dir, "")+"---\n"+kubePod("exp", "backup", "node-b", "data2", "/backup", ""),
			"exp/me", "exp/backup")
		r := kubeCheck(t, c, dir, "exp/me", c.AdminToken)
		f := finding(r, "live-writer-pod")
		if f == nil || f.Level != preflight.LevelWarn || !strings.Contains(f.Message, "pod exp/backup") || !strings.Contains(f.Message, "PV exp-pv2 with the same NFS export 10.0.0.5:/export/shared") {
			t.Fatalf("live-writer-pod = %+v, want warn naming exp/backup through PV exp-pv2 (findings %s)", f, ids(r))
		}
	})
	t.Run("deployment-rolling-update", func(t *testing.T) {
		dir := t.TempDir()
		testdb.Make(t, filepath.Join(dir, "app.db"), "delete", 3)
		mustApply(t, c, kubeNFSClaim("dep", "dep-pv", "data", "/export/dep", true))
		objs := c.MustApply(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: dep, annotations: {kube-score/ignore: pod-networkpolicy}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: ghcr.io/example/app:1}]
`)
		duid := objs[0]["metadata"].(map[string]any)["uid"].(string)
		objs = c.MustApply(fmt.Sprintf(`apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-5d8f
  namespace: dep
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: %s, controller: true}]
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: ghcr.io/example/app:1}]
`, duid))
		rsuid := objs[0]["metadata"].(map[string]any)["uid"].(string)
		owner := fmt.Sprintf("  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d8f, uid: %s, controller: true}]", rsuid)
		mustApply(t, c, kubePod("dep", "web-5d8f-a", "node-a", "data", dir, owner)+"---\n"+kubePod("dep", "web-5d8f-b", "node-a", "data", dir, owner),
			"dep/web-5d8f-a", "dep/web-5d8f-b")
		r := kubeCheck(t, c, dir, "dep/web-5d8f-a", c.AdminToken)
		f := finding(r, "rolling-update-on-sqlite-claim")
		if f == nil || !strings.Contains(f.Message, "Deployment dep/web") || !strings.Contains(strings.Join(f.Remedy, " "), `kubectl -n dep patch deployment web --type merge -p '{"metadata":{"annotations":{"kube-score/ignore":"pod-networkpolicy,deployment-strategy,deployment-replicas","polaris.fairwinds.com/deploymentMissingReplicas-exempt":"true"}},"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}'`) {
			t.Fatalf("rolling-update-on-sqlite-claim = %+v, want Deployment dep/web with the Recreate patch (findings %s)", f, ids(r))
		}
		if !strings.Contains(strings.Join(f.Remedy, " "), "Eviction API") {
			t.Errorf("remedy %q does not say Recreate leaves the Eviction API", f.Remedy)
		}
		rf := finding(r, "replicas-on-sqlite-claim")
		replicas := `{"metadata":{"annotations":{"kube-score/ignore":"pod-networkpolicy,deployment-strategy,deployment-replicas","polaris.fairwinds.com/deploymentMissingReplicas-exempt":"true"}},"spec":{"replicas":1}}`
		if rf == nil || !strings.Contains(strings.Join(rf.Remedy, " "), "kubectl -n dep patch deployment web --type merge -p '"+replicas+"'") {
			t.Fatalf("replicas-on-sqlite-claim = %+v, want the replicas: 1 patch with the linters' exemptions", rf)
		}
		// The patch as printed, as kubectl patch --type merge sends it.
		resp, err := c.Send(http.MethodPatch, "/apis/apps/v1/namespaces/dep/deployments/web", "application/merge-patch+json", []byte(replicas))
		if err != nil || resp.Status != http.StatusOK || !strings.Contains(string(resp.Body), `"kube-score/ignore":"pod-networkpolicy,deployment-strategy,deployment-replicas"`) || !strings.Contains(string(resp.Body), `"replicas":1,`) {
			t.Errorf("the printed replicas patch on the API server: %v, %+v", err, resp)
		}
		lw := finding(r, "live-writer-pod")
		if lw == nil || lw.Level != preflight.LevelInfo || !strings.Contains(lw.Message, "dep/web-5d8f-b (node node-a, ours, Running, Deployment web)") {
			t.Errorf("live-writer-pod = %+v, want info naming dep/web-5d8f-b on our node, owner Deployment web", lw)
		}
	})
	t.Run("too-little-rbac", func(t *testing.T) {
		dir := t.TempDir()
		testdb.Make(t, filepath.Join(dir, "app.db"), "wal", 3)
		mustApply(t, c, kubeNFSClaim("rbac", "rbac-pv", "data", "/export/rbac", true)+"---\n"+
			kubePod("rbac", "me", "node-a", "data", dir, "")+`---
apiVersion: v1
kind: ServiceAccount
metadata: {name: probe, namespace: rbac}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pods-only, namespace: rbac}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: pods-only, namespace: rbac}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pods-only}
subjects: [{kind: ServiceAccount, name: probe, namespace: rbac}]
`, "rbac/me")
		tok, err := c.Token("rbac", "probe")
		if err != nil {
			t.Fatal(err)
		}
		r := kubeCheck(t, c, dir, "rbac/me", tok)
		f := finding(r, "kube-permission-denied")
		if f == nil || !strings.Contains(f.Message, "get persistentvolumeclaims in namespace rbac") {
			t.Fatalf("kube-permission-denied = %+v, want get persistentvolumeclaims named (findings %s)", f, ids(r))
		}
		db := r.DataDirs[0].Databases[0]
		if db.WriterProbes.Sure || !strings.Contains(strings.Join(db.WriterProbes.Blind, "; "), "pods: ") {
			t.Errorf("writer_probes = %+v, want not sure, pods named blind", db.WriterProbes)
		}
	})
	t.Run("example-rbac", func(t *testing.T) {
		dir := t.TempDir()
		testdb.Make(t, filepath.Join(dir, "app.db"), "wal", 3)
		for _, f := range []string{"rbac.yaml", "rbac-cluster.yaml"} {
			b, err := os.ReadFile(filepath.Join("examples", "kubernetes", f))
			if err != nil {
				t.Fatal(err)
			}
			mustApply(t, c, "apiVersion: v1\nkind: Namespace\nmetadata: {name: app}\n---\n"+string(b))
		}
		mustApply(t, c, kubeNFSClaim("app", "app-pv", "data", "/export/app", false)+"---\n"+kubePod("app", "me", "node-a", "data", dir, ""), "app/me")
		tok, err := c.Token("app", "sqlite-app")
		if err != nil {
			t.Fatal(err)
		}
		r := kubeCheck(t, c, dir, "app/me", tok)
		if r.Kube == nil || r.Kube.Status != kube.StatusRan || !r.Kube.Sure || len(r.Kube.Denied) > 0 {
			t.Fatalf("with examples/kubernetes RBAC: kube = %+v, want ran, sure, nothing denied", r.Kube)
		}
		if p := r.Kube.Paths[0]; p.PV != "app-pv" || p.Storage.Class != "network" {
			t.Errorf("path %+v, want PV app-pv, class network", p)
		}
	})
}
