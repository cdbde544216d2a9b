package preflight_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/internal/kubetest"
	"github.com/preflight-sqlite/preflight/manifest"
	"github.com/preflight-sqlite/preflight/probe/kube"
)

// auditObjects are the objects of TestKubeAudit (their comment says
// what they are).
var auditObjects = func() string {
	b, err := os.ReadFile(filepath.Join("testdata", "kube-audit", "objects.yaml"))
	if err != nil {
		panic(err)
	}
	return string(b)
}()

const auditPV = `
apiVersion: v1
kind: PersistentVolume
metadata: {name: nas-vw}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteMany]
  nfs: {server: nas.lan, path: /export/vw}
  claimRef: {namespace: vault, name: vw-data}
`

// auditPods makes the Deployment's ReplicaSet and its pods: on nodes a
// and b Running, on node c Pending.
func auditPods(t *testing.T, c *kubetest.Cluster) {
	t.Helper()
	var dep struct {
		Metadata struct{ UID string } `json:"metadata"`
	}
	if err := c.Get("/apis/apps/v1/namespaces/vault/deployments/vaultwarden", c.AdminToken, &dep); err != nil {
		t.Fatal(err)
	}
	objs, err := c.Create(fmt.Sprintf(`apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: vaultwarden-6d4f
  namespace: vault
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: vaultwarden, uid: %q, controller: true}]
spec:
  replicas: 2
  selector: {matchLabels: {app: vaultwarden}}
  template:
    metadata: {labels: {app: vaultwarden}}
    spec:
      containers: [{name: vaultwarden, image: docker.io/vaultwarden/server:1.32.0, volumeMounts: [{name: data, mountPath: /data}]}]
      volumes: [{name: data, persistentVolumeClaim: {claimName: vw-data}}]
`, dep.Metadata.UID))
	if err != nil {
		t.Fatal(err)
	}
	rsUID := objs[0]["metadata"].(map[string]any)["uid"].(string)
	for i, node := range []string{"node-a", "node-b", "node-c"} {
		name := fmt.Sprintf("vaultwarden-6d4f-%d", i)
		if _, err := c.Create(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: vault
  labels: {app: vaultwarden}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: vaultwarden-6d4f, uid: %q, controller: true}]
spec:
  nodeName: %s
  containers: [{name: vaultwarden, image: docker.io/vaultwarden/server:1.32.0, volumeMounts: [{name: data, mountPath: /data}]}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: vw-data}}]
`, name, rsUID, node)); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			continue // Pending, as one held at Multi-Attach: not a writer
		}
		if err := c.PatchPodPhase("vault", name, "Running"); err != nil {
			t.Fatal(err)
		}
	}
}

func auditFindings(r *preflight.Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, fmt.Sprintf("%s %s %s", f.Level, f.ID, f.Path))
	}
	return out
}

// TestKubeAudit creates the objects through a real kube-apiserver and
// audits them: as an admin, and as the ServiceAccount bound to
// examples/kubernetes/audit-rbac.yaml's ClusterRole alone (the same
// findings: the role is enough), while a ServiceAccount without it is
// refused. The findings are those of preflight kube -f on the same
// objects (the claim's NFS PersistentVolume makes them errors), plus the
// two pods running on two nodes; -n quiet reads one namespace, where all
// is well.
func TestKubeAudit(t *testing.T) {
	c := kubetest.Start(t)
	c.MustApply(auditObjects + "---" + auditPV)
	auditPods(t, c)
	rbac, err := os.ReadFile(filepath.Join("examples", "kubernetes", "audit-rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c.MustApply("apiVersion: v1\nkind: Namespace\nmetadata: {name: app}\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: nobody, namespace: app}\n")
	c.MustApply(rbac)
	dir := t.TempDir()
	kubeconfig := func(name, token string) string {
		p := filepath.Join(dir, name)
		if err := c.WriteKubeconfig(p, token); err != nil {
			t.Fatal(err)
		}
		return p
	}
	want := []string{
		"error rolling-update-on-sqlite-claim vault/deployment/vaultwarden",
		"error replicas-on-sqlite-claim vault/deployment/vaultwarden",
		"error rwx-on-network-class vault/deployment/vaultwarden",
		"error live-pods-on-sqlite-claim vault/deployment/vaultwarden",
		"warn sqlite-claim-on-network vault/deployment/vaultwarden",
		"error shared-sqlite-claim vault/deployment/vaultwarden",
		"error cronjob-overlap-on-sqlite-claim vault/cronjob/vw-backup",
	}
	audit := func(kc string, ns ...string) (*preflight.Report, *kube.Cluster, error) {
		return preflight.AuditKube(t.Context(), preflight.KubeAuditOptions{Cluster: kube.ClusterOptions{Kubeconfig: kc, Namespaces: ns}})
	}
	tok, err := c.Token("app", "preflight-audit")
	if err != nil {
		t.Fatal(err)
	}
	var scale string // the kubectl scale line, as printed
	for _, who := range []struct{ name, kubeconfig string }{{"admin", kubeconfig("admin", c.AdminToken)}, {"app/preflight-audit", kubeconfig("audit", tok)}} {
		r, cl, err := audit(who.kubeconfig)
		if err != nil {
			t.Fatalf("AuditKube as %s: %v", who.name, err)
		}
		if len(cl.Denied) > 0 {
			t.Errorf("AuditKube as %s: refused %v", who.name, cl.Denied)
		}
		if d := cmp.Diff(want, auditFindings(r)); d != "" {
			t.Errorf("AuditKube as %s findings (-want +got):\n%s", who.name, d)
		}
		for _, f := range r.Findings {
			if f.ID == "live-pods-on-sqlite-claim" && !(strings.HasPrefix(f.Message, "2 pods of vault/deployment/vaultwarden") && strings.Contains(f.Message, "vaultwarden-6d4f-0 on node-a") && strings.Contains(f.Message, "vaultwarden-6d4f-1 on node-b") && strings.Contains(f.Message, "PersistentVolume nas-vw")) {
				t.Errorf("live-pods-on-sqlite-claim = %q, want both pods, their nodes and the claim's PersistentVolume", f.Message)
			}
			if f.ID == "live-pods-on-sqlite-claim" && (len(f.Remedy) == 0 || !strings.Contains(f.Remedy[0], "kubectl scale -n vault deployment/vaultwarden --replicas=1,")) {
				t.Errorf("live-pods-on-sqlite-claim remedy = %q, want the kubectl scale line of the Deployment", f.Remedy)
			} else if f.ID == "live-pods-on-sqlite-claim" {
				scale = scaleLine.FindString(f.Remedy[0])
			}
			if f.ID == "replicas-on-sqlite-claim" && (f.Patch == nil || !strings.Contains(f.Patch.Command, "kubectl patch deployment vaultwarden -n vault --type merge")) {
				t.Errorf("replicas-on-sqlite-claim patch = %+v, want kubectl patch of the live deployment", f.Patch)
			}
		}
	}
	// The kubectl scale line, run as printed (sh -c, the real kubectl),
	// leaves the Deployment at one replica.
	if kubectl := kubetest.NeedKubectl(t); scale == "" {
		t.Error("no kubectl scale line in live-pods-on-sqlite-claim's remedy")
	} else {
		t.Logf("run as printed: %s", scale)
		cmd := exec.CommandContext(t.Context(), "sh", "-c", scale)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig("scale", c.AdminToken), "PATH="+filepath.Dir(kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", scale, err, out)
		}
		out, err := exec.CommandContext(t.Context(), kubectl, "--kubeconfig", kubeconfig("get", c.AdminToken), "get", "-n", "vault", "deployment/vaultwarden", "-o", "jsonpath={.spec.replicas}").CombinedOutput()
		if err != nil || string(out) != "1" {
			t.Errorf("after %s: spec.replicas %q, %v; want 1", scale, out, err)
		}
	}
	// The same objects as manifests: the same findings but the live one.
	objs, err := manifest.Parse(strings.NewReader(auditObjects+"---"+auditPV), "objects.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lint, err := preflight.CheckKube(preflight.KubeOptions{Objects: objs, Files: []string{"objects.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	wantLint := slices.DeleteFunc(slices.Clone(want), func(s string) bool {
		return strings.Contains(s, "live-pods") || strings.Contains(s, "sqlite-claim-on-network")
	})
	slices.Sort(wantLint)
	gotLint := auditFindings(lint)
	slices.Sort(gotLint)
	if d := cmp.Diff(wantLint, gotLint); d != "" {
		t.Errorf("CheckKube of the same objects (-audit without live +lint):\n%s", d)
	}
	// The ClusterRole may get namespaces: -n of one that does not exist
	// is told apart from one where all is well.
	_, cl, err := audit(kubeconfig("audit", tok), "quiet", "no-such")
	if err != nil || len(cl.Denied) > 0 || !slices.Equal(cl.MissingNamespaces, []string{"no-such"}) {
		t.Errorf("AuditKube -n quiet -n no-such as app/preflight-audit: %v, denied %v, missing namespaces %q; want no-such missing and nothing refused", err, cl.Denied, cl.MissingNamespaces)
	}
	r, _, err := audit(kubeconfig("admin", c.AdminToken), "quiet")
	if err != nil || len(r.Findings) != 0 || len(r.Manifests.Workloads) != 1 {
		t.Errorf("AuditKube -n quiet: %v, findings %v, workloads %d; want one workload and no finding", err, auditFindings(r), len(r.Manifests.Workloads))
	}
	tok, err = c.Token("app", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	var ae *kube.APIError
	if _, _, err := audit(kubeconfig("nobody", tok)); !errorsAs(err, &ae) || ae.Code != 403 {
		t.Errorf("AuditKube as app/nobody: %v, want 403", err)
	}
}

// scaleLine is a kubectl scale command in a remedy's text, up to the
// punctuation that ends it.
var scaleLine = regexp.MustCompile(`kubectl scale [^,;()]*[^,;() ]`)

// netfsObjects are two claims bound to PersistentVolumes on network
// filesystems, each mounted by one writer that is otherwise well (one
// replica, Recreate): an SMB share mounted with nobrl (locks kept on the
// node) under uptime-kuma, a CephFS volume under an image the catalogue
// does not know whose command is preflight run --data-dir.
const netfsObjects = `apiVersion: v1
kind: Namespace
metadata: {name: netfs}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: smb-pv}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  mountOptions: [nobrl, vers=3.0]
  csi: {driver: smb.csi.k8s.io, volumeHandle: nas/share##}
  claimRef: {namespace: netfs, name: smb-data}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: ceph-pv}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  csi: {driver: cephfs.csi.ceph.com, volumeHandle: vol-1}
  claimRef: {namespace: netfs, name: ceph-data}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: smb-data, namespace: netfs}
spec: {accessModes: [ReadWriteOnce], storageClassName: "", volumeName: smb-pv, resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: ceph-data, namespace: netfs}
spec: {accessModes: [ReadWriteOnce], storageClassName: "", volumeName: ceph-pv, resources: {requests: {storage: 1Gi}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: kuma, namespace: netfs}
spec:
  replicas: 1
  strategy: {type: Recreate}
  selector: {matchLabels: {app: kuma}}
  template:
    metadata: {labels: {app: kuma}}
    spec:
      containers: [{name: kuma, image: louislam/uptime-kuma:1, volumeMounts: [{name: data, mountPath: /app/data}]}]
      volumes: [{name: data, persistentVolumeClaim: {claimName: smb-data}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: netfs}
spec:
  replicas: 1
  strategy: {type: Recreate}
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      containers:
        - name: app
          image: registry.example/me/app:1
          command: [preflight, run, --data-dir, /srv/app, --, /app]
          volumeMounts: [{name: data, mountPath: /srv}]
      volumes: [{name: data, persistentVolumeClaim: {claimName: ceph-data}}]
`

// TestKubeAuditNetworkClaims audits netfsObjects in a real kube-apiserver:
// each claim's bound PersistentVolume is on a network filesystem, a
// sqlite-claim-on-network finding per claim (an error where the mount
// options keep locks on the node); the image the catalogue does not
// know holds SQLite data because it runs preflight run --data-dir. The
// same objects as manifests get no such finding (kube -f sees no bound
// volume of the cluster).
func TestKubeAuditNetworkClaims(t *testing.T) {
	c := kubetest.Start(t)
	c.MustApply(netfsObjects)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := c.WriteKubeconfig(kc, c.AdminToken); err != nil {
		t.Fatal(err)
	}
	r, _, err := preflight.AuditKube(t.Context(), preflight.KubeAuditOptions{Cluster: kube.ClusterOptions{Kubeconfig: kc, Namespaces: []string{"netfs"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"error sqlite-claim-on-network netfs/deployment/kuma",
		"warn sqlite-claim-on-network netfs/deployment/app",
	}
	got := auditFindings(r)
	slices.Sort(want)
	slices.Sort(got)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("AuditKube -n netfs findings (-want +got):\n%s", d)
	}
	for _, f := range r.Findings {
		if f.Path == "netfs/deployment/kuma" && !strings.Contains(f.Message, "CSI driver smb.csi.k8s.io, a network filesystem, mounted with nobrl") {
			t.Errorf("sqlite-claim-on-network of kuma = %q, want the driver and the nobrl option", f.Message)
		}
		if f.Path == "netfs/deployment/app" && !strings.Contains(f.Message, "container app runs preflight run --data-dir /srv/app") {
			t.Errorf("sqlite-claim-on-network of app = %q, want why the claim holds SQLite data", f.Message)
		}
	}
	objs, err := manifest.Parse(strings.NewReader(netfsObjects), "netfs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lint, err := preflight.CheckKube(preflight.KubeOptions{Objects: objs, Files: []string{"netfs.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(lint.Findings) != 0 {
		t.Errorf("CheckKube of the same objects: %v, want none", auditFindings(lint))
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
