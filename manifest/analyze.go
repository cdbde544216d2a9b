package manifest

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/internal/kubeapi"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// Options configure Analyze.
type Options struct {
	// Catalogue recognises SQLite applications by image (compose's
	// catalogue: compose.Builtin, merged with --catalogue files); nil
	// recognises none.
	Catalogue *compose.Catalogue
	// DataClaims are --data-claim values: claims that hold SQLite data,
	// as NAME (in any namespace) or NAMESPACE/NAME. A StatefulSet's
	// volumeClaimTemplate is named by the template's name.
	DataClaims []string
	// Pods are the pods of the workloads as a live cluster runs them
	// (preflight kube audit); none for manifests.
	Pods []Pod
}

// Pod is a pod of a live cluster, where it runs and the workload that
// owns it.
type Pod = kubeapi.PodPlacement

// Analysis is what Analyze found: every workload, every claim the
// workloads mount or the input declares, and every workload volume that
// is mounted by a container.
type Analysis struct {
	Files     []string   `json:"files"`
	Objects   int        `json:"objects"`
	Workloads []Workload `json:"workloads"`
	Claims    []Claim    `json:"claims"`
	Mounts    []Mount    `json:"mounts"`
	// DataClaimsUnused lists --data-claim values that no workload mounts.
	DataClaimsUnused []string `json:"data_claims_unused,omitempty"`
	// DuplicateKeys are the keys written twice in one mapping of an
	// object, of which the last was read (Object.Duplicates).
	DuplicateKeys []DuplicateKey `json:"duplicate_keys,omitempty"`
	objects       []Object
}

// SQLiteLabel is the label a user sets on a workload or a claim to say
// that it holds SQLite data ("true"), whatever its image, or that a
// workload does not ("false", which the catalogue's match yields to).
const SQLiteLabel = "preflight.io/sqlite"

// Workload kinds read from the input.
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
	KindDaemonSet   = "DaemonSet"
	KindReplicaSet  = "ReplicaSet"
	KindJob         = "Job"
	KindCronJob     = "CronJob"
	KindPod         = "Pod"
)

// Workload is an object that runs pods from a pod template (or a bare
// Pod): a Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob.
type Workload struct {
	Kind      string   `json:"kind"`
	Name      string   `json:"name"`
	Namespace string   `json:"namespace,omitempty"`
	At        Location `json:"at"`
	// Replicas is how many pods run at once in a steady state: spec.replicas
	// (default 1), a Job's (or a CronJob's job template's) spec.parallelism
	// (default 1), 1 for a Pod; 0
	// for a DaemonSet, whose pods are one per node (PerNode).
	Replicas int  `json:"replicas"`
	PerNode  bool `json:"per_node,omitempty"`
	// Strategy is a Deployment's spec.strategy.type ("RollingUpdate" when
	// absent, the API default), a StatefulSet's updateStrategy.type, or a
	// CronJob's concurrencyPolicy ("Allow" when absent).
	Strategy string `json:"strategy,omitempty"`
	// StrategyDefault is set when Strategy is the API's default because
	// the field is absent.
	StrategyDefault bool `json:"strategy_default,omitempty"`
	// Surge is set when an update starts a new pod while an old one still
	// runs: a Deployment's RollingUpdate with maxSurge above 0 (absent
	// means 25%, which rounds up to one pod).
	Surge bool `json:"surge,omitempty"`
	// MaxSurge is the strategy's maxSurge as written ("" when absent).
	MaxSurge string `json:"max_surge,omitempty"`
	// Overlap is set for a CronJob whose runs may overlap:
	// concurrencyPolicy Allow (the default when absent).
	Overlap bool `json:"overlap,omitempty"`
	// Annotations and Labels are the object's metadata.annotations and
	// metadata.labels (nil when it has none): other linters' annotations
	// (kube-score/ignore, polaris.fairwinds.com/...-exempt) and the
	// preflight.io/sqlite label.
	Annotations map[string]string `json:"annotations,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	// Running are the workload's pods that run now (phase Running), from
	// Options.Pods; nil for manifests.
	Running []Pod `json:"running,omitempty"`
	// Object is the index of the workload's object in the input.
	Object int `json:"-"`
}

// Key names the workload as kubectl does (deployment/NAME), after its
// namespace when it has one: "admin-tools/deployment/uptime-kuma".
func (w *Workload) Key() string { return objectKey(w.Kind, w.Name, w.Namespace) }

// Claim is a PersistentVolumeClaim the input declares, a workload
// mounts, or a StatefulSet's volumeClaimTemplate (one claim per replica,
// named TEMPLATE-SET-ORDINAL).
type Claim struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	// At is where the claim (or its StatefulSet) is declared; nil when
	// the input only refers to it.
	At *Location `json:"at,omitempty"`
	// Template is the StatefulSet (its Key) whose volumeClaimTemplate
	// this is.
	Template string `json:"template,omitempty"`
	// AccessModes are the claim's spec.accessModes (empty when the claim
	// is not in the input).
	AccessModes []string `json:"access_modes,omitempty"`
	// StorageClass is spec.storageClassName; Default is set when that is
	// absent (the cluster's default class applies).
	StorageClass string `json:"storage_class,omitempty"`
	Default      bool   `json:"default_class,omitempty"`
	// Volume is the PersistentVolume it binds, when the input says.
	Volume string `json:"volume,omitempty"`
	// Storage is what backs it, classified (mounts.ClassUnknown when the
	// input does not hold its PV or StorageClass); StorageFrom says from
	// what ("PersistentVolume nfs", "StorageClass standard").
	Storage     kubeapi.Storage `json:"storage"`
	StorageFrom string          `json:"storage_from"`
	// Labels are the claim's metadata.labels (SQLiteLabel).
	Labels map[string]string `json:"labels,omitempty"`
	// Object is the index of the claim's object in the input (-1 when
	// not in the input; a template's is its StatefulSet's).
	Object int `json:"-"`
}

// Key is NAMESPACE/NAME, or NAME without a namespace; for a
// volumeClaimTemplate, the claims it makes: NAMESPACE/TEMPLATE-SET-*.
func (c *Claim) Key() string {
	k := c.Name
	if c.Template != "" {
		_, set, _ := strings.Cut(c.Template[strings.LastIndex(c.Template, "statefulset/"):], "/")
		k += "-" + set + "-*"
	}
	if c.Namespace != "" {
		return c.Namespace + "/" + k
	}
	return k
}

// Mount is one pod volume of a workload that a container mounts.
type Mount struct {
	// Workload is the index in Analysis.Workloads.
	Workload int    `json:"workload"`
	Volume   string `json:"volume"`
	// Source is the volume's kind: "claim", "template" (a StatefulSet's
	// own claim per replica), "ephemeral" (a claim per pod), "hostPath",
	// "nfs", "csi", "emptyDir", one of kubeapi.OtherSources ("azureFile",
	// "iscsi", ...), or "other" (configMap, secret, ...).
	Source string `json:"source"`
	// Claim is the index in Analysis.Claims (-1 for other sources).
	Claim int `json:"claim"`
	// Containers mount it at Paths (one entry per container mount).
	Containers []string `json:"containers"`
	Paths      []string `json:"paths"`
	// Uses are the container mounts, one per Paths entry: where in the
	// volume each reaches and whether it writes or holds the data.
	Uses []Use `json:"uses"`
	// ReadOnly is set when every container mount, or the claim source, is
	// read-only.
	ReadOnly bool `json:"read_only,omitempty"`
	// Storage classifies a volume that is not a claim; for claims see
	// the claim's.
	Storage kubeapi.Storage `json:"storage"`
	// SQLite is set when the volume holds SQLite data; Why says how that
	// is known (a catalogued image's data directory, --data-claim).
	SQLite bool   `json:"sqlite"`
	App    string `json:"app,omitempty"`
	Why    string `json:"why,omitempty"`
	// Declared is set when a container declares the data itself: it runs
	// preflight run --data-dir, or sets PREFLIGHT_DATA_DIR, at or above
	// the mount (whatever its image; App is then empty).
	Declared bool `json:"declared,omitempty"`
	// OtherEngine says why a catalogued application's data directory
	// holds no SQLite data: the environment setting that moves it to
	// another database engine, and where it was read ("homebox uses
	// another database engine: HBOX_DATABASE_DRIVER=postgres (Secret
	// homebox-env, by envFrom)").
	OtherEngine string `json:"other_engine,omitempty"`
}

// Use is one container mount of a workload volume.
type Use struct {
	Container string `json:"container"`
	Path      string `json:"path"`
	// SubPath is the directory inside the volume that is mounted
	// (subPath, or subPathExpr as written); "" for the volume's root.
	// SubPathUnknown says it is a subPathExpr with $(VAR) references,
	// which the kubelet expands from the environment: any directory.
	SubPath        string `json:"sub_path,omitempty"`
	SubPathUnknown bool   `json:"sub_path_unknown,omitempty"`
	ReadOnly       bool   `json:"read_only,omitempty"`
	// Data is set when this mount reaches the SQLite data (the
	// application's data directory, a --data-claim, or the part of a
	// claim another workload keeps its data in).
	Data bool `json:"data,omitempty"`
}

// Shared reports whether every pod of the workload mounts the same
// storage: a claim, an nfs or csi volume, a hostPath (shared by the pods
// of one node), one of kubeapi.OtherSources; not a claim per pod or
// replica, an emptyDir, nor a configMap, secret or the like.
func (m *Mount) Shared() bool {
	switch m.Source {
	case "template", "ephemeral", "emptyDir", "other":
		return false
	}
	return true
}

// Overlaps reports whether two container mounts of one volume may reach
// the same files: one's subPath equal to or inside the other's (by path
// components, whatever their case: an SMB share, csi-driver-smb to a NAS,
// folds it, and a claim's storage may be one), either at the volume's
// root, or either unknown.
func (u Use) Overlaps(v Use) bool {
	if u.SubPathUnknown || v.SubPathUnknown {
		return true
	}
	a, b := strings.ToLower(subDir(u.SubPath)), strings.ToLower(subDir(v.SubPath))
	return a == "" || b == "" || a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

// subDir is a subPath as a clean relative path, "" for the root.
func subDir(p string) string {
	p = strings.Trim(path.Clean("/"+p), "/")
	return p
}

// SharesData reports whether mount j (of the same volume or claim) may
// write the SQLite data that mount i holds: a read-write use of j
// overlaps a data use of i.
func (a *Analysis) SharesData(i, j int) bool {
	for _, u := range a.Mounts[i].Uses {
		for _, v := range a.Mounts[j].Uses {
			if u.Data && !v.ReadOnly && u.Overlaps(v) {
				return true
			}
		}
	}
	return false
}

// Object returns the input object at index i (Workload.Object,
// Claim.Object).
func (a *Analysis) Object(i int) *Object {
	if i < 0 || i >= len(a.objects) {
		return nil
	}
	return &a.objects[i]
}

// Analyze reads the objects' workloads, claims, PersistentVolumes and
// StorageClasses and states which mounts hold SQLite data. Objects of
// other kinds are counted and otherwise ignored. An object of a workload
// kind that does not decode is an error naming it.
func Analyze(objs []Object, files []string, opts Options) (*Analysis, error) {
	a := &Analysis{Files: files, Objects: len(objs), Workloads: []Workload{}, Claims: []Claim{}, Mounts: []Mount{}, objects: objs}
	st := &store{pvs: map[string]*kubeapi.PersistentVolume{}, classes: map[string]*kubeapi.StorageClass{}}
	for i := range objs {
		a.DuplicateKeys = append(a.DuplicateKeys, objs[i].Duplicates...)
		if err := st.add(a, i); err != nil {
			return nil, err
		}
	}
	for i := range a.Claims {
		st.resolve(&a.Claims[i])
	}
	for _, w := range st.templates {
		a.addMounts(st, w.index, w.spec, opts)
	}
	a.claimData()
	a.addPods(opts.Pods)
	for _, c := range opts.DataClaims {
		used := false
		for _, m := range a.Mounts {
			used = used || m.Claim >= 0 && claimNamed(&a.Claims[m.Claim], c)
		}
		if !used {
			a.DataClaimsUnused = append(a.DataClaimsUnused, c)
		}
	}
	return a, nil
}

// addPods gives each workload its pods that run now.
func (a *Analysis) addPods(pods []Pod) {
	for _, p := range pods {
		if p.Phase != "Running" {
			continue // Pending: not started, or held at Multi-Attach by a claim another node has
		}
		kind, name := p.OwnerKind, p.OwnerName
		if kind == "" {
			kind, name = KindPod, p.Name
		}
		for i := range a.Workloads {
			if w := &a.Workloads[i]; w.Kind == kind && w.Name == name && w.Namespace == p.Namespace {
				w.Running = append(w.Running, p)
			}
		}
	}
}

// claimData marks as holding SQLite data every read-write mount of a
// claim that reaches where another workload keeps its SQLite data on it
// (SharesData): a backup CronJob of a plain image (alpine running
// sqlite3) on the application's claim is a writer of that database too.
// Only mounts known by themselves (the catalogue, --data-claim) are
// sources, so the mark does not spread from one reader's root mount to
// every other directory of the claim. A StatefulSet's template claims are
// its own pods'.
func (a *Analysis) claimData() {
	known := make([]bool, len(a.Mounts))
	for i := range a.Mounts {
		known[i] = a.Mounts[i].SQLite
	}
	for j := range a.Mounts {
		m := &a.Mounts[j]
		if known[j] || m.ReadOnly || m.Claim < 0 || m.Source != "claim" {
			continue
		}
		for i := range a.Mounts {
			src := &a.Mounts[i]
			if !known[i] || src.Claim != m.Claim || src.Workload == m.Workload || !a.SharesData(i, j) {
				continue
			}
			for k := range m.Uses {
				for _, u := range src.Uses {
					m.Uses[k].Data = m.Uses[k].Data || u.Data && !m.Uses[k].ReadOnly && u.Overlaps(m.Uses[k])
				}
			}
			if !m.SQLite {
				m.SQLite, m.App = true, src.App
				m.Why = fmt.Sprintf("claim %s holds the SQLite data of %s (%s), and this mount reaches it", a.Claims[m.Claim].Key(), a.Workloads[src.Workload].Key(), src.Why)
			}
		}
	}
}

// store holds what Analyze collects before it resolves claims.
type store struct {
	// envs are the ConfigMaps' and Secrets' keys and values, for
	// containers' envFrom.
	envs      []envSource
	pvs       map[string]*kubeapi.PersistentVolume
	classes   map[string]*kubeapi.StorageClass
	pvList    []*kubeapi.PersistentVolume
	defaults  []string
	templates []podTemplate
}

// podTemplate is a workload's pod spec, and the workload's index.
type podTemplate struct {
	index int
	spec  kubeapi.PodSpec
}

func decode[T any](o *Object) (*T, error) {
	var v T
	if err := json.Unmarshal(o.JSON, &v); err != nil {
		return nil, fmt.Errorf("decode %s %s (%s line %d): %w", o.Kind, o.Name, o.At.File, o.At.Line, err)
	}
	return &v, nil
}

// add records object i.
func (st *store) add(a *Analysis, i int) error {
	o := &a.objects[i]
	switch o.Kind {
	case "PersistentVolume":
		pv, err := decode[kubeapi.PersistentVolume](o)
		if err != nil {
			return err
		}
		st.pvs[pv.Metadata.Name] = pv
		st.pvList = append(st.pvList, pv)
	case "StorageClass":
		sc, err := decode[kubeapi.StorageClass](o)
		if err != nil {
			return err
		}
		st.classes[sc.Metadata.Name] = sc
		if sc.Metadata.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" {
			st.defaults = append(st.defaults, sc.Metadata.Name)
		}
	case "ConfigMap":
		cm, err := decode[kubeapi.ConfigMap](o)
		if err != nil {
			return nil // a ConfigMap we cannot read is one not in the input: its values are unknown
		}
		st.envs = append(st.envs, envSource{kind: o.Kind, name: o.Name, ns: o.Namespace, values: cm.Data})
	case "Secret":
		sec, err := decode[kubeapi.Secret](o)
		if err != nil {
			return nil // data that is not base64: unknown, as a Secret not in the input
		}
		vals := map[string]string{}
		for k, v := range sec.Data {
			vals[k] = string(v)
		}
		maps.Copy(vals, sec.StringData)
		st.envs = append(st.envs, envSource{kind: o.Kind, name: o.Name, ns: o.Namespace, values: vals})
	case "PersistentVolumeClaim":
		pvc, err := decode[kubeapi.PersistentVolumeClaim](o)
		if err != nil {
			return err
		}
		at := o.At
		c := claimOf(pvc.Metadata.Name, o.Namespace, pvc.Spec, &at, "", i)
		c.Labels = pvc.Metadata.Labels
		a.Claims = append(a.Claims, c)
	default:
		return st.addWorkload(a, i)
	}
	return nil
}

// claimOf makes a Claim from a claim spec.
func claimOf(name, ns string, spec kubeapi.PersistentVolumeClaimSpec, at *Location, template string, obj int) Claim {
	c := Claim{Name: name, Namespace: ns, At: at, Template: template, AccessModes: spec.AccessModes,
		Volume: spec.VolumeName, Object: obj}
	if spec.StorageClassName == nil {
		c.Default = true
	} else {
		c.StorageClass = *spec.StorageClassName
	}
	return c
}

// resolve classifies a claim from its PV (by volumeName, or a PV whose
// claimRef names it) or else its StorageClass.
func (st *store) resolve(c *Claim) {
	pv := st.pvs[c.Volume]
	for _, p := range st.pvList {
		if pv == nil && p.Spec.ClaimRef != nil && p.Spec.ClaimRef.Name == c.Name && (p.Spec.ClaimRef.Namespace == "" || c.Namespace == "" || p.Spec.ClaimRef.Namespace == c.Namespace) {
			pv = p
		}
	}
	modes := c.AccessModes
	switch {
	case pv != nil:
		if len(modes) == 0 {
			modes = pv.Spec.AccessModes
		}
		c.Volume = pv.Metadata.Name
		c.Storage = kubeapi.ClassifyPV(&kubeapi.PersistentVolume{Metadata: pv.Metadata, Spec: withModes(pv.Spec, modes)})
		c.StorageFrom = storageFromPV + pv.Metadata.Name
	case c.At == nil && c.Template == "":
		c.Storage = kubeapi.Storage{Class: mounts.ClassUnknown}
		c.StorageFrom = "the claim is not in the input"
	case c.Default && len(st.defaults) == 1:
		sc := st.classes[st.defaults[0]]
		c.Storage = kubeapi.ClassifyStorageClass(sc, modes)
		c.StorageFrom = "StorageClass " + sc.Metadata.Name + " (the default class in the input)"
	case c.Default:
		c.Storage = kubeapi.Storage{Class: mounts.ClassUnknown}
		c.StorageFrom = "the cluster's default StorageClass, which the input does not name"
	case st.classes[c.StorageClass] != nil:
		c.Storage = kubeapi.ClassifyStorageClass(st.classes[c.StorageClass], modes)
		c.StorageFrom = "StorageClass " + c.StorageClass
	case c.StorageClass == "":
		c.Storage = kubeapi.Storage{Class: mounts.ClassUnknown}
		c.StorageFrom = "no StorageClass and no PersistentVolume in the input"
	default:
		c.Storage = kubeapi.Storage{Class: mounts.ClassUnknown}
		c.StorageFrom = "StorageClass " + c.StorageClass + ", which is not in the input"
	}
}

func withModes(s kubeapi.PersistentVolumeSpec, modes []string) kubeapi.PersistentVolumeSpec {
	s.AccessModes = slices.Concat(s.AccessModes, modes)
	return s
}

// storageFromPV starts the StorageFrom of a claim classified by its
// PersistentVolume.
const storageFromPV = "PersistentVolume "

// FromPV reports whether the claim's Storage is its PersistentVolume's
// (in the input, or the one a live cluster binds it to), not a guess from
// its StorageClass.
func (c *Claim) FromPV() bool { return strings.HasPrefix(c.StorageFrom, storageFromPV) }

// claimNamed reports whether --data-claim value v names c.
func claimNamed(c *Claim, v string) bool {
	ns, name, ok := strings.Cut(v, "/")
	if !ok {
		return c.Name == v
	}
	return c.Name == name && (c.Namespace == ns || c.Namespace == "" && ns == "default")
}

// dataDirHeld reports whether a mount at p holds data directory dir:
// the same path, a parent of it, or a directory inside it; a relative p
// ("data", which the API server admits) is read from the root, where a
// runtime that accepts it mounts it.
func dataDirHeld(p, dir string) bool {
	p, dir = path.Clean("/"+p), path.Clean(dir) // the API server admits a relative mountPath; a runtime that accepts it mounts it from the root
	return p == dir || strings.HasPrefix(dir, strings.TrimSuffix(p, "/")+"/") || strings.HasPrefix(p, dir+"/")
}

// ObjectAt is where the input object named key ("NAMESPACE/KIND/NAME",
// as Workload.Key and DuplicateKey.Object name objects) starts; false
// when no object is so named.
func (a *Analysis) ObjectAt(key string) (Location, bool) {
	for i := range a.objects {
		if o := &a.objects[i]; objectKey(o.Kind, o.Name, o.Namespace) == key {
			return o.At, true
		}
	}
	return Location{}, false
}

// ObjectsIn counts the input objects read from file.
func (a *Analysis) ObjectsIn(file string) int {
	n := 0
	for i := range a.objects {
		if a.objects[i].At.File == file {
			n++
		}
	}
	return n
}
