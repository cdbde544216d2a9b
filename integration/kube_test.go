package integration_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/kubetest"
	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// TestKubeInClusterImage runs the image's binary (FROM scratch) as a pod
// would: on the host network, with a service account token, CA and
// namespace bind-mounted at /var/run/secrets/kubernetes.io/serviceaccount/
// as the kubelet lays them out, KUBERNETES_SERVICE_HOST/PORT and the
// downward API's POD_NAME. It must read the in-cluster configuration from
// those standard paths and name the other pod on the claim.
func TestKubeInClusterImage(t *testing.T) {
	requireDocker(t)
	c := kubetest.Start(t)
	tag := toolImage(t, "preflight-it-kubeprobe")
	t.Cleanup(func() { run(t, dockerTimeout, nil, "docker", "rmi", "-f", tag) })

	c.MustApply(`apiVersion: v1
kind: Namespace
metadata: {name: incluster}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: incluster-pv}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteMany]
  storageClassName: ""
  nfs: {server: 10.0.0.9, path: /export/incluster}
  claimRef: {namespace: incluster, name: data}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: incluster}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: ""
  volumeName: incluster-pv
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: app, namespace: incluster}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: incluster-app-view}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: app, namespace: incluster}]
`)
	for _, p := range []struct{ name, node string }{{"me", "node-a"}, {"other", "node-b"}} {
		c.MustApply(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: incluster}
spec:
  nodeName: %s
  containers: [{name: app, image: app:1, volumeMounts: [{name: data, mountPath: /data}]}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
`, p.name, p.node))
		if err := c.PatchPodPhase("incluster", p.name, "Running"); err != nil {
			t.Fatal(err)
		}
	}
	tok, err := c.Token("incluster", "app")
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	sa, data := filepath.Join(base, "sa"), filepath.Join(base, "data")
	if err := c.WriteServiceAccountDir(sa, "incluster", tok); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	testdb.Make(t, filepath.Join(data, "app.db"), "wal", 3)
	for _, d := range []string{base, data, filepath.Join(data, "app.db")} {
		if err := os.Chmod(d, 0o755); err != nil { // readable by the image's user 65532
			t.Fatal(err)
		}
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		t.Fatal(err)
	}
	r := dockerRun(t, "--network", "host",
		"-v", sa+":/var/run/secrets/kubernetes.io/serviceaccount:ro", "-v", data+":/data",
		"-e", "KUBERNETES_SERVICE_HOST="+u.Hostname(), "-e", "KUBERNETES_SERVICE_PORT="+u.Port(), "-e", "POD_NAME=me",
		tag, "check", "--format", "json", "--docker", "off", "/data")
	var rep struct {
		Kube struct {
			Status string `json:"status"`
			Config struct {
				Source    string `json:"source"`
				Namespace string `json:"namespace"`
			} `json:"config"`
			Pod struct {
				How string `json:"how"`
			} `json:"pod"`
		} `json:"kube"`
		Findings []struct {
			ID, Level, Message string
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, r)
	}
	if rep.Kube.Status != "ran" || rep.Kube.Config.Source != "in-cluster" || rep.Kube.Config.Namespace != "incluster" || rep.Kube.Pod.How != "downward-api" {
		t.Fatalf("kube = %+v, want ran from the in-cluster configuration, namespace incluster\n%s", rep.Kube, r)
	}
	found := false
	for _, f := range rep.Findings {
		if f.ID == "live-writer-pod" && f.Level == "error" && strings.Contains(f.Message, "pod incluster/other (node node-b, another node") {
			found = true
		}
	}
	if !found || r.code != 3 {
		t.Errorf("exit %d, findings %+v: want 3 and live-writer-pod error naming incluster/other", r.code, rep.Findings)
	}
}
