package preflight

import (
	"context"
	"fmt"

	"github.com/preflight-sqlite/preflight/manifest"
	"github.com/preflight-sqlite/preflight/probe/kube"
)

// AuditFile is the location every object of an audit has: it was read
// from the cluster, not a file (Location.File).
const AuditFile = manifest.LiveFile

// ProbeKubeAudit is the name of the audit in Report.Probes.
const ProbeKubeAudit = "kube-audit"

// KubeAuditOptions configure AuditKube.
type KubeAuditOptions struct {
	// Cluster says how to reach the API server and which namespaces to
	// read.
	Cluster kube.ClusterOptions
	// DataClaims, Catalogue and Ignore as in KubeOptions.
	KubeOptions
}

// AuditKube reads the cluster's workloads, pods, claims, PersistentVolumes
// and StorageClasses (kube.ReadCluster: GET and LIST only, paged and
// bounded) and judges them as CheckKube judges manifests, with the
// objects as the API server holds them (its defaults filled in, each
// claim's bound PersistentVolume and its CSI driver) and the pods that
// run now (live-pods-on-sqlite-claim). The Report's Manifests.Files is
// the server's URL; every object is at AuditFile. The returned cluster
// says which cluster-scoped lists were refused.
func AuditKube(ctx context.Context, opts KubeAuditOptions) (*Report, *kube.Cluster, error) {
	cl, err := kube.ReadCluster(ctx, opts.Cluster)
	if err != nil {
		return nil, nil, fmt.Errorf("read the cluster: %w", err)
	}
	objs := make([]manifest.Object, 0, len(cl.Objects))
	for _, o := range cl.Objects {
		mo, err := manifest.FromJSON(o.JSON, manifest.Location{File: AuditFile})
		if err != nil {
			return nil, nil, fmt.Errorf("read the cluster: %w", err)
		}
		objs = append(objs, mo)
	}
	o := opts.KubeOptions
	o.Objects, o.Files = objs, []string{cl.Server}
	r, err := checkManifests(o, cl.Pods, ProbeKubeAudit)
	return r, cl, err
}
