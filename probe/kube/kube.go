// Package kube finds, through the Kubernetes API, the pod preflight runs
// in, the volume, claim, PersistentVolume, StorageClass and driver behind
// each data directory, and the other pods that mount the same storage
// read-write. It states facts and how sure they are; it decides nothing.
//
// It speaks the Kubernetes REST API through a small GET-only client of its
// own (net/http, paged lists, a body bound, deadlines) instead of
// k8s.io/client-go: on the image binary client-go's bare REST client with
// only the core, apps and storage v1 types takes it from 15.7 MB to
// 25.2 MB and its package start-up from 2.6 ms to 10.8 ms (the typed
// clients: 43 MB), and that binary starts every container. This is the
// one place the project writes what a library offers, because the
// library's weight is the product's cost. The object types are the
// minimal structs of internal/kubeapi.
//
// Configuration: in-cluster (KUBERNETES_SERVICE_HOST/PORT and the service
// account's token, ca.crt and namespace under
// /var/run/secrets/kubernetes.io/serviceaccount/; the token is re-read
// when it rotates), else a kubeconfig (server, CA, token, client
// certificate and key; exec credential plugins are unsupported).
package kube

import (
	"os"
	"time"

	"github.com/preflight-sqlite/preflight/internal/kubeapi"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// Mode says whether to ask the API: ModeAuto asks when a configuration is
// found, ModeRequired makes "not found" and every failure the caller's
// error, ModeOff never asks.
type Mode string

// The modes.
const (
	ModeAuto     Mode = "auto"
	ModeOff      Mode = "off"
	ModeRequired Mode = "required"
)

// Status is how the probe went.
type Status string

// The statuses. Every status but StatusRan (with Sure) means the answer
// about other pods is not sure; StatusOff and StatusNotInCluster mean
// nothing was asked.
const (
	StatusOff          Status = "off"
	StatusNotInCluster Status = "not-in-cluster"
	// StatusNoPod: the API answered but our pod was not found (no
	// POD_NAME and a hostname that is no pod in the namespace, or a
	// kubeconfig used outside a pod without --pod).
	StatusNoPod       Status = "no-pod"
	StatusRan         Status = "ran"
	StatusDenied      Status = "denied"
	StatusUnreachable Status = "unreachable"
	StatusTimeout     Status = "timeout"
	StatusFailed      Status = "failed"
)

// DefaultTimeout bounds a whole Probe call when Options.Timeout is zero.
const DefaultTimeout = 2 * time.Second

// Options configure Probe. The zero value is ModeAuto, in-cluster
// configuration from the standard paths, DefaultTimeout.
type Options struct {
	Mode Mode
	// Timeout bounds the whole call (every request, dial and TLS
	// included). Zero means DefaultTimeout.
	Timeout time.Duration
	// RequestTimeout bounds each request; zero means Timeout.
	RequestTimeout time.Duration
	// Kubeconfig is a kubeconfig file; it takes precedence over the
	// in-cluster configuration. Empty: in-cluster only.
	Kubeconfig string
	// Pod is "NAMESPACE/NAME" of the pod to check; empty means
	// POD_NAMESPACE/POD_NAME from env, else the service account's
	// namespace and the hostname.
	Pod string
	// ServiceAccountDir replaces DefaultServiceAccountDir (tests).
	ServiceAccountDir string
	// Env looks up environment variables; nil means os.Getenv.
	Env func(string) string
	// Hostname returns the host name; nil means os.Hostname.
	Hostname func() (string, error)
	// MountTable is this process's mount table, to read the kubelet's
	// volume path (/var/lib/kubelet/pods/UID/volumes/PLUGIN/NAME) in a
	// mount's root. Nil: volumes are matched by volumeMounts only.
	MountTable *mounts.Table
}

func (o Options) env(k string) string {
	if o.Env != nil {
		return o.Env(k)
	}
	return os.Getenv(k)
}

func (o Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultTimeout
}

// Result is what Probe found.
type Result struct {
	Status Status `json:"status"`
	// Err says why the status is not "ran", or what was incomplete.
	Err string `json:"error,omitempty"`
	// Sure is true when every request the answer needed was answered.
	Sure bool `json:"sure"`
	// Config is where the API was found (nil when it was not).
	Config *Config `json:"config,omitempty"`
	// Denied lists the requests RBAC refused.
	Denied []Permission `json:"denied,omitempty"`
	// Pod is our pod; nil when it was not found.
	Pod *Pod `json:"pod,omitempty"`
	// Owner is our pod's controller (a ReplicaSet resolved to its
	// Deployment), with its replicas and update strategy.
	Owner *Owner `json:"owner,omitempty"`
	// Paths has one entry per data path, in the order given.
	Paths []Path `json:"paths,omitempty"`
}

// Permission is an RBAC verb on a resource ("list pods" in namespace
// "app"; Namespace empty for cluster-scoped resources).
type Permission struct {
	Verb      string `json:"verb"`
	Group     string `json:"group,omitempty"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
}

func (p Permission) String() string {
	r := p.Resource
	if p.Group != "" {
		r += "." + p.Group
	}
	if p.Namespace != "" {
		return p.Verb + " " + r + " in namespace " + p.Namespace
	}
	return p.Verb + " " + r + " (cluster-wide)"
}

// Pod is a pod as reported: ours or a writer.
type Pod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
	Node      string `json:"node,omitempty"`
	Phase     string `json:"phase,omitempty"`
	// How our pod was named: "option", "downward-api", "hostname".
	How string `json:"how,omitempty"`
	// OwnerKind and OwnerName: the controller (Deployment for a pod of a
	// ReplicaSet when that could be read), empty for a bare pod.
	OwnerKind string `json:"owner_kind,omitempty"`
	OwnerName string `json:"owner_name,omitempty"`
}

// Owner is a workload that runs our pod.
type Owner struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Replicas is spec.replicas (1 when unset); -1 when not read.
	Replicas int `json:"replicas"`
	// Strategy is the Deployment's strategy type ("RollingUpdate" when
	// unset) or the StatefulSet's updateStrategy type.
	Strategy string `json:"strategy,omitempty"`
	// MaxSurge is the Deployment's rollingUpdate.maxSurge as written
	// ("25%" when unset).
	MaxSurge string `json:"max_surge,omitempty"`
	// Surges is true when an update starts the new pod before the old
	// one stops (Deployment RollingUpdate with maxSurge above 0).
	Surges bool `json:"surges"`
	// Annotations are a Deployment's metadata.annotations (the patches
	// preflight prints keep its kube-score/ignore checks).
	Annotations map[string]string `json:"annotations,omitempty"`
	// ClaimTemplates are a StatefulSet's volumeClaimTemplates names (each
	// replica has its own claim from them).
	ClaimTemplates []string `json:"claim_templates,omitempty"`
}

// Path is what the API says about one data path.
type Path struct {
	Path string `json:"path"`
	// Volume is the pod volume holding the path; empty when none does (the
	// container's own filesystem).
	Volume    string `json:"volume,omitempty"`
	MountPath string `json:"mount_path,omitempty"`
	SubPath   string `json:"sub_path,omitempty"`
	ReadOnly  bool   `json:"read_only,omitempty"`
	// Containers are our pod's containers whose volumeMounts hold the path.
	Containers []string `json:"containers,omitempty"`
	// KubeletPath is the kubelet's volume directory seen in the mount
	// table's root for the path ("/var/lib/kubelet/pods/UID/volumes/...").
	KubeletPath string `json:"kubelet_path,omitempty"`
	// Claim is the PersistentVolumeClaim, with its access modes; PV and
	// StorageClass what it is bound to.
	Claim        string   `json:"claim,omitempty"`
	AccessModes  []string `json:"access_modes,omitempty"`
	PV           string   `json:"pv,omitempty"`
	StorageClass string   `json:"storage_class,omitempty"`
	// Storage is the backing and class the objects give (Class unknown
	// when they could not be read).
	Storage kubeapi.Storage `json:"storage"`
	// Writers are other pods that mount the same storage read-write.
	Writers []Writer `json:"writers,omitempty"`
	// Sure is false when a request this path needed was not answered.
	Sure bool `json:"sure"`
}

// Writer is another pod that mounts the storage of a data path read-write.
type Writer struct {
	Pod
	// SameNode is true when the pod's node is ours (one kernel).
	SameNode bool `json:"same_node"`
	// Relation says how: "same claim NAME", "PV NAME with the same NFS
	// export SERVER:PATH", "PV NAME with the same CSI volume handle",
	// "inline nfs volume with the same export".
	Relation string `json:"relation"`
	// Containers are its containers that mount the storage read-write.
	Containers []string `json:"containers,omitempty"`
}
