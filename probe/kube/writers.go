package kube

import (
	"context"
	"fmt"
	"sort"

	"github.com/preflight-sqlite/preflight/internal/kubeapi"
)

// ownerOf resolves our pod's controller: a ReplicaSet to its Deployment
// (replicas, strategy, maxSurge), a StatefulSet (replicas, update
// strategy, claim templates), a bare ReplicaSet, DaemonSet or Job by kind
// and name. Nil for a bare pod; a read that fails is recorded and the
// owner kept with Replicas -1.
func (p *prober) ownerOf(ctx context.Context, pod *kubeapi.Pod) *Owner {
	ref, ok := pod.Metadata.ControllerRef()
	if !ok {
		return nil
	}
	ns := pod.Metadata.Namespace
	o := &Owner{Kind: ref.Kind, Name: ref.Name, Replicas: -1}
	switch ref.Kind {
	case "ReplicaSet":
		rs, err := p.replicaSet(ctx, ns, ref.Name)
		if err != nil {
			if _, seen := p.owners[ns+"/ReplicaSet/"+ref.Name]; !seen {
				p.fail(err)
			}
			return o
		}
		o.Replicas = kubeapi.ReplicaCount(rs.Spec.Replicas)
		dref, ok := rs.Metadata.ControllerRef()
		if !ok || dref.Kind != "Deployment" {
			return o
		}
		o = &Owner{Kind: "Deployment", Name: dref.Name, Replicas: -1}
		var d kubeapi.Deployment
		if err := p.c.get(ctx, "/apis/apps/v1/namespaces/"+esc(ns)+"/deployments/"+esc(dref.Name), nil, &d, "get", "deployments.apps", ns, dref.Name); err != nil {
			p.fail(err)
			return o
		}
		o.Replicas, o.Annotations = kubeapi.ReplicaCount(d.Spec.Replicas), d.Metadata.Annotations
		o.Strategy, o.MaxSurge = d.Spec.Strategy.Type, "25%"
		if o.Strategy == "" {
			o.Strategy = kubeapi.StrategyRollingUpdate
		}
		if ru := d.Spec.Strategy.RollingUpdate; ru != nil && ru.MaxSurge != nil {
			o.MaxSurge = fmt.Sprint(ru.MaxSurge.Int)
			if ru.MaxSurge.IsString {
				o.MaxSurge = ru.MaxSurge.Str
			}
		}
		if o.Strategy == kubeapi.StrategyRecreate {
			o.MaxSurge = ""
		}
		o.Surges = d.Spec.Strategy.SurgesNewPod()
	case "StatefulSet":
		var s kubeapi.StatefulSet
		if err := p.c.get(ctx, "/apis/apps/v1/namespaces/"+esc(ns)+"/statefulsets/"+esc(ref.Name), nil, &s, "get", "statefulsets.apps", ns, ref.Name); err != nil {
			p.fail(err)
			return o
		}
		o.Replicas, o.Strategy = kubeapi.ReplicaCount(s.Spec.Replicas), s.Spec.UpdateStrategy.Type
		for _, t := range s.Spec.VolumeClaimTemplates {
			o.ClaimTemplates = append(o.ClaimTemplates, t.Metadata.Name)
		}
	}
	return o
}

// sharer is one claim (namespace/name) or inline export that is the same
// storage as a data path, and how.
type sharer struct {
	path     int
	relation string
}

// findWriters fills each path's Writers: pods that mount the same claim,
// a claim bound to another PV with the same NFS export or CSI volume
// handle (PVs listed cluster-wide), or an inline nfs volume of the same
// export in our namespace, read-write. Lists are paged; only matches are
// kept.
func (p *prober) findWriters(ctx context.Context, self *kubeapi.Pod) {
	ns := self.Metadata.Namespace
	claims := map[string]map[string][]sharer{} // namespace -> claim -> sharers
	add := func(cns, claim string, s sharer) {
		if claims[cns] == nil {
			claims[cns] = map[string][]sharer{}
		}
		claims[cns][claim] = append(claims[cns][claim], s)
	}
	backed := false
	for i, pp := range p.res.Paths {
		if pp.Claim != "" {
			add(ns, pp.Claim, sharer{i, "same claim " + pp.Claim})
		}
		backed = backed || pp.Storage.NFSServer != "" || pp.Storage.VolumeHandle != ""
	}
	if backed {
		err := list(ctx, p.c, "/api/v1/persistentvolumes", "persistentvolumes", "", func(pv *kubeapi.PersistentVolume) {
			if pv.Spec.ClaimRef == nil {
				return
			}
			st := kubeapi.ClassifyPV(pv)
			for i, pp := range p.res.Paths {
				if pv.Metadata.Name != pp.PV && kubeapi.SameBacking(st, pp.Storage) {
					add(pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name, sharer{i, backingRelation(pv.Metadata.Name, st)})
				}
			}
		})
		if err != nil {
			p.fail(err)
			p.unsure(func(pp Path) bool { return pp.Storage.NFSServer != "" || pp.Storage.VolumeHandle != "" })
		}
	}
	namespaces := []string{ns}
	for cns := range claims {
		if cns != ns {
			namespaces = append(namespaces, cns)
		}
	}
	sort.Strings(namespaces[1:])
	for _, cns := range namespaces {
		if cns != ns && len(claims[cns]) == 0 {
			continue
		}
		if cns == ns && len(claims[cns]) == 0 && !backed {
			continue // no claim and no export: no other pod can share it
		}
		err := list(ctx, p.c, "/api/v1/namespaces/"+esc(cns)+"/pods", "pods", cns, func(pod *kubeapi.Pod) {
			p.matchPod(ctx, self, pod, claims[cns])
		})
		if err != nil {
			p.fail(err)
			p.unsure(func(pp Path) bool { return pp.Volume != "" })
		}
	}
}

// unsure marks the paths that which selects as not sure.
func (p *prober) unsure(which func(Path) bool) {
	for i := range p.res.Paths {
		if which(p.res.Paths[i]) {
			p.res.Paths[i].Sure = false
		}
	}
}

func backingRelation(pv string, s kubeapi.Storage) string {
	if s.NFSServer != "" {
		return fmt.Sprintf("PV %s with the same NFS export %s:%s", pv, s.NFSServer, s.NFSPath)
	}
	return fmt.Sprintf("PV %s with the same CSI volume handle %s (%s)", pv, s.VolumeHandle, s.Driver)
}

// matchPod adds pod to the Writers of each path whose storage it mounts
// read-write (our own pod and finished pods excepted).
func (p *prober) matchPod(ctx context.Context, self, pod *kubeapi.Pod, claims map[string][]sharer) {
	if pod.Metadata.UID == self.Metadata.UID && pod.Metadata.Namespace == self.Metadata.Namespace && pod.Metadata.Name == self.Metadata.Name {
		return
	}
	if pod.Status.Phase == "Succeeded" || pod.Status.Phase == "Failed" {
		return
	}
	for vi := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[vi]
		var hits []sharer
		if c := claimName(pod, v); c != "" && (v.PersistentVolumeClaim == nil || !v.PersistentVolumeClaim.ReadOnly) {
			hits = claims[c]
		} else if s, ok := kubeapi.ClassifyVolume(v); ok && s.NFSServer != "" && !inlineReadOnly(v) {
			for i, pp := range p.res.Paths {
				if kubeapi.SameBacking(s, pp.Storage) {
					hits = append(hits, sharer{i, fmt.Sprintf("inline %s volume %s with the same export %s:%s", s.Source, v.Name, s.NFSServer, s.NFSPath)})
				}
			}
		}
		if len(hits) == 0 {
			continue
		}
		rw := writingContainers(pod, v.Name)
		if len(rw) == 0 {
			continue
		}
		w := Writer{Pod: p.describe(ctx, pod), Containers: rw}
		w.SameNode = w.Node != "" && w.Node == self.Spec.NodeName
		for _, h := range hits {
			w.Relation = h.relation
			p.res.Paths[h.path].Writers = append(p.res.Paths[h.path].Writers, w)
		}
	}
}

// inlineReadOnly reports whether an inline nfs or csi volume is mounted
// read-only whatever its volumeMounts say.
func inlineReadOnly(v *kubeapi.Volume) bool {
	return v.NFS != nil && v.NFS.ReadOnly || v.CSI != nil && v.CSI.ReadOnly != nil && *v.CSI.ReadOnly
}

// writingContainers are the containers (init containers included) that
// mount volume read-write.
func writingContainers(pod *kubeapi.Pod, volume string) []string {
	var out []string
	for _, cs := range [][]kubeapi.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, m := range c.VolumeMounts {
				if m.Name == volume && !m.ReadOnly {
					out = append(out, c.Name)
					break
				}
			}
		}
	}
	return out
}
