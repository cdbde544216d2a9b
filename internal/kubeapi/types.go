// Package kubeapi holds minimal Kubernetes object types: exactly the fields
// preflight reads from the API server (probe/kube) and from manifests
// (preflight kube), decoded with encoding/json (or a YAML decoder into
// JSON-tagged structs). Field names and JSON tags follow the Kubernetes
// v1 API (core/v1, apps/v1, batch/v1, storage.k8s.io/v1); every field that
// is absent decodes to its zero value. It also classifies a volume's
// storage into the filesystem classes of probe/mounts (classify.go).
//
// These are not k8s.io/api: that module and client-go would grow the
// image binary by about 10 MB (see probe/kube's package doc).
package kubeapi

import (
	"encoding/json"
	"strconv"
	"strings"
)

// TypeMeta is an object's apiVersion and kind (empty in API list items).
type TypeMeta struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
}

// ObjectMeta is the part of metadata preflight reads.
type ObjectMeta struct {
	Name      string            `json:"name,omitempty"`
	Namespace string            `json:"namespace,omitempty"`
	UID       string            `json:"uid,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	// Annotations: preflight kube reads a StorageClass's
	// storageclass.kubernetes.io/is-default-class.
	Annotations     map[string]string `json:"annotations,omitempty"`
	OwnerReferences []OwnerReference  `json:"ownerReferences,omitempty"`
}

// OwnerReference names an object's owner (metadata.ownerReferences[]).
type OwnerReference struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Name       string `json:"name,omitempty"`
	UID        string `json:"uid,omitempty"`
	Controller *bool  `json:"controller,omitempty"`
}

// ControllerRef returns the owner reference marked controller: true, else
// the first one; ok is false when there is none.
func (m ObjectMeta) ControllerRef() (ref OwnerReference, ok bool) {
	for _, r := range m.OwnerReferences {
		if r.Controller != nil && *r.Controller {
			return r, true
		}
	}
	if len(m.OwnerReferences) > 0 {
		return m.OwnerReferences[0], true
	}
	return OwnerReference{}, false
}

// ListMeta is a list's metadata; Continue is the token for the next page
// (empty on the last page).
type ListMeta struct {
	Continue        string `json:"continue,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// List is one page of a list response (PodList, PersistentVolumeList...).
type List[T any] struct {
	TypeMeta
	Metadata ListMeta `json:"metadata"`
	Items    []T      `json:"items"`
}

// Pod is a core/v1 Pod.
type Pod struct {
	TypeMeta
	Metadata ObjectMeta `json:"metadata"`
	Spec     PodSpec    `json:"spec"`
	Status   PodStatus  `json:"status"`
}

// PodSpec is the part of a pod's spec preflight reads.
type PodSpec struct {
	NodeName string `json:"nodeName,omitempty"`
	// Hostname is spec.hostname: the pod's host name when set, else its
	// name.
	Hostname       string      `json:"hostname,omitempty"`
	Volumes        []Volume    `json:"volumes,omitempty"`
	Containers     []Container `json:"containers,omitempty"`
	InitContainers []Container `json:"initContainers,omitempty"`
}

// PodStatus holds the pod's phase (Pending, Running, Succeeded, Failed,
// Unknown) and its IP addresses (empty until assigned).
type PodStatus struct {
	Phase  string `json:"phase,omitempty"`
	PodIP  string `json:"podIP,omitempty"`
	PodIPs []struct {
		IP string `json:"ip"`
	} `json:"podIPs,omitempty"`
}

// Container is one container of a pod.
type Container struct {
	Name         string        `json:"name"`
	Image        string        `json:"image,omitempty"`
	Command      []string      `json:"command,omitempty"`
	Args         []string      `json:"args,omitempty"`
	Env          []EnvVar      `json:"env,omitempty"`
	EnvFrom      []EnvFrom     `json:"envFrom,omitempty"`
	VolumeMounts []VolumeMount `json:"volumeMounts,omitempty"`
}

// EnvVar is one variable of a container's env: Value, or ValueFrom (a
// key of a ConfigMap or Secret, a field of the pod, a resource) when set.
type EnvVar struct {
	Name      string           `json:"name"`
	Value     string           `json:"value,omitempty"`
	ValueFrom *json.RawMessage `json:"valueFrom,omitempty"`
}

// EnvFrom loads every key of a ConfigMap or Secret as a variable, its
// name after Prefix.
type EnvFrom struct {
	Prefix       string          `json:"prefix,omitempty"`
	ConfigMapRef *LocalObjectRef `json:"configMapRef,omitempty"`
	SecretRef    *LocalObjectRef `json:"secretRef,omitempty"`
}

// LocalObjectRef names an object in the pod's namespace.
type LocalObjectRef struct {
	Name string `json:"name"`
}

// ConfigMap is the part of a ConfigMap preflight reads.
type ConfigMap struct {
	Metadata ObjectMeta        `json:"metadata"`
	Data     map[string]string `json:"data,omitempty"`
}

// Secret is the part of a Secret preflight reads: Data values are
// base64 (encoding/json decodes them into bytes), StringData plain, and
// StringData's keys win, as the API server merges them.
type Secret struct {
	Metadata   ObjectMeta        `json:"metadata"`
	Data       map[string][]byte `json:"data,omitempty"`
	StringData map[string]string `json:"stringData,omitempty"`
}

// VolumeMount mounts the pod volume Name at MountPath (SubPath inside the
// volume when set; SubPathExpr is one with $(VAR) references to the
// container's environment, which the kubelet expands).
type VolumeMount struct {
	Name        string `json:"name"`
	MountPath   string `json:"mountPath"`
	ReadOnly    bool   `json:"readOnly,omitempty"`
	SubPath     string `json:"subPath,omitempty"`
	SubPathExpr string `json:"subPathExpr,omitempty"`
}

// Volume is a pod volume; exactly one source is set.
type Volume struct {
	Name                  string                       `json:"name"`
	PersistentVolumeClaim *PersistentVolumeClaimSource `json:"persistentVolumeClaim,omitempty"`
	HostPath              *HostPathSource              `json:"hostPath,omitempty"`
	EmptyDir              *EmptyDirSource              `json:"emptyDir,omitempty"`
	NFS                   *NFSSource                   `json:"nfs,omitempty"`
	CSI                   *CSISource                   `json:"csi,omitempty"`
	Ephemeral             *EphemeralVolumeSource       `json:"ephemeral,omitempty"`
	ConfigMap             *json.RawMessage             `json:"configMap,omitempty"`
	Secret                *json.RawMessage             `json:"secret,omitempty"`
	Projected             *json.RawMessage             `json:"projected,omitempty"`
	DownwardAPI           *json.RawMessage             `json:"downwardAPI,omitempty"`
	// Other is the source when it is one of OtherSources ("azureFile",
	// "iscsi", "flexVolume", ...), "" otherwise.
	Other string `json:"-"`
}

// OtherSources are the pod volume sources, besides persistentVolumeClaim,
// nfs, csi and hostPath, whose storage is outside the pod and the same
// for every pod of a workload: the in-tree network filesystems and block
// devices and the driver plugins (a VolumeSource field each since before
// Kubernetes 1.30, so that the admission policy's CEL, which names them,
// compiles on every supported API server). Network are the network
// filesystems among them.
var (
	OtherSources = []string{"azureFile", "cephfs", "glusterfs", "quobyte", "iscsi", "rbd", "fc", "flexVolume",
		"cinder", "portworxVolume", "scaleIO", "storageos", "vsphereVolume", "awsElasticBlockStore",
		"gcePersistentDisk", "azureDisk", "photonPersistentDisk", "flocker"}
	networkSources = []string{"azureFile", "cephfs", "glusterfs", "quobyte"}
)

// UnmarshalJSON decodes a pod volume and names its source in Other when
// that is one of OtherSources.
func (v *Volume) UnmarshalJSON(b []byte) error {
	type plain Volume
	if err := json.Unmarshal(b, (*plain)(v)); err != nil {
		return err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return err
	}
	for _, k := range OtherSources {
		if raw, ok := keys[k]; ok && string(raw) != "null" {
			v.Other = k
			break
		}
	}
	return nil
}

// PersistentVolumeClaimSource names a claim in the pod's namespace.
type PersistentVolumeClaimSource struct {
	ClaimName string `json:"claimName"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

// HostPathSource is a directory of the node.
type HostPathSource struct {
	Path string `json:"path"`
	Type string `json:"type,omitempty"`
}

// EmptyDirSource is a pod-lifetime directory; Medium "Memory" is a tmpfs.
type EmptyDirSource struct {
	Medium string `json:"medium,omitempty"`
}

// NFSSource is an NFS export (in-tree nfs volume or PV).
type NFSSource struct {
	Server   string `json:"server"`
	Path     string `json:"path"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// CSISource is an inline CSI volume of a pod.
type CSISource struct {
	Driver           string            `json:"driver"`
	ReadOnly         *bool             `json:"readOnly,omitempty"`
	VolumeAttributes map[string]string `json:"volumeAttributes,omitempty"`
}

// EphemeralVolumeSource is a generic ephemeral volume: a claim made from
// the template, named "<pod>-<volume>".
type EphemeralVolumeSource struct {
	VolumeClaimTemplate *PersistentVolumeClaimTemplate `json:"volumeClaimTemplate,omitempty"`
}

// PersistentVolumeClaimTemplate is a claim template (ephemeral volumes,
// StatefulSet volumeClaimTemplates use PersistentVolumeClaim itself).
type PersistentVolumeClaimTemplate struct {
	Metadata ObjectMeta                `json:"metadata"`
	Spec     PersistentVolumeClaimSpec `json:"spec"`
}

// Access modes (spec.accessModes).
const (
	ReadWriteOnce    = "ReadWriteOnce"
	ReadOnlyMany     = "ReadOnlyMany"
	ReadWriteMany    = "ReadWriteMany"
	ReadWriteOncePod = "ReadWriteOncePod"
)

// PersistentVolumeClaim is a core/v1 PersistentVolumeClaim.
type PersistentVolumeClaim struct {
	TypeMeta
	Metadata ObjectMeta                  `json:"metadata"`
	Spec     PersistentVolumeClaimSpec   `json:"spec"`
	Status   PersistentVolumeClaimStatus `json:"status"`
}

// PersistentVolumeClaimSpec: VolumeName is the bound PV; StorageClassName
// nil means the default class, "" means none.
type PersistentVolumeClaimSpec struct {
	AccessModes      []string `json:"accessModes,omitempty"`
	VolumeName       string   `json:"volumeName,omitempty"`
	StorageClassName *string  `json:"storageClassName,omitempty"`
}

// PersistentVolumeClaimStatus: Phase is Pending, Bound or Lost.
type PersistentVolumeClaimStatus struct {
	Phase       string   `json:"phase,omitempty"`
	AccessModes []string `json:"accessModes,omitempty"`
}

// PersistentVolume is a core/v1 PersistentVolume (cluster-scoped).
type PersistentVolume struct {
	TypeMeta
	Metadata ObjectMeta           `json:"metadata"`
	Spec     PersistentVolumeSpec `json:"spec"`
}

// PersistentVolumeSpec is the part of a PV preflight reads; one source set.
type PersistentVolumeSpec struct {
	AccessModes      []string             `json:"accessModes,omitempty"`
	StorageClassName string               `json:"storageClassName,omitempty"`
	ClaimRef         *ObjectReference     `json:"claimRef,omitempty"`
	NFS              *NFSSource           `json:"nfs,omitempty"`
	CSI              *CSIPersistentSource `json:"csi,omitempty"`
	HostPath         *HostPathSource      `json:"hostPath,omitempty"`
	Local            *LocalSource         `json:"local,omitempty"`
	// CephFS, Glusterfs and AzureFile are in-tree network sources, read
	// for their presence.
	CephFS    *json.RawMessage `json:"cephfs,omitempty"`
	Glusterfs *json.RawMessage `json:"glusterfs,omitempty"`
	AzureFile *json.RawMessage `json:"azureFile,omitempty"`
	// MountOptions are the PV's spec.mountOptions (nolock, nobrl, ...).
	MountOptions []string `json:"mountOptions,omitempty"`
}

// ObjectReference is a PV's claimRef.
type ObjectReference struct {
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	UID       string `json:"uid,omitempty"`
}

// CSIPersistentSource is a PV's CSI source.
type CSIPersistentSource struct {
	Driver           string            `json:"driver"`
	VolumeHandle     string            `json:"volumeHandle"`
	ReadOnly         bool              `json:"readOnly,omitempty"`
	FSType           string            `json:"fsType,omitempty"`
	VolumeAttributes map[string]string `json:"volumeAttributes,omitempty"`
}

// LocalSource is a local PV: a disk or directory of one node.
type LocalSource struct {
	Path   string  `json:"path"`
	FSType *string `json:"fsType,omitempty"`
}

// StorageClass is a storage.k8s.io/v1 StorageClass (cluster-scoped).
type StorageClass struct {
	TypeMeta
	Metadata    ObjectMeta        `json:"metadata"`
	Provisioner string            `json:"provisioner"`
	Parameters  map[string]string `json:"parameters,omitempty"`
}

// IntOrString is a Kubernetes int-or-string (maxSurge: 1 or "25%").
type IntOrString struct {
	IsString bool
	Int      int
	Str      string
}

// UnmarshalJSON accepts a JSON number or string.
func (v *IntOrString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		v.IsString = true
		return json.Unmarshal(b, &v.Str)
	}
	v.IsString = false
	return json.Unmarshal(b, &v.Int)
}

// MarshalJSON writes the number or the string.
func (v IntOrString) MarshalJSON() ([]byte, error) {
	if v.IsString {
		return json.Marshal(v.Str)
	}
	return json.Marshal(v.Int)
}

// Positive reports whether the value is above zero: an int above 0, or a
// percentage ("25%") or number string above 0. An unparsable string counts
// as positive (the API server would reject it; assume the riskier).
func (v IntOrString) Positive() bool {
	if !v.IsString {
		return v.Int > 0
	}
	s := strings.TrimSuffix(strings.TrimSpace(v.Str), "%")
	n, err := strconv.Atoi(s)
	return err != nil || n > 0
}

// Deployment is an apps/v1 Deployment.
type Deployment struct {
	TypeMeta
	Metadata ObjectMeta     `json:"metadata"`
	Spec     DeploymentSpec `json:"spec"`
}

// DeploymentSpec: Replicas nil means 1; Strategy.Type "" means
// RollingUpdate with maxSurge 25%.
type DeploymentSpec struct {
	Replicas *int32             `json:"replicas,omitempty"`
	Strategy DeploymentStrategy `json:"strategy,omitempty"`
	Template PodTemplateSpec    `json:"template"`
}

// DeploymentStrategy is Recreate or RollingUpdate.
type DeploymentStrategy struct {
	Type          string                   `json:"type,omitempty"`
	RollingUpdate *RollingUpdateDeployment `json:"rollingUpdate,omitempty"`
}

// RollingUpdateDeployment: nil MaxSurge means the default 25%.
type RollingUpdateDeployment struct {
	MaxSurge       *IntOrString `json:"maxSurge,omitempty"`
	MaxUnavailable *IntOrString `json:"maxUnavailable,omitempty"`
}

// Strategy types.
const (
	StrategyRecreate      = "Recreate"
	StrategyRollingUpdate = "RollingUpdate"
)

// SurgesNewPod reports whether an update starts the new pod before the old
// one stops: RollingUpdate (the default) with maxSurge above 0 (default
// 25%, which rounds up to 1).
func (s DeploymentStrategy) SurgesNewPod() bool {
	if s.Type == StrategyRecreate {
		return false
	}
	if s.RollingUpdate == nil || s.RollingUpdate.MaxSurge == nil {
		return true
	}
	return s.RollingUpdate.MaxSurge.Positive()
}

// ReplicaCount returns *p, or 1 when p is nil (the API default).
func ReplicaCount(p *int32) int {
	if p == nil {
		return 1
	}
	return int(*p)
}

// PodTemplateSpec is a workload's pod template.
type PodTemplateSpec struct {
	Metadata ObjectMeta `json:"metadata"`
	Spec     PodSpec    `json:"spec"`
}

// ReplicaSet is an apps/v1 ReplicaSet; its controller owner is usually a
// Deployment.
type ReplicaSet struct {
	TypeMeta
	Metadata ObjectMeta     `json:"metadata"`
	Spec     ReplicaSetSpec `json:"spec"`
}

// ReplicaSetSpec: Replicas nil means 1.
type ReplicaSetSpec struct {
	Replicas *int32          `json:"replicas,omitempty"`
	Template PodTemplateSpec `json:"template"`
}

// StatefulSet is an apps/v1 StatefulSet.
type StatefulSet struct {
	TypeMeta
	Metadata ObjectMeta      `json:"metadata"`
	Spec     StatefulSetSpec `json:"spec"`
}

// StatefulSetSpec: each replica gets its own claim from each template,
// named "<template>-<set>-<ordinal>".
type StatefulSetSpec struct {
	Replicas             *int32                    `json:"replicas,omitempty"`
	Template             PodTemplateSpec           `json:"template"`
	VolumeClaimTemplates []PersistentVolumeClaim   `json:"volumeClaimTemplates,omitempty"`
	UpdateStrategy       StatefulSetUpdateStrategy `json:"updateStrategy,omitempty"`
}

// StatefulSetUpdateStrategy is RollingUpdate (default) or OnDelete; a
// StatefulSet's rolling update stops the old pod before it starts the new.
type StatefulSetUpdateStrategy struct {
	Type string `json:"type,omitempty"`
}

// DaemonSet is an apps/v1 DaemonSet: one pod per node.
type DaemonSet struct {
	TypeMeta
	Metadata ObjectMeta    `json:"metadata"`
	Spec     DaemonSetSpec `json:"spec"`
}

// DaemonSetSpec holds the pod template.
type DaemonSetSpec struct {
	Template PodTemplateSpec `json:"template"`
}

// Job is a batch/v1 Job.
type Job struct {
	TypeMeta
	Metadata ObjectMeta `json:"metadata"`
	Spec     JobSpec    `json:"spec"`
}

// JobSpec: Parallelism nil means 1.
type JobSpec struct {
	Parallelism *int32          `json:"parallelism,omitempty"`
	Completions *int32          `json:"completions,omitempty"`
	Template    PodTemplateSpec `json:"template"`
}

// CronJob is a batch/v1 CronJob: a Job from JobTemplate on a schedule.
type CronJob struct {
	TypeMeta
	Metadata ObjectMeta  `json:"metadata"`
	Spec     CronJobSpec `json:"spec"`
}

// CronJobSpec: ConcurrencyPolicy "" means Allow (a run may start while
// the previous one still runs); Forbid and Replace do not overlap runs.
type CronJobSpec struct {
	ConcurrencyPolicy string          `json:"concurrencyPolicy,omitempty"`
	JobTemplate       JobTemplateSpec `json:"jobTemplate"`
}

// JobTemplateSpec is a CronJob's job template.
type JobTemplateSpec struct {
	Metadata ObjectMeta `json:"metadata"`
	Spec     JobSpec    `json:"spec"`
}

// PodPlacement is a pod of a live cluster (preflight kube audit): the
// top-level workload that owns it (through a Deployment's ReplicaSet, a
// CronJob's Job), where it runs and the claims it mounts.
type PodPlacement struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// OwnerKind and OwnerName name the workload ("Deployment",
	// "vaultwarden"); empty for a bare Pod.
	OwnerKind string `json:"owner_kind,omitempty"`
	OwnerName string `json:"owner_name,omitempty"`
	// Node is spec.nodeName ("" until scheduled); Phase is status.phase.
	Node  string `json:"node,omitempty"`
	Phase string `json:"phase,omitempty"`
	// Claims are the PersistentVolumeClaims its volumes name.
	Claims []string `json:"claims,omitempty"`
}
