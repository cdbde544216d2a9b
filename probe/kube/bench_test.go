package kube_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/kubetest"
	"github.com/preflight-sqlite/preflight/probe/kube"
)

// populate makes namespace ns with a claim and n pods, pod-0 ours (mounting
// the claim at /data) and the rest mounting other claims.
func populate(b *testing.B, c *kubetest.Cluster, ns string, n int) {
	b.Helper()
	var m strings.Builder
	fmt.Fprintf(&m, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: %s}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n", ns, ns)
	for i := range n {
		claim := "data"
		if i > 0 {
			claim = fmt.Sprintf("other-%d", i)
		}
		fmt.Fprintf(&m, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: pod-%d, namespace: %s, labels: {app: bench}}\nspec:\n  nodeName: node-%d\n  containers: [{name: app, image: ghcr.io/example/app:1, volumeMounts: [{name: data, mountPath: /data}]}]\n  volumes: [{name: data, persistentVolumeClaim: {claimName: %s}}]\n", i, ns, i%3, claim)
	}
	if _, err := c.Create(m.String()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPodLookup is one whole Probe (our pod, its claim, the paged
// list of every pod in the namespace) against a real API server, for 50
// and 1,000 pods in the namespace. heap-MB is the largest live heap seen
// while it ran (paging keeps one page of PageSize pods).
func BenchmarkPodLookup(b *testing.B) {
	c := kubetest.Start(b)
	kc := filepath.Join(b.TempDir(), "kubeconfig")
	if err := c.WriteKubeconfig(kc, c.AdminToken); err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{50, 1000} {
		ns := fmt.Sprintf("bench-%d", n)
		populate(b, c, ns, n)
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			opts := kube.Options{Kubeconfig: kc, Pod: ns + "/pod-0", Timeout: 30 * time.Second}
			heap := kubetest.WatchHeap(2 * time.Millisecond)
			b.ResetTimer()
			for range b.N {
				res := kube.Probe(context.Background(), []string{"/data"}, opts)
				if res.Status != kube.StatusRan {
					b.Fatalf("Probe = %s: %s", res.Status, res.Err)
				}
			}
			b.StopTimer()
			b.ReportMetric(heap(), "heap-MB")
		})
	}
}
