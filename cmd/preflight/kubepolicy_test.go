package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/kubetest"
)

// kubectl runs kubectl (KUBECONFIG kubeconfig) with stdin and returns its
// combined output and error; the test skips without kubectl on PATH
// unless kubetest.Required.
func kubectl(t *testing.T, kubeconfig, stdin string, args ...string) (string, error) {
	t.Helper()
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		if kubetest.Required() {
			t.Fatal("kubectl not on PATH")
		}
		t.Skip("kubectl not on PATH")
	}
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestKubePolicyKubectl runs the commands of the Kubernetes guide as
// printed: preflight kube policy | kubectl apply -f -, then kubectl apply
// of a Deployment of two vaultwarden pods on one claim, refused with the
// finding's message, and of the fixed one, admitted; and with --action
// warn, kubectl prints the refusal as a warning and creates the object.
func TestKubePolicyKubectl(t *testing.T) {
	c := kubetest.Start(t)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := c.WriteKubeconfig(kc, c.AdminToken); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"vault", "lab"} {
		if out, err := kubectl(t, kc, "", "create", "namespace", ns); err != nil {
			t.Fatalf("kubectl create namespace %s: %v: %s", ns, err, out)
		}
	}
	for _, args := range [][]string{{"kube", "policy", "-n", "vault"}, {"kube", "policy", "--action", "warn", "--name", "preflight-warn", "-n", "lab"}} {
		y, stderr, code := runMain(t, args...)
		if code != 0 {
			t.Fatalf("preflight %s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
		if out, err := kubectl(t, kc, y, "apply", "-f", "-"); err != nil || !strings.Contains(out, "validatingadmissionpolicy.admissionregistration.k8s.io/") {
			t.Fatalf("preflight %s | kubectl apply -f -: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	bad := `apiVersion: apps/v1
kind: Deployment
metadata: {name: vaultwarden}
spec:
  replicas: 2
  selector: {matchLabels: {app: vaultwarden}}
  template:
    metadata: {labels: {app: vaultwarden}}
    spec:
      containers:
        - name: vaultwarden
          image: ghcr.io/dani-garcia/vaultwarden:1.32.0
          volumeMounts: [{name: data, mountPath: /data}]
      volumes: [{name: data, persistentVolumeClaim: {claimName: vaultwarden-data}}]
`
	good := strings.Replace(bad, "replicas: 2", "replicas: 1\n  strategy: {type: Recreate}", 1)
	var out string
	var err error
	deadline := time.Now().Add(10 * time.Second) // the bindings take a moment to be enforced
	for {
		out, err = kubectl(t, kc, bad, "apply", "-n", "vault", "-f", "-")
		if err != nil || time.Now().After(deadline) {
			break
		}
		kubectl(t, kc, "", "delete", "-n", "vault", "deployment", "vaultwarden")
		time.Sleep(200 * time.Millisecond)
	}
	if err == nil || !strings.Contains(out, "replicas-on-sqlite-claim: Deployment vaultwarden runs 2 pods at once and mounts volume data") {
		t.Errorf("kubectl apply of two replicas in vault: %v: %s, want refused with replicas-on-sqlite-claim", err, out)
	}
	t.Logf("kubectl apply in vault:\n%s", out)
	if out, err := kubectl(t, kc, good, "apply", "-n", "vault", "-f", "-"); err != nil {
		t.Errorf("kubectl apply of one replica, Recreate: %v: %s, want created", err, out)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		out, err = kubectl(t, kc, bad, "apply", "-n", "lab", "-f", "-")
		if err != nil || strings.Contains(out, "Warning: ") || time.Now().After(deadline) {
			break
		}
		kubectl(t, kc, "", "delete", "-n", "lab", "deployment", "vaultwarden")
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil || !strings.Contains(out, "Warning: Validation failed for ValidatingAdmissionPolicy 'preflight-warn-deployment'") || !strings.Contains(out, "deployment.apps/vaultwarden created") {
		t.Errorf("kubectl apply of two replicas in lab (warn): %v: %s, want created with a warning", err, out)
	}
	t.Logf("kubectl apply in lab:\n%s", out)
}

// TestKubeAuditCommand runs preflight kube audit against a real API
// server holding testdata/kube-audit (two vaultwarden replicas on one
// claim):
// the text names the live object, prints its kubectl patch and exits 3
// (a ReadWriteMany claim makes the findings errors);
// --format json is the report; a token without the ClusterRole is an
// error with a hint naming it; an unreachable server is an error.
func TestKubeAuditCommand(t *testing.T) {
	c := kubetest.Start(t)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := c.WriteKubeconfig(kc, c.AdminToken); err != nil {
		t.Fatal(err)
	}
	objects, err := os.ReadFile(filepath.Join("..", "..", "testdata", "kube-audit", "objects.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c.MustApply(objects)
	out, stderr, code := runMain(t, "kube", "audit", "--kubeconfig", kc)
	// One merged patch per object: the Deployment's fixes its rolling
	// update and its replicas at once; a live object is named by its
	// namespace, kind and name, never a line of a file.
	wantRun := `run: kubectl patch deployment vaultwarden -n vault --type merge -p '{"metadata":{"annotations":{"kube-score/ignore":"deployment-strategy,deployment-replicas","polaris.fairwinds.com/deploymentMissingReplicas-exempt":"true"}},"spec":{"replicas":1,"strategy":{"rollingUpdate":null,"type":"Recreate"}}}'`
	if code != exitUnsafe || !strings.Contains(out, "replicas-on-sqlite-claim: vault/deployment/vaultwarden runs replicas: 2 and every pod mounts claim vault/vw-data") || !strings.Contains(out, "cronjob-overlap-on-sqlite-claim: vault/cronjob/vw-backup") || !strings.Contains(out, wantRun) || !strings.Contains(out, "cluster: "+c.URL) {
		t.Errorf("preflight kube audit: exit %d, stdout %q, stderr %q; want the finding and %s", code, out, stderr, wantRun)
	}
	if n := strings.Count(out, "run: kubectl patch deployment vaultwarden "); n != 1 || strings.Contains(out, "cluster line") || !strings.Contains(out, "  vault/deployment/vaultwarden (fixes rolling-update-on-sqlite-claim, replicas-on-sqlite-claim): ") {
		t.Errorf("preflight kube audit: %d patch lines of the Deployment, want one, naming vault/deployment/vaultwarden, never a cluster line:\n%s", n, out)
	}
	out, stderr, _ = runMain(t, "kube", "audit", "--kubeconfig", kc, "-n", "quiet")
	if !strings.Contains(out, " objects, 1 workload)") || stderr != "" {
		t.Errorf("preflight kube audit -n quiet: stdout %q, stderr %q; want 1 workload and nothing on stderr", out, stderr)
	}
	out, stderr, _ = runMain(t, "kube", "audit", "--kubeconfig", kc, "-n", "no-such")
	if want := "preflight: warning: -n no-such: the cluster has no namespace no-such; nothing was read there\n"; stderr != want || !strings.Contains(out, "(0 objects, 0 workloads)") {
		t.Errorf("preflight kube audit -n no-such: stdout %q, stderr %q; want %q", out, stderr, want)
	}
	out, _, _ = runMain(t, "kube", "audit", "--kubeconfig", kc, "-n", "vault", "--format", "json")
	if !strings.Contains(out, `"id": "replicas-on-sqlite-claim"`) || !strings.Contains(out, `"file": "cluster"`) {
		t.Errorf("preflight kube audit --format json: %s", out)
	}
	out, _, _ = runMain(t, "kube", "audit", "--kubeconfig", kc, "--format", "sarif")
	if !strings.Contains(out, `"uri": "k8s:vault/deployment/vaultwarden"`) || !strings.Contains(out, `"uri": "k8s:vault/persistentvolumeclaim/vw-data"`) || strings.Contains(out, `"uri": "cluster"`) {
		t.Errorf("preflight kube audit --format sarif: the locations are not the live objects:\n%s", out)
	}
	c.MustApply("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: nobody, namespace: vault}\n")
	tok, err := c.Token("vault", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	nobody := filepath.Join(t.TempDir(), "kubeconfig")
	if err := c.WriteKubeconfig(nobody, tok); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runMain(t, "kube", "audit", "--kubeconfig", nobody); code != exitInternal || !strings.Contains(stderr, "HTTP 403") || !strings.Contains(stderr, "preflight: hint: the audit lists every kind it judges: bind the ClusterRole of examples/kubernetes/audit-rbac.yaml") {
		t.Errorf("preflight kube audit without RBAC: exit %d, stderr %q; want 1, the refusal and the ClusterRole hint", code, stderr)
	}
	bad := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: x, cluster: {server: 'https://127.0.0.1:1'}}]\nusers: [{name: x, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: x, user: x}}]\ncurrent-context: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runMain(t, "kube", "audit", "--kubeconfig", bad, "--timeout", "2s"); code != exitInternal || !strings.Contains(stderr, "preflight: error: read the cluster") {
		t.Errorf("preflight kube audit of an unreachable server: exit %d, stderr %q", code, stderr)
	}
}
