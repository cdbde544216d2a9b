package preflight_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/internal/kubetest"
	"github.com/preflight-sqlite/preflight/probe/kube"
)

// benchNamespace makes namespace ns: a claim, a Deployment of vaultwarden
// on it (replicas 1, the default RollingUpdate), its ReplicaSet and pods
// pods of that ReplicaSet on four nodes, each mounting the claim and
// Running.
func benchNamespace(b *testing.B, c *kubetest.Cluster, ns string, pods int) {
	b.Helper()
	const tmpl = `
  template:
    metadata: {labels: {app: vw}}
    spec:
      containers: [{name: vw, image: docker.io/vaultwarden/server:1.32.0, volumeMounts: [{name: data, mountPath: /data}]}]
      volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]`
	objs, err := c.Create(fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: %[1]s}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: vw, namespace: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: vw}}%[2]s
`, ns, tmpl))
	if err != nil {
		b.Fatal(err)
	}
	uid := objs[2]["metadata"].(map[string]any)["uid"]
	objs, err = c.Create(fmt.Sprintf(`apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: vw-1
  namespace: %s
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: vw, uid: %q, controller: true}]
spec:
  replicas: 1
  selector: {matchLabels: {app: vw}}%s
`, ns, uid, tmpl))
	if err != nil {
		b.Fatal(err)
	}
	uid = objs[0]["metadata"].(map[string]any)["uid"]
	var m strings.Builder
	for i := range pods {
		fmt.Fprintf(&m, `---
apiVersion: v1
kind: Pod
metadata:
  name: vw-1-%d
  namespace: %s
  labels: {app: vw}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: vw-1, uid: %q, controller: true}]
spec:
  nodeName: node-%d
  containers: [{name: vw, image: docker.io/vaultwarden/server:1.32.0, volumeMounts: [{name: data, mountPath: /data}]}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
`, i, ns, uid, i%4)
	}
	if _, err := c.Create(m.String()); err != nil {
		b.Fatal(err)
	}
	for i := range pods {
		if err := c.PatchPodPhase(ns, fmt.Sprintf("vw-1-%d", i), "Running"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkKubeAudit is one whole preflight kube audit (every kind listed
// cluster-wide, paged, and judged) of a real API server holding 200
// namespaces of 25 pods each, 5,000 pods, every namespace a Deployment,
// its ReplicaSet and a claim. heap-MB is the largest live heap seen while
// it ran.
func BenchmarkKubeAudit(b *testing.B) {
	const namespaces, perNS = 200, 25
	c := kubetest.Start(b)
	kc := filepath.Join(b.TempDir(), "kubeconfig")
	if err := c.WriteKubeconfig(kc, c.AdminToken); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	work := make(chan int)
	for range 4 {
		wg.Go(func() {
			for i := range work {
				benchNamespace(b, c, fmt.Sprintf("ns-%03d", i), perNS)
			}
		})
	}
	for i := range namespaces {
		work <- i
	}
	close(work)
	wg.Wait()
	b.Logf("created %d namespaces of %d pods in %s", namespaces, perNS, time.Since(start).Round(time.Second))
	heap := kubetest.WatchHeap(20 * time.Millisecond)
	b.ResetTimer()
	for range b.N {
		r, _, err := preflight.AuditKube(b.Context(), preflight.KubeAuditOptions{Cluster: kube.ClusterOptions{Kubeconfig: kc}})
		if err != nil {
			b.Fatal(err)
		}
		if n := len(r.Manifests.Workloads); n != namespaces {
			b.Fatalf("AuditKube: %d workloads, want %d", n, namespaces)
		}
		live := 0
		for _, f := range r.Findings {
			if f.ID == "live-pods-on-sqlite-claim" {
				live++
			}
		}
		if live != namespaces {
			b.Fatalf("AuditKube: %d live-pods-on-sqlite-claim findings, want one per namespace (%d)", live, namespaces)
		}
	}
	b.StopTimer()
	b.ReportMetric(heap(), "heap-MB")
}
