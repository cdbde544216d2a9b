package kubeapi

import (
	"path"
	"slices"
	"strings"

	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// Storage is what a pod volume is backed by, as far as the objects tell:
// the source kind ("persistentVolumeClaim" resolved to its PV's source:
// "nfs", "csi", "hostPath", "local"; or "emptyDir", "nfs", "csi" inline),
// the CSI driver or provisioner, the NFS export or CSI volume handle (the
// identity two PVs share when they are one volume), and the class.
type Storage struct {
	// Source is the volume source: "nfs", "csi", "hostPath", "local",
	// "emptyDir", "ephemeral", or "" when nothing could be resolved.
	Source string `json:"source,omitempty"`
	// Driver is the CSI driver (or, for an unbound claim, the
	// StorageClass provisioner).
	Driver string `json:"driver,omitempty"`
	// NFSServer and NFSPath are the export of an nfs source.
	NFSServer string `json:"nfs_server,omitempty"`
	NFSPath   string `json:"nfs_path,omitempty"`
	// VolumeHandle is a CSI PV's volume handle.
	VolumeHandle string `json:"volume_handle,omitempty"`
	// Class is the filesystem class; mounts.ClassUnknown for a driver not
	// in the table (never treated as safe).
	Class mounts.Class `json:"class"`
	// MountOptions are a PV's spec.mountOptions (nolock, nobrl, ...).
	MountOptions []string `json:"mount_options,omitempty"`
}

// Network CSI drivers and provisioners: files served by another machine,
// whose POSIX locks (where there are any) are the server's, not this
// kernel's.
var networkDrivers = []string{
	"nfs.csi.k8s.io",
	"efs.csi.aws.com",
	"file.csi.azure.com",
	"blob.csi.azure.com",
	"smb.csi.k8s.io",
	"cephfs.csi.ceph.com",
	"filestore.csi.storage.gke.io",
	"gcsfuse.csi.storage.gke.io",
	"kubernetes.io/azure-file",
	"kubernetes.io/cephfs",
	"kubernetes.io/glusterfs",
	"cluster.local/nfs-subdir-external-provisioner",
	"k8s-sigs.io/nfs-subdir-external-provisioner",
	"nfs.openebs.io",
}

// Block drivers: a disk attached to one node at a time and formatted with
// a filesystem in that node's kernel (ReadWriteOnce).
var blockDrivers = []string{
	"ebs.csi.aws.com",
	"pd.csi.storage.gke.io",
	"disk.csi.azure.com",
	"rbd.csi.ceph.com",
	"cinder.csi.openstack.org",
	"topolvm.io",
	"local.csi.openebs.io",
	"kubernetes.io/aws-ebs",
	"kubernetes.io/gce-pd",
	"kubernetes.io/azure-disk",
	"rancher.io/local-path",
}

// Longhorn's CSI driver: a block device per node for ReadWriteOnce, an
// NFS share-manager for ReadWriteMany.
const longhornDriver = "driver.longhorn.io"

// ClassifyDriver classifies a CSI driver or StorageClass provisioner given
// the access modes of the claim or PV (Longhorn serves ReadWriteMany over
// NFS). An unknown driver is mounts.ClassUnknown.
func ClassifyDriver(driver string, accessModes []string) mounts.Class {
	switch {
	case driver == longhornDriver:
		if slices.Contains(accessModes, ReadWriteMany) {
			return mounts.ClassNetwork
		}
		return mounts.ClassLocal
	case slices.Contains(networkDrivers, driver):
		return mounts.ClassNetwork
	case slices.Contains(blockDrivers, driver):
		return mounts.ClassLocal
	}
	return mounts.ClassUnknown
}

// ClassifyPV classifies a PersistentVolume by its source; a PV without a
// source this package knows is mounts.ClassUnknown.
func ClassifyPV(pv *PersistentVolume) Storage {
	st := classifyPV(pv.Spec)
	st.MountOptions = pv.Spec.MountOptions
	return st
}

func classifyPV(s PersistentVolumeSpec) Storage {
	switch {
	case s.CephFS != nil:
		return Storage{Source: "cephfs", Class: mounts.ClassNetwork}
	case s.Glusterfs != nil:
		return Storage{Source: "glusterfs", Class: mounts.ClassNetwork}
	case s.AzureFile != nil:
		return Storage{Source: "azureFile", Class: mounts.ClassNetwork}
	case s.NFS != nil:
		return Storage{Source: "nfs", NFSServer: s.NFS.Server, NFSPath: s.NFS.Path, Class: mounts.ClassNetwork}
	case s.CSI != nil:
		st := Storage{Source: "csi", Driver: s.CSI.Driver, VolumeHandle: s.CSI.VolumeHandle,
			Class: ClassifyDriver(s.CSI.Driver, s.AccessModes)}
		if s.CSI.Driver == "nfs.csi.k8s.io" {
			st.NFSServer, st.NFSPath = csiNFS(s.CSI.VolumeAttributes)
		}
		return st
	case s.HostPath != nil:
		return Storage{Source: "hostPath", Class: mounts.ClassLocal}
	case s.Local != nil:
		return Storage{Source: "local", Class: mounts.ClassLocal}
	}
	return Storage{Class: mounts.ClassUnknown}
}

// ClassifyStorageClass classifies a claim that is not bound yet (or whose
// PV cannot be read) by its StorageClass's provisioner.
func ClassifyStorageClass(sc *StorageClass, accessModes []string) Storage {
	return Storage{Driver: sc.Provisioner, Class: ClassifyDriver(sc.Provisioner, accessModes)}
}

// ClassifyVolume classifies a pod volume that is not a claim: inline nfs
// and csi, hostPath (the node's directory: local, as the mount table will
// confirm or contradict), emptyDir (the node's disk; medium Memory is a
// tmpfs, ephemeral), one of OtherSources (its name; network for
// azureFile, cephfs, glusterfs and quobyte, else unknown). For persistentVolumeClaim and ephemeral volumes ok is
// false: resolve the claim instead.
func ClassifyVolume(v *Volume) (s Storage, ok bool) {
	switch {
	case v.PersistentVolumeClaim != nil, v.Ephemeral != nil:
		return Storage{}, false
	case v.NFS != nil:
		return Storage{Source: "nfs", NFSServer: v.NFS.Server, NFSPath: v.NFS.Path, Class: mounts.ClassNetwork}, true
	case v.CSI != nil:
		st := Storage{Source: "csi", Driver: v.CSI.Driver, Class: ClassifyDriver(v.CSI.Driver, nil)}
		if v.CSI.Driver == "nfs.csi.k8s.io" {
			st.NFSServer, st.NFSPath = csiNFS(v.CSI.VolumeAttributes)
		}
		return st, true
	case v.HostPath != nil:
		return Storage{Source: "hostPath", Class: mounts.ClassLocal}, true
	case v.EmptyDir != nil:
		if v.EmptyDir.Medium == "Memory" {
			return Storage{Source: "emptyDir", Class: mounts.ClassEphemeral}, true
		}
		return Storage{Source: "emptyDir", Class: mounts.ClassLocal}, true
	case slices.Contains(networkSources, v.Other):
		return Storage{Source: v.Other, Class: mounts.ClassNetwork}, true
	case v.Other != "":
		return Storage{Source: v.Other, Class: mounts.ClassUnknown}, true
	}
	return Storage{Class: mounts.ClassUnknown}, true
}

// SameBacking reports whether two storages can hold the same files: the
// same NFS server (host names compared without case or a trailing dot; an
// address and a name for one host are not matched) with one export path
// equal to or inside the other (path.Clean'd: a pod that mounts /export
// writes /export/app), or the same CSI driver and volume handle.
func SameBacking(a, b Storage) bool {
	if a.NFSServer != "" && nfsHost(a.NFSServer) == nfsHost(b.NFSServer) && nested(cleanExport(a.NFSPath), cleanExport(b.NFSPath)) {
		return true
	}
	return a.VolumeHandle != "" && a.Driver == b.Driver && a.VolumeHandle == b.VolumeHandle
}

func nfsHost(h string) string { return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".") }

func cleanExport(p string) string { return path.Clean("/" + strings.TrimSpace(p)) }

// nested reports whether one clean absolute path is the other or inside it.
func nested(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return a == b || a == "/" || strings.HasPrefix(b, a+"/")
}

// csiNFS is the export of a PV of the CSI NFS driver (nfs.csi.k8s.io):
// its volumeAttributes server, share and subdir. Its volume handle is
// unique per PV, so two static PVs of one share differ there.
func csiNFS(attrs map[string]string) (server, export string) {
	server, export = attrs["server"], attrs["share"]
	if server == "" || export == "" {
		return "", ""
	}
	if sub := attrs["subdir"]; sub != "" && !strings.Contains(sub, "${") {
		export += "/" + sub
	}
	return server, export
}
