package kube

import (
	"context"
	"path"
	"path/filepath"

	"github.com/preflight-sqlite/preflight/internal/kubeapi"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// mapPath finds the pod volume holding dp (the longest volumeMount
// mountPath above it in any container, else the kubelet volume directory
// in the mount table's root for dp), and resolves it to its claim, PV,
// StorageClass and storage.
func (p *prober) mapPath(ctx context.Context, pod *kubeapi.Pod, dp string) Path {
	before := p.nfail
	out := Path{Path: dp, Storage: kubeapi.Storage{Class: mounts.ClassUnknown}}
	cands := []string{path.Clean(dp)}
	if r, err := filepath.EvalSymlinks(dp); err == nil && r != cands[0] {
		cands = append(cands, r)
	}
	var best *kubeapi.VolumeMount
	for _, c := range pod.Spec.Containers {
		m := longestMount(c.VolumeMounts, cands)
		if m != nil && (best == nil || len(m.MountPath) > len(best.MountPath)) {
			best = m
		}
	}
	if p.opts.MountTable != nil {
		if m, err := p.opts.MountTable.Find(cands[len(cands)-1]); err == nil {
			if dir, uid, name, ok := kubeletVolume(m.Root); ok && uid == pod.Metadata.UID {
				out.KubeletPath = dir
				if best == nil {
					out.Volume = p.volumeForKubeletName(ctx, pod, name)
				}
			}
		}
	}
	if best != nil {
		out.Volume, out.MountPath, out.SubPath = best.Name, best.MountPath, best.SubPath
	}
	if out.Volume == "" {
		out.Sure = p.nfail == before
		return out
	}
	out.ReadOnly = true
	for _, c := range pod.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if m.Name == out.Volume && slicesHasPrefixMount(m, cands) {
				out.Containers = append(out.Containers, c.Name)
				out.ReadOnly = out.ReadOnly && m.ReadOnly
			}
		}
	}
	if len(out.Containers) == 0 {
		out.ReadOnly = false // seen only in the mount table: assume read-write
	}
	p.resolveVolume(ctx, pod, &out)
	out.Sure = p.nfail == before
	return out
}

// longestMount returns the mount with the longest mountPath at or above
// one of cands.
func longestMount(ms []kubeapi.VolumeMount, cands []string) *kubeapi.VolumeMount {
	var best *kubeapi.VolumeMount
	for i := range ms {
		if slicesHasPrefixMount(ms[i], cands) && (best == nil || len(ms[i].MountPath) > len(best.MountPath)) {
			best = &ms[i]
		}
	}
	return best
}

func slicesHasPrefixMount(m kubeapi.VolumeMount, cands []string) bool {
	for _, c := range cands {
		if m.MountPath != "" && within(c, m.MountPath) {
			return true
		}
	}
	return false
}

// volumeForKubeletName maps a kubelet volume directory name to the pod
// volume: the volume of that name (inline volumes), else the claim volume
// whose PV has that name.
func (p *prober) volumeForKubeletName(ctx context.Context, pod *kubeapi.Pod, name string) string {
	for _, v := range pod.Spec.Volumes {
		if v.Name == name {
			return v.Name
		}
	}
	for _, v := range pod.Spec.Volumes {
		if claim := claimName(pod, &v); claim != "" {
			var pvc kubeapi.PersistentVolumeClaim
			ns := pod.Metadata.Namespace
			err := p.c.get(ctx, "/api/v1/namespaces/"+esc(ns)+"/persistentvolumeclaims/"+esc(claim), nil, &pvc, "get", "persistentvolumeclaims", ns, claim)
			if err != nil {
				p.fail(err) // the volume may be this claim's: not sure
				continue
			}
			if pvc.Spec.VolumeName == name {
				return v.Name
			}
		}
	}
	return ""
}

// claimName is the claim a pod volume uses: persistentVolumeClaim's, or
// "<pod>-<volume>" for a generic ephemeral volume; "" for others.
func claimName(pod *kubeapi.Pod, v *kubeapi.Volume) string {
	switch {
	case v.PersistentVolumeClaim != nil:
		return v.PersistentVolumeClaim.ClaimName
	case v.Ephemeral != nil:
		return pod.Metadata.Name + "-" + v.Name
	}
	return ""
}

// resolveVolume fills out's claim, PV, StorageClass and Storage from the
// pod volume named out.Volume.
func (p *prober) resolveVolume(ctx context.Context, pod *kubeapi.Pod, out *Path) {
	var vol *kubeapi.Volume
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == out.Volume {
			vol = &pod.Spec.Volumes[i]
		}
	}
	if vol == nil {
		out.Storage.Class = mounts.ClassUnknown
		return
	}
	if s, ok := kubeapi.ClassifyVolume(vol); ok {
		out.Storage = s
		if vol.NFS != nil && vol.NFS.ReadOnly {
			out.ReadOnly = true
		}
		return
	}
	if vol.PersistentVolumeClaim != nil && vol.PersistentVolumeClaim.ReadOnly {
		out.ReadOnly = true
	}
	out.Claim = claimName(pod, vol)
	out.Storage.Class = mounts.ClassUnknown
	ns := pod.Metadata.Namespace
	var pvc kubeapi.PersistentVolumeClaim
	if err := p.c.get(ctx, "/api/v1/namespaces/"+esc(ns)+"/persistentvolumeclaims/"+esc(out.Claim), nil, &pvc, "get", "persistentvolumeclaims", ns, out.Claim); err != nil {
		p.fail(err)
		return
	}
	out.AccessModes = pvc.Status.AccessModes
	if len(out.AccessModes) == 0 {
		out.AccessModes = pvc.Spec.AccessModes
	}
	out.PV = pvc.Spec.VolumeName
	if pvc.Spec.StorageClassName != nil {
		out.StorageClass = *pvc.Spec.StorageClassName
	}
	if out.PV != "" {
		var pv kubeapi.PersistentVolume
		err := p.c.get(ctx, "/api/v1/persistentvolumes/"+esc(out.PV), nil, &pv, "get", "persistentvolumes", "", out.PV)
		if err == nil {
			out.Storage = kubeapi.ClassifyPV(&pv)
			if out.StorageClass == "" {
				out.StorageClass = pv.Spec.StorageClassName
			}
			return
		}
		p.fail(err)
	}
	if out.StorageClass != "" {
		var sc kubeapi.StorageClass
		if err := p.c.get(ctx, "/apis/storage.k8s.io/v1/storageclasses/"+esc(out.StorageClass), nil, &sc, "get", "storageclasses.storage.k8s.io", "", out.StorageClass); err != nil {
			p.fail(err)
			return
		}
		out.Storage = kubeapi.ClassifyStorageClass(&sc, out.AccessModes)
	}
}
