package preflight_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
			}
			if f.ID == "replicas-on-sqlite-claim" && (f.Patch == nil || !strings.Contains(f.Patch.Command, "kubectl patch deployment vaultwarden -n vault --type merge")) {
				t.Errorf("replicas-on-sqlite-claim patch = %+v, want kubectl patch of the live deployment", f.Patch)
			}
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
	wantLint := slices.DeleteFunc(slices.Clone(want), func(s string) bool { return strings.Contains(s, "live-pods") })
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

func errorsAs(err error, target any) bool { return errors.As(err, target) }
