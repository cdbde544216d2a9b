package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/kubetest"
	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// BenchmarkRunKube times `preflight run -- /bin/true` (the built binary, a
// WAL database in the data directory) with the Kubernetes probe on, the
// API server reachable through a kubeconfig and 50 pods in the namespace,
// against the same run with --kube off and with no cluster at all (auto,
// nothing configured). The difference is what the probe adds before exec.
func BenchmarkRunKube(b *testing.B) {
	c := kubetest.Start(b)
	kc := filepath.Join(b.TempDir(), "kubeconfig")
	if err := c.WriteKubeconfig(kc, c.AdminToken); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	testdb.Make(b, filepath.Join(dir, "app.db"), "wal", 10)
	var m strings.Builder
	fmt.Fprintf(&m, "apiVersion: v1\nkind: Namespace\nmetadata: {name: runbench}\n---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: runbench}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n")
	for i := range 50 {
		claim := "data"
		if i > 0 {
			claim = fmt.Sprintf("other-%d", i)
		}
		fmt.Fprintf(&m, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: pod-%d, namespace: runbench}\nspec:\n  nodeName: node-a\n  containers: [{name: app, image: app:1, volumeMounts: [{name: data, mountPath: %q}]}]\n  volumes: [{name: data, persistentVolumeClaim: {claimName: %s}}]\n", i, dir, claim)
	}
	if _, err := c.Create(m.String()); err != nil {
		b.Fatal(err)
	}
	for _, v := range []struct {
		name string
		env  []string
		args []string
	}{
		{"kube=on", []string{"KUBECONFIG=" + kc}, []string{"--pod", "runbench/pod-0"}},
		{"kube=off", []string{"KUBECONFIG=" + kc}, []string{"--kube", "off"}},
		{"no-cluster", []string{"KUBECONFIG=", "KUBERNETES_SERVICE_HOST="}, nil},
	} {
		b.Run(v.name, func(b *testing.B) {
			args := append(append([]string{"run", "--docker", "off", "--data-dir", dir}, v.args...), "--", "/bin/true")
			for range b.N {
				cmd := exec.Command(bin, args...)
				cmd.Env = append(cmd.Environ(), v.env...)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
				}
			}
		})
	}
}
