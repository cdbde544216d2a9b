package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/preflight-sqlite/preflight/internal/kubeapi"
)

// DefaultAuditTimeout bounds a whole ReadCluster call when
// ClusterOptions.Timeout is zero.
const DefaultAuditTimeout = 60 * time.Second

// ClusterOptions configure ReadCluster.
type ClusterOptions struct {
	// Kubeconfig is a kubeconfig file; empty: the in-cluster service
	// account (an error outside a pod).
	Kubeconfig string
	// Namespaces are the namespaces to read; none: every namespace, by
	// one cluster-wide list per kind.
	Namespaces []string
	// Timeout bounds the whole call; zero means DefaultAuditTimeout.
	Timeout time.Duration
	// Env and ServiceAccountDir as in Options (tests).
	Env               func(string) string
	ServiceAccountDir string
}

// Cluster is what ReadCluster read: the objects preflight kube -f judges,
// as the API server holds them (its defaults filled in), and where the
// workloads' pods run.
type Cluster struct {
	// Server is the API server's URL.
	Server string `json:"server"`
	// Objects are the Deployments, StatefulSets, DaemonSets, ReplicaSets
	// and Jobs that no other workload owns, the CronJobs, the bare Pods,
	// the PersistentVolumeClaims, PersistentVolumes and StorageClasses,
	// each as JSON with its apiVersion, kind, metadata (name, namespace,
	// labels, annotations) and spec.
	Objects []Object `json:"-"`
	// Pods are every pod read, with the workload that owns it.
	Pods []kubeapi.PodPlacement `json:"pods"`
	// Denied are the cluster-scoped requests RBAC refused: the lists of
	// PersistentVolumes and StorageClasses (the claims' storage is then
	// unknown), and get namespaces (whether the namespaces asked for exist
	// is then unknown). A refused namespaced list is an error.
	Denied []Permission `json:"denied,omitempty"`
	// MissingNamespaces are the namespaces asked for
	// (ClusterOptions.Namespaces) that do not exist (get namespaces
	// answered 404): nothing was read there.
	MissingNamespaces []string `json:"missing_namespaces,omitempty"`
}

// Object is one object read, as JSON.
type Object struct {
	Kind string
	JSON json.RawMessage
}

// clusterKind is one kind ReadCluster lists, in the order it lists them
// (ReplicaSets and Jobs before Pods, to resolve the pods' owners).
type clusterKind struct {
	kind, apiVersion, prefix, resource string
	namespaced                         bool
}

var clusterKinds = []clusterKind{
	{"StorageClass", "storage.k8s.io/v1", "/apis/storage.k8s.io/v1", "storageclasses", false},
	{"PersistentVolume", "v1", "/api/v1", "persistentvolumes", false},
	{"PersistentVolumeClaim", "v1", "/api/v1", "persistentvolumeclaims", true},
	{"Deployment", "apps/v1", "/apis/apps/v1", "deployments", true},
	{"StatefulSet", "apps/v1", "/apis/apps/v1", "statefulsets", true},
	{"DaemonSet", "apps/v1", "/apis/apps/v1", "daemonsets", true},
	{"ReplicaSet", "apps/v1", "/apis/apps/v1", "replicasets", true},
	{"CronJob", "batch/v1", "/apis/batch/v1", "cronjobs", true},
	{"Job", "batch/v1", "/apis/batch/v1", "jobs", true},
	{"Pod", "v1", "/api/v1", "pods", true},
}

// listedObject is what ReadCluster decodes of a listed item: the spec is
// kept as it came, the rest of the metadata (managedFields) and the status
// (but a pod's phase) are dropped while decoding.
type listedObject struct {
	Metadata kubeapi.ObjectMeta `json:"metadata"`
	Spec     json.RawMessage    `json:"spec"`
	Status   struct {
		Phase string `json:"phase"`
	} `json:"status"`
	// A StorageClass has no spec.
	Provisioner string            `json:"provisioner"`
	Parameters  map[string]string `json:"parameters"`
}

// ReadCluster reads the workloads, pods, claims, PersistentVolumes and
// StorageClasses of a cluster through the API: GET only, every list paged
// (PageSize, continue, MaxPages) and bounded as the in-pod probe's are
// (MaxBody per page, items decoded one at a time), within opts.Timeout.
// The workloads' pods are kept as ClusterPod (a few strings each), not as
// objects. A namespaced list that RBAC refuses, or any other failure, is
// an error (an *APIError for a refusal); a refused cluster-scoped list is
// recorded in Denied.
func ReadCluster(ctx context.Context, opts ClusterOptions) (*Cluster, error) {
	var cfg *Config
	var err error
	if opts.Kubeconfig != "" {
		cfg, err = LoadKubeconfig(opts.Kubeconfig)
	} else {
		var ok bool
		cfg, ok, err = InCluster(Options{Env: opts.Env}.env, opts.ServiceAccountDir)
		if !ok && err == nil {
			err = errors.New("no kubeconfig and not in a pod (KUBERNETES_SERVICE_HOST is unset)")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("configure the Kubernetes API: %w", err)
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultAuditTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := newClient(cfg, timeout)
	if err != nil {
		return nil, err
	}
	defer c.close()
	out := &Cluster{Server: cfg.Server}
	owners := map[string][2]string{} // "ns/Kind/name" of a ReplicaSet or Job -> its owner's kind and name
	if err := out.checkNamespaces(ctx, c, opts.Namespaces); err != nil {
		return nil, err
	}
	namespaces := opts.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	for _, k := range clusterKinds {
		scopes := namespaces
		if !k.namespaced {
			scopes = []string{""}
		}
		for _, ns := range scopes {
			path := k.prefix + "/" + k.resource
			if ns != "" {
				path = k.prefix + "/namespaces/" + url.PathEscape(ns) + "/" + k.resource
			}
			err := list(ctx, c, path, k.resource, ns, func(o *listedObject) { out.add(k, o, owners) })
			var ae *APIError
			if !k.namespaced && errors.As(err, &ae) && ae.Code == http.StatusForbidden {
				out.Denied = append(out.Denied, Permission{Verb: "list", Resource: k.resource})
				continue
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// checkNamespaces gets each namespace asked for: one that is not found
// goes to MissingNamespaces (a list in it answers an empty list, which
// would read as a namespace where all is well); a refused get is
// recorded in Denied, once.
func (cl *Cluster) checkNamespaces(ctx context.Context, c *client, names []string) error {
	for _, ns := range names {
		var v struct {
			Metadata kubeapi.ObjectMeta `json:"metadata"`
		}
		err := c.get(ctx, "/api/v1/namespaces/"+url.PathEscape(ns), nil, &v, "get", "namespaces", "", ns)
		var ae *APIError
		switch {
		case err == nil:
		case errors.As(err, &ae) && ae.Code == http.StatusNotFound:
			cl.MissingNamespaces = append(cl.MissingNamespaces, ns)
		case errors.As(err, &ae) && ae.Code == http.StatusForbidden:
			cl.Denied = append(cl.Denied, Permission{Verb: "get", Resource: "namespaces"})
			return nil
		default:
			return err
		}
	}
	return nil
}

// add records one listed object of kind k.
func (cl *Cluster) add(k clusterKind, o *listedObject, owners map[string][2]string) {
	md := o.Metadata
	ref, owned := md.ControllerRef()
	var owner *kubeapi.OwnerReference
	if owned {
		owner = &ref
	}
	switch k.kind {
	case "ReplicaSet", "Job":
		if owner != nil {
			owners[md.Namespace+"/"+k.kind+"/"+md.Name] = [2]string{owner.Kind, owner.Name}
			if owner.Kind == "Deployment" || owner.Kind == "CronJob" {
				return // judged as its owner
			}
		}
	case "Pod":
		var spec kubeapi.PodSpec
		_ = json.Unmarshal(o.Spec, &spec) // the server's own pod: it decodes
		p := kubeapi.PodPlacement{Name: md.Name, Namespace: md.Namespace, Node: spec.NodeName, Phase: o.Status.Phase}
		for _, v := range spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				p.Claims = append(p.Claims, v.PersistentVolumeClaim.ClaimName)
			}
		}
		if owner != nil {
			p.OwnerKind, p.OwnerName = owner.Kind, owner.Name
			if up, ok := owners[md.Namespace+"/"+owner.Kind+"/"+owner.Name]; ok && (up[0] == "Deployment" || up[0] == "CronJob") {
				p.OwnerKind, p.OwnerName = up[0], up[1]
			}
		}
		cl.Pods = append(cl.Pods, p)
		if owner != nil {
			return // judged as its owner
		}
	}
	meta := map[string]any{"name": md.Name}
	if md.Namespace != "" {
		meta["namespace"] = md.Namespace
	}
	if len(md.Labels) > 0 {
		meta["labels"] = md.Labels
	}
	if len(md.Annotations) > 0 {
		meta["annotations"] = md.Annotations
	}
	obj := map[string]any{"apiVersion": k.apiVersion, "kind": k.kind, "metadata": meta}
	if len(o.Spec) > 0 {
		obj["spec"] = o.Spec
	}
	if k.kind == "StorageClass" {
		obj["provisioner"], obj["parameters"] = o.Provisioner, o.Parameters
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return // the spec came from a JSON decoder: it marshals
	}
	cl.Objects = append(cl.Objects, Object{Kind: k.kind, JSON: b})
}
