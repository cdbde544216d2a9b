package manifest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/internal/kubeapi"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// addWorkload records object i when it is a workload kind; other kinds
// are ignored.
func (st *store) addWorkload(a *Analysis, i int) error {
	o := &a.objects[i]
	w := Workload{Kind: o.Kind, Name: o.Name, Namespace: o.Namespace, At: o.At, Replicas: 1, Object: i}
	if kindOfWorkload(o.Kind) {
		md, err := decode[struct {
			Metadata kubeapi.ObjectMeta `json:"metadata"`
		}](o)
		if err != nil {
			return err
		}
		w.Annotations, w.Labels = md.Metadata.Annotations, md.Metadata.Labels
	}
	var spec kubeapi.PodSpec
	switch o.Kind {
	case KindDeployment:
		d, err := decode[kubeapi.Deployment](o)
		if err != nil {
			return err
		}
		deployment(&w, d)
		spec = d.Spec.Template.Spec
	case KindStatefulSet:
		s, err := decode[kubeapi.StatefulSet](o)
		if err != nil {
			return err
		}
		w.Replicas = kubeapi.ReplicaCount(s.Spec.Replicas)
		w.Strategy = s.Spec.UpdateStrategy.Type
		if w.Strategy == "" {
			w.Strategy = kubeapi.StrategyRollingUpdate
		}
		spec = s.Spec.Template.Spec
		for _, t := range s.Spec.VolumeClaimTemplates {
			at := o.At
			a.Claims = append(a.Claims, claimOf(t.Metadata.Name, o.Namespace, t.Spec, &at, w.Key(), i))
			spec.Volumes = templateVolume(spec.Volumes, t.Metadata.Name)
		}
	case KindDaemonSet:
		d, err := decode[kubeapi.DaemonSet](o)
		if err != nil {
			return err
		}
		w.Replicas, w.PerNode = 0, true
		spec = d.Spec.Template.Spec
	case KindReplicaSet:
		r, err := decode[kubeapi.ReplicaSet](o)
		if err != nil {
			return err
		}
		w.Replicas = kubeapi.ReplicaCount(r.Spec.Replicas)
		spec = r.Spec.Template.Spec
	case KindJob:
		j, err := decode[kubeapi.Job](o)
		if err != nil {
			return err
		}
		w.Replicas = kubeapi.ReplicaCount(j.Spec.Parallelism)
		spec = j.Spec.Template.Spec
	case KindCronJob:
		j, err := decode[kubeapi.CronJob](o)
		if err != nil {
			return err
		}
		cronJob(&w, j)
		spec = j.Spec.JobTemplate.Spec.Template.Spec
	case KindPod:
		p, err := decode[kubeapi.Pod](o)
		if err != nil {
			return err
		}
		spec = p.Spec
	default:
		return nil
	}
	a.Workloads = append(a.Workloads, w)
	st.templates = append(st.templates, podTemplate{index: len(a.Workloads) - 1, spec: spec})
	return nil
}

// kindOfWorkload reports whether kind is one addWorkload records.
func kindOfWorkload(kind string) bool {
	switch kind {
	case KindDeployment, KindStatefulSet, KindDaemonSet, KindReplicaSet, KindJob, KindCronJob, KindPod:
		return true
	}
	return false
}

// deployment sets a Deployment's replicas and update strategy.
func deployment(w *Workload, d *kubeapi.Deployment) {
	w.Replicas = kubeapi.ReplicaCount(d.Spec.Replicas)
	w.Strategy = d.Spec.Strategy.Type
	if w.Strategy == "" {
		w.Strategy = kubeapi.StrategyRollingUpdate
	}
	w.Surge = d.Spec.Strategy.SurgesNewPod()
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil && ru.MaxSurge != nil {
		w.MaxSurge = intOrString(*ru.MaxSurge)
	}
}

// cronJob sets a CronJob's parallelism and concurrency policy.
func cronJob(w *Workload, j *kubeapi.CronJob) {
	w.Replicas = kubeapi.ReplicaCount(j.Spec.JobTemplate.Spec.Parallelism)
	w.Strategy = j.Spec.ConcurrencyPolicy
	if w.Strategy == "" {
		w.Strategy, w.StrategyDefault = "Allow", true
	}
	w.Overlap = w.Strategy == "Allow"
}

// templateVolume gives a StatefulSet's pod spec the volume its
// volumeClaimTemplate name makes (the containers mount it by that name),
// in place of a pod volume of the same name, which the template overrides.
func templateVolume(vols []kubeapi.Volume, name string) []kubeapi.Volume {
	out := slices.DeleteFunc(slices.Clone(vols), func(v kubeapi.Volume) bool { return v.Name == name })
	return append(out, kubeapi.Volume{Name: name, PersistentVolumeClaim: &kubeapi.PersistentVolumeClaimSource{ClaimName: name}})
}

func intOrString(v kubeapi.IntOrString) string {
	if v.IsString {
		return v.Str
	}
	return strconv.Itoa(v.Int)
}

// addMounts records every volume of workload wi's pod spec that a
// container (or init container) mounts.
func (a *Analysis) addMounts(st *store, wi int, spec kubeapi.PodSpec, opts Options) {
	w := &a.Workloads[wi]
	containers := append(append([]kubeapi.Container{}, spec.InitContainers...), spec.Containers...)
	envs := make([]containerEnv, len(containers))
	for i, c := range containers {
		envs[i] = st.env(c, w.Namespace)
	}
	for _, v := range spec.Volumes {
		m := Mount{Workload: wi, Volume: v.Name, Claim: -1, ReadOnly: true}
		for ci, c := range containers {
			env := envs[ci]
			for _, vm := range c.VolumeMounts {
				if vm.Name != v.Name {
					continue
				}
				m.Containers = append(m.Containers, c.Name)
				m.Paths = append(m.Paths, vm.MountPath)
				m.ReadOnly = m.ReadOnly && vm.ReadOnly
				u := Use{Container: c.Name, Path: vm.MountPath, SubPath: vm.SubPath, ReadOnly: vm.ReadOnly}
				if vm.SubPathExpr != "" {
					u.SubPath, u.SubPathUnknown = vm.SubPathExpr, strings.Contains(vm.SubPathExpr, "$(")
				}
				app, why, other := a.catalogued(opts, c, vm, env)
				if app == "" {
					if d := declaredDir(c, vm, env); d != "" {
						app, why, other = "", d, ""
						m.Declared = true
					}
				}
				u.Data = app != "" || why != ""
				if other != "" && m.OtherEngine == "" {
					m.OtherEngine = other
				}
				if u.Data && m.Why == "" {
					m.App, m.Why = app, why
				}
				m.Uses = append(m.Uses, u)
			}
		}
		if len(m.Containers) == 0 {
			continue
		}
		a.source(st, w, &m, &v)
		for i := range m.Uses {
			m.Uses[i].ReadOnly = m.Uses[i].ReadOnly || m.ReadOnly
		}
		m.SQLite = m.App != "" || m.Declared
		labelled(a, w, &m)
		if m.Claim >= 0 {
			for _, dc := range opts.DataClaims {
				if claimNamed(&a.Claims[m.Claim], dc) && !m.SQLite {
					m.SQLite, m.Why = true, "--data-claim "+dc
					for i := range m.Uses {
						m.Uses[i].Data = true
					}
				}
			}
		}
		a.Mounts = append(a.Mounts, m)
	}
}

// labelled applies SQLiteLabel: "false" on the workload makes none of
// its mounts SQLite data; "true" on the workload makes every read-write
// mount of a claim or another shared volume (Mount.Shared) SQLite data, as "true"
// on the mount's claim does.
func labelled(a *Analysis, w *Workload, m *Mount) {
	if w.Labels[SQLiteLabel] == "false" {
		m.SQLite, m.App, m.Why = false, "", ""
		return
	}
	if m.SQLite || m.ReadOnly {
		return
	}
	why := ""
	switch {
	case m.Claim >= 0 && a.Claims[m.Claim].Labels[SQLiteLabel] == "true":
		why = "claim " + a.Claims[m.Claim].Key() + " has the label " + SQLiteLabel + ": \"true\""
	case w.Labels[SQLiteLabel] == "true" && (m.Claim >= 0 || m.Shared()):
		why = w.Key() + " has the label " + SQLiteLabel + ": \"true\""
	default:
		return
	}
	m.SQLite, m.Why = true, why
	for i := range m.Uses {
		m.Uses[i].Data = true
	}
}

// catalogued returns the catalogue application whose data directory
// container c mounts with vm under its environment env, and why, or "".
// An application that env moves to another database engine holds no
// SQLite data: "" and the setting, with where it was read, in otherEngine.
func (a *Analysis) catalogued(opts Options, c kubeapi.Container, vm kubeapi.VolumeMount, env containerEnv) (app, why, otherEngine string) {
	if opts.Catalogue == nil {
		return "", "", ""
	}
	entry, how := opts.Catalogue.MatchHow(c.Image)
	if entry == nil {
		return "", "", ""
	}
	dirs, moved := entry.DataDirsUnder(env.values)
	for _, d := range dirs {
		if !dataDirHeld(vm.MountPath, d) {
			continue
		}
		if sw := entry.EngineSwitch(env.values); sw != "" {
			name, _, _ := strings.Cut(sw, "=")
			return "", "", fmt.Sprintf("%s uses another database engine: %s (%s)", entry.Name, sw, env.from[name])
		}
		why = fmt.Sprintf("%s's data directory %s in container %s, image %s", entry.Name, d, c.Name, c.Image)
		if how == compose.MatchName {
			why += ", matched by its name"
		}
		if moved != "" {
			why += " (moved by " + moved + ")"
		}
		return entry.Name, why, ""
	}
	return "", "", ""
}

// declaredDir says how container c declares that its mount vm holds
// SQLite data, or "": a `preflight run --data-dir DIR` in its command and
// args, or PREFLIGHT_DATA_DIR=DIR in its environment (each a
// comma-separated list, as preflight run reads them), DIR at, below or
// above the mount path (dataDirHeld). An image whose entrypoint is
// preflight run checks its data there, whatever the image; the catalogue
// need not know it.
func declaredDir(c kubeapi.Container, vm kubeapi.VolumeMount, env containerEnv) string {
	for _, d := range compose.PreflightRunDirs(slices.Concat(c.Command, c.Args)) {
		if d != "" && dataDirHeld(vm.MountPath, d) {
			return fmt.Sprintf("container %s runs preflight run --data-dir %s", c.Name, d)
		}
	}
	if v := env.values[dataDirEnv]; v != "" {
		for _, d := range strings.Split(v, ",") {
			if d = strings.TrimSpace(d); d != "" && dataDirHeld(vm.MountPath, d) {
				return fmt.Sprintf("container %s has %s=%s (%s)", c.Name, dataDirEnv, v, env.from[dataDirEnv])
			}
		}
	}
	return ""
}

// dataDirEnv is the variable preflight run reads its data directories
// from.
const dataDirEnv = "PREFLIGHT_DATA_DIR"

// source sets the mount's source, claim and storage from pod volume v.
func (a *Analysis) source(st *store, w *Workload, m *Mount, v *kubeapi.Volume) {
	switch {
	case v.PersistentVolumeClaim != nil:
		m.Source = "claim"
		m.ReadOnly = m.ReadOnly || v.PersistentVolumeClaim.ReadOnly
		name := v.PersistentVolumeClaim.ClaimName
		for i := range a.Claims {
			c := &a.Claims[i]
			if c.Template == w.Key() && c.Name == name && w.Kind == KindStatefulSet {
				m.Source, m.Claim = "template", i
				return
			}
		}
		m.Claim = a.claimIndex(st, name, w.Namespace)
	case v.Ephemeral != nil:
		m.Source = "ephemeral"
		m.Storage = kubeapi.Storage{Source: "ephemeral", Class: mounts.ClassUnknown}
	default:
		s, _ := kubeapi.ClassifyVolume(v)
		m.Storage = s
		m.Source = s.Source
		if m.Source == "" {
			m.Source = "other"
		}
	}
}

// claimIndex finds the claim a workload in namespace ns mounts as name
// (a claim without a namespace, as helm template prints them, matches
// any), adding one that is not in the input.
func (a *Analysis) claimIndex(st *store, name, ns string) int {
	for i := range a.Claims {
		c := &a.Claims[i]
		if c.Template == "" && c.Name == name && (c.Namespace == ns || c.Namespace == "" || ns == "") {
			return i
		}
	}
	c := Claim{Name: name, Namespace: ns, Object: -1}
	st.resolve(&c)
	a.Claims = append(a.Claims, c)
	return len(a.Claims) - 1
}
