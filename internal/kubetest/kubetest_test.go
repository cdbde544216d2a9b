package kubetest_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/preflight-sqlite/preflight/internal/kubetest"
)

// nfsClaim is an NFS-class StorageClass, a PV on it and an RWX claim bound
// to the PV by name, in namespace kt.
const nfsClaim = `
apiVersion: v1
kind: Namespace
metadata: {name: kt}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: nfs-rwx}
provisioner: nfs.csi.k8s.io
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: kt-data}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteMany]
  storageClassName: nfs-rwx
  csi: {driver: nfs.csi.k8s.io, volumeHandle: nfs.example#export#data}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: kt}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: nfs-rwx
  volumeName: kt-data
  resources: {requests: {storage: 1Gi}}
`

// pod returns a pod in kt on node that mounts claim data at /data.
func pod(name, node string) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": "kt"},
		"spec": map[string]any{
			"nodeName": node,
			"containers": []any{map[string]any{
				"name": "app", "image": "uptime-kuma:2",
				"volumeMounts": []any{map[string]any{"name": "data", "mountPath": "/data"}},
			}},
			"volumes": []any{map[string]any{
				"name": "data", "persistentVolumeClaim": map[string]any{"claimName": "data"},
			}},
		},
	}
}

type podList struct {
	Items []struct {
		Metadata struct {
			Name string `json:"name"`
			UID  string `json:"uid"`
		} `json:"metadata"`
		Spec struct {
			NodeName string `json:"nodeName"`
			Volumes  []struct {
				PersistentVolumeClaim *struct {
					ClaimName string `json:"claimName"`
				} `json:"persistentVolumeClaim"`
			} `json:"volumes"`
		} `json:"spec"`
		Status struct {
			Phase string `json:"phase"`
		} `json:"status"`
	} `json:"items"`
}

// TestTwoPodsOneClaim creates two pods on two nodes on one RWX claim, sets
// their phase to Running, and reads them back from the API server.
func TestTwoPodsOneClaim(t *testing.T) {
	c := kubetest.Start(t)
	c.MustApply(nfsClaim)
	for _, p := range []struct{ name, node string }{{"app-a", "node-a"}, {"app-b", "node-b"}} {
		out, err := c.Create(pod(p.name, p.node))
		if err != nil {
			t.Fatalf("Create(pod %s): %v", p.name, err)
		}
		if meta, _ := out[0]["metadata"].(map[string]any); meta["uid"] == "" || meta["uid"] == nil {
			t.Errorf("Create(pod %s) answered no uid: %v", p.name, out[0])
		}
		if err := c.PatchPodPhase("kt", p.name, "Running"); err != nil {
			t.Fatalf("PatchPodPhase(kt, %s): %v", p.name, err)
		}
	}
	var pods podList
	if err := c.Get("/api/v1/namespaces/kt/pods", c.AdminToken, &pods); err != nil {
		t.Fatalf("list pods: %v", err)
	}
	got := map[string]string{}
	for _, p := range pods.Items {
		claim := ""
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				claim = v.PersistentVolumeClaim.ClaimName
			}
		}
		got[p.Metadata.Name] = p.Spec.NodeName + " " + p.Status.Phase + " " + claim
	}
	want := map[string]string{"app-a": "node-a Running data", "app-b": "node-b Running data"}
	if len(got) != len(want) || got["app-a"] != want["app-a"] || got["app-b"] != want["app-b"] {
		t.Errorf("pods in kt = %v, want %v", got, want)
	}
	var pvc struct {
		Spec struct {
			VolumeName  string   `json:"volumeName"`
			AccessModes []string `json:"accessModes"`
		} `json:"spec"`
	}
	if err := c.Get("/api/v1/namespaces/kt/persistentvolumeclaims/data", c.AdminToken, &pvc); err != nil {
		t.Fatalf("get claim: %v", err)
	}
	if pvc.Spec.VolumeName != "kt-data" || len(pvc.Spec.AccessModes) != 1 || pvc.Spec.AccessModes[0] != "ReadWriteMany" {
		t.Errorf("claim kt/data spec = %+v, want volumeName kt-data, ReadWriteMany", pvc.Spec)
	}
}

// TestServiceAccountTooLittleRBAC gives a ServiceAccount a Role that grants
// only get on pods: get works, list is refused with 403 naming the verb and
// the resource.
func TestServiceAccountTooLittleRBAC(t *testing.T) {
	c := kubetest.Start(t)
	c.MustApply(`
apiVersion: v1
kind: Namespace
metadata: {name: rbac}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: reader, namespace: rbac}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: get-pods, namespace: rbac}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader-get-pods, namespace: rbac}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: get-pods}
subjects:
- {kind: ServiceAccount, name: reader, namespace: rbac}
`)
	p := pod("app", "node-a")
	p["metadata"] = map[string]any{"name": "app", "namespace": "rbac"}
	p["spec"].(map[string]any)["volumes"] = []any{map[string]any{"name": "data", "emptyDir": map[string]any{}}}
	if _, err := c.Create(p); err != nil {
		t.Fatalf("Create(pod rbac/app): %v", err)
	}
	token, err := c.Token("rbac", "reader")
	if err != nil {
		t.Fatalf("Token(rbac, reader): %v", err)
	}
	if err := c.Get("/api/v1/namespaces/rbac/pods/app", token, nil); err != nil {
		t.Errorf("get pod with the reader's token: %v, want it allowed", err)
	}
	err = c.Get("/api/v1/namespaces/rbac/pods", token, nil)
	var apiErr *kubetest.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("list pods with the reader's token: err = %v, want an *APIError", err)
	}
	t.Logf("list pods with the reader's token: %v", apiErr)
	if apiErr.Code != http.StatusForbidden || apiErr.Reason != "Forbidden" {
		t.Errorf("list pods: %d %s, want 403 Forbidden", apiErr.Code, apiErr.Reason)
	}
	for _, part := range []string{`system:serviceaccount:rbac:reader`, `cannot list resource "pods"`} {
		if !strings.Contains(apiErr.Message, part) {
			t.Errorf("list pods: message %q does not contain %q", apiErr.Message, part)
		}
	}
}

// TestApplyKinds applies one object of each kind the cluster tests use,
// twice (the second time updates), and reads each back.
func TestApplyKinds(t *testing.T) {
	c := kubetest.Start(t)
	data, err := os.ReadFile(filepath.Join("testdata", "kinds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := kubetest.Objects(data)
	if err != nil {
		t.Fatalf("Objects(kinds.yaml): %v", err)
	}
	for range 2 {
		out, err := c.Apply(data)
		if err != nil {
			t.Fatalf("Apply(kinds.yaml): %v", err)
		}
		if len(out) != len(objs) {
			t.Fatalf("Apply(kinds.yaml) answered %d objects, want %d", len(out), len(objs))
		}
	}
	paths := []string{
		"/apis/apps/v1/namespaces/kinds/deployments/web",
		"/apis/apps/v1/namespaces/kinds/replicasets/web-1",
		"/apis/apps/v1/namespaces/kinds/statefulsets/db",
		"/apis/rbac.authorization.k8s.io/v1/clusterroles/kinds-read-storage",
		"/apis/storage.k8s.io/v1/storageclasses/kinds-local",
		"/api/v1/persistentvolumes/kinds-pv",
		"/api/v1/namespaces/kinds/serviceaccounts/default",
		"/api/v1/namespaces/kinds/serviceaccounts/preflight",
	}
	for _, p := range paths {
		if err := c.Get(p, c.AdminToken, nil); err != nil {
			t.Errorf("get %s: %v", p, err)
		}
	}
	if err := c.Delete(data); err != nil {
		t.Errorf("Delete(kinds.yaml): %v", err)
	}
	var apiErr *kubetest.APIError
	if err := c.Get("/api/v1/persistentvolumes/kinds-pv", c.AdminToken, nil); !errors.As(err, &apiErr) || apiErr.Code != http.StatusNotFound {
		// A PV with the kubernetes.io/pv-protection finalizer waits for a
		// controller that is not there; it is marked for deletion instead.
		var pv struct {
			Metadata struct {
				DeletionTimestamp string `json:"deletionTimestamp"`
			} `json:"metadata"`
		}
		if err := c.Get("/api/v1/persistentvolumes/kinds-pv", c.AdminToken, &pv); err != nil || pv.Metadata.DeletionTimestamp == "" {
			t.Errorf("PV kinds-pv after Delete: %v, deletionTimestamp %q, want gone or being deleted", err, pv.Metadata.DeletionTimestamp)
		}
	}
}

// TestClientFiles writes a kubeconfig and a ServiceAccount directory and
// makes a request with what each holds, as a client in a pod or on the
// host would.
func TestClientFiles(t *testing.T) {
	c := kubetest.Start(t)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := c.WriteKubeconfig(kubeconfig, c.AdminToken); err != nil {
		t.Fatalf("WriteKubeconfig: %v", err)
	}
	server, ca, token := readKubeconfig(t, kubeconfig)
	if server != c.URL || token != c.AdminToken || string(ca) != string(c.CAPEM) {
		t.Errorf("kubeconfig holds server %q, token %q, CA equal %v; want %q, the admin token, the CA", server, token, string(ca) == string(c.CAPEM), c.URL)
	}
	request(t, server, ca, token, "/api/v1/namespaces/default/pods")

	sa := filepath.Join(dir, "serviceaccount")
	saToken, err := c.Token("default", "default")
	if err != nil {
		t.Fatalf("Token(default, default): %v", err)
	}
	for i, tok := range []string{c.AdminToken, saToken} { // the second call rotates
		if err := c.WriteServiceAccountDir(sa, "default", tok); err != nil {
			t.Fatalf("WriteServiceAccountDir (call %d): %v", i+1, err)
		}
		got := map[string]string{}
		for _, name := range []string{"token", "ca.crt", "namespace"} {
			b, err := os.ReadFile(filepath.Join(sa, name))
			if err != nil {
				t.Fatalf("read %s (call %d): %v", name, i+1, err)
			}
			got[name] = string(b)
		}
		if got["token"] != tok || got["ca.crt"] != string(c.CAPEM) || got["namespace"] != "default" {
			t.Errorf("service account dir (call %d) = %v, want the token, the CA, default", i+1, got)
		}
	}
	stamps, _ := filepath.Glob(filepath.Join(sa, "..2*"))
	if len(stamps) != 1 {
		t.Errorf("service account dir holds data directories %v after a rotation, want one", stamps)
	}
	// The default ServiceAccount may not list pods, but it is authenticated:
	// the discovery document is open to every authenticated user.
	b, _ := os.ReadFile(filepath.Join(sa, "token"))
	request(t, c.URL, c.CAPEM, string(b), "/api/v1")

	env := c.InClusterEnv()
	if len(env) != 2 || c.URL != "https://"+strings.TrimPrefix(env[0], "KUBERNETES_SERVICE_HOST=")+":"+strings.TrimPrefix(env[1], "KUBERNETES_SERVICE_PORT=") {
		t.Errorf("InClusterEnv() = %v, does not name %s", env, c.URL)
	}
	c.Stop()
	var apiErr *kubetest.APIError
	if err := c.Get("/api/v1", c.AdminToken, nil); err == nil || errors.As(err, &apiErr) {
		t.Errorf("Get after Stop: %v, want a connection error", err)
	}
}

// readKubeconfig returns the server, CA and token of the current context.
func readKubeconfig(t *testing.T, path string) (server string, ca []byte, token string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Clusters []struct {
			Cluster struct {
				Server string `yaml:"server"`
				CAData string `yaml:"certificate-authority-data"`
			} `yaml:"cluster"`
		} `yaml:"clusters"`
		Users []struct {
			User struct {
				Token string `yaml:"token"`
			} `yaml:"user"`
		} `yaml:"users"`
		CurrentContext string `yaml:"current-context"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("parse kubeconfig: %v", err)
	}
	if len(cfg.Clusters) != 1 || len(cfg.Users) != 1 || cfg.CurrentContext != "kubetest" {
		t.Fatalf("kubeconfig = %s, want one cluster, one user, context kubetest", data)
	}
	ca, err = base64.StdEncoding.DecodeString(cfg.Clusters[0].Cluster.CAData)
	if err != nil {
		t.Fatalf("kubeconfig certificate-authority-data: %v", err)
	}
	return cfg.Clusters[0].Cluster.Server, ca, cfg.Users[0].User.Token
}

// request GETs path from server trusting only ca, with token, and fails
// the test unless the answer is 200.
func request(t *testing.T, server string, ca []byte, token, path string) {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("CA: no PEM certificate")
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, server+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s = %s, want 200", path, resp.Status)
	}
}
