package mounts

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
)

// Mount is a classified mount: the facts from the table, the class of its
// filesystem and why. It is meant to be reported as is (text or JSON).
type Mount struct {
	Mountpoint string `json:"mountpoint"`
	// Root is the directory of the source filesystem mounted here ("/"
	// for a whole filesystem); empty when the table format does not show it.
	Root   string `json:"root,omitempty"`
	FSType string `json:"fstype"`
	Source string `json:"source"`
	// Options are the per-mount options, then the per-superblock options
	// that are not already listed, comma-joined, as written in the table.
	Options string `json:"options"`
	Class   Class  `json:"class"`
	// Platform names the product behind a cross-VM share or special mount
	// ("Docker Desktop", "OrbStack", "Lima or Colima", "Podman machine",
	// "LXD VM", "WSL2 drive", "Unraid user share", "AWS EFS"...), only when
	// the fstype, source or options show it; empty otherwise.
	Platform string `json:"platform,omitempty"`
	// Reason is one human sentence naming the fstype and source and what
	// the class means for SQLite's locks and shared memory.
	Reason string `json:"reason"`
	// KnownLosses is set for filesystems on which real WAL database losses
	// were reported (fuse.shfs, fuse.mergerfs).
	KnownLosses bool `json:"known_wal_losses,omitempty"`
	// NoLocks is set when the options say byte-range (POSIX) locks are not
	// sent to the server: nobrl, nolock, local_lock=all or local_lock=posix.
	NoLocks bool `json:"no_byte_range_locks,omitempty"`
	// Statfs is what statfs(2) said about the path on this machine, when
	// it was asked (never for a saved table): the second witness.
	Statfs *Witness `json:"statfs,omitempty"`
	// Soft is set for an NFS mount (nfs, nfs4) with the soft or softerr
	// option: after its retries a request fails with an I/O error (EIO,
	// ETIMEDOUT) instead of waiting for the server, and nfs(5) warns that
	// this "can cause silent data corruption in certain cases".
	Soft bool `json:"nfs_soft,omitempty"`
}

var (
	crossVMText = "shares the host directory into its VM; POSIX locks and the -shm shared memory are not coherent across the VM boundary"

	networkTypes = map[string]bool{
		"nfs": true, "nfs4": true, "cifs": true, "smb3": true, "smbfs": true,
		"ceph": true, "fuse.ceph-fuse": true, "fuse.glusterfs": true, "glusterfs": true,
		"lustre": true, "gpfs": true, "beegfs": true, "afs": true, "fuse.sshfs": true,
		"fuse.s3fs": true, "fuse.gcsfuse": true, "fuse.rclone": true, "fuse.juicefs": true,
		"fuse.goofys": true, "fuse.blobfuse2": true,
	}
	localTypes = map[string]bool{
		"ext2": true, "ext3": true, "ext4": true, "xfs": true, "btrfs": true, "zfs": true,
		"f2fs": true, "bcachefs": true, "jfs": true, "reiserfs": true,
	}
	// Docker Desktop names its virtiofs shares virtiofs0, virtiofs1...
	dockerDesktopTag = regexp.MustCompile(`^virtiofs[0-9]+$`)
	// Lima (and Colima on top of it) names them mount0, mount1...
	limaTag = regexp.MustCompile(`^mount[0-9]+$`)
	// Podman machine on macOS tags shares with 36 hex digits of a hash of
	// the host path.
	podmanTag = regexp.MustCompile(`^[0-9a-f]{36}$`)
	// A Windows drive as a 9p source: C:\ or C:
	windowsDrive = regexp.MustCompile(`^[A-Za-z]:\\?$`)
)

// Classify classifies the filesystem of one mount by its fstype, with the
// source, options and mountpoint as hints. It is pure: it reads nothing
// but m.
//
//   - sandbox: 9p with gVisor's gofer options (trans=fd with any of
//     disable_fifo_open, overlayfs_stale_read, directfs, dcache=,
//     cache=remote_revalidating, which Linux's v9fs does not have),
//     except at "/", where it is the sandbox's root: ephemeral.
//   - cross-vm: virtiofs and virtiofs.*, fuse.virtiofs, other 9p, fakeowner,
//     fuse.grpcfuse, osxfs, fuse.osxfs, vboxsf, vmhgfs, fuse.vmhgfs-fuse,
//     prl_fs, fuse.prl_fsd, drvfs, and fuse.sshfs whose source starts
//     with ':' (Lima's reverse sshfs).
//   - network: nfs, nfs4 (a 127.0.0.1:/ source is EFS over a TLS tunnel,
//     still NFS), cifs, smb3, smbfs, ceph, glusterfs, lustre, gpfs, beegfs,
//     afs, other fuse.sshfs, and the FUSE clients of network and object
//     stores (ceph-fuse, glusterfs, s3fs, gcsfuse, rclone, juicefs, goofys,
//     blobfuse2).
//   - fuse: fuse.shfs and fuse.mergerfs (with KnownLosses), bare fuse,
//     fuseblk and every other fuse.* except LiteFS (source or subtype
//     "litefs"), which is local.
//   - ephemeral: overlay mounted at "/" (a container's writable layer),
//     tmpfs, ramfs.
//   - local: ext2, ext3, ext4, xfs, btrfs, zfs, f2fs, bcachefs, jfs,
//     reiserfs.
//   - overlay not at "/": unknown here; [Table.ClassifyMount] classifies
//     it by the mount that holds its upper directory.
//   - unknown: everything else, and a mount whose table line could not be
//     read ([FSTypeUnreadable]).
func Classify(m *mountinfo.Info) Mount {
	out := Mount{
		Mountpoint: m.Mountpoint,
		Root:       m.Root,
		FSType:     m.FSType,
		Source:     m.Source,
		Options:    joinOptions(m.Options, m.VFSOptions),
	}
	fstype := strings.ToLower(m.FSType)
	out.NoLocks = len(LocalLockOptions(out.Options)) > 0
	out.Soft = (fstype == "nfs" || fstype == "nfs4") && hasOption(out.Options, "soft", "softerr")
	switch {
	case m.FSType == FSTypeUnreadable:
		out.Class = ClassUnknown
		out.Reason = "the mount table line for " + m.Mountpoint + " could not be read (longer than 1 MiB, or malformed), so the filesystem mounted there is not known"
		return out
	case fstype == "9p" && gvisorGofer(out.Options):
		return gvisorMount(m, out)
	}
	// what is the explanation after "FSTYPE mount from SOURCE: ".
	what, ok := classifyCrossVM(&out, fstype)
	if !ok {
		what = classifyOther(&out, fstype, m.Mountpoint)
	}
	if what == "" { // cross-VM shares named by their product
		who := out.Platform
		if who == "" {
			who = "the host"
		}
		what = who + " " + crossVMText
	}
	out.Reason = describe(m.FSType, out.Source) + ": " + what
	return out
}

// classifyCrossVM sets out's class (and platform) when fstype (lower
// case) is one of the cross-VM shares of Classify (gVisor's 9p aside),
// and returns the explanation for its reason ("" for a share named only
// by its product) and true; otherwise it returns false and leaves out
// alone.
func classifyCrossVM(out *Mount, fstype string) (what string, ok bool) {
	src := out.Source
	switch {
	case fstype == "fakeowner":
		out.Class, out.Platform = ClassCrossVM, "Docker Desktop"
	case fstype == "virtiofs" || strings.HasPrefix(fstype, "virtiofs.") || fstype == "fuse.virtiofs":
		out.Class = ClassCrossVM
		tag := src
		if sub, ok := strings.CutPrefix(fstype, "virtiofs."); ok {
			tag = sub
		}
		out.Platform = virtiofsPlatform(tag)
		if out.Platform == "" && tag != src {
			out.Platform = virtiofsPlatform(src)
		}
	case fstype == "9p":
		out.Class = ClassCrossVM
		if hasOption(out.Options, "aname=drvfs") || strings.EqualFold(src, "drvfs") || windowsDrive.MatchString(src) {
			out.Platform = "WSL2 drive"
			what = "WSL2 shares the Windows drive into its VM over 9p; POSIX locks and the -shm shared memory are not coherent with Windows processes"
		} else {
			what = "a 9p (virtio or network) share of a host directory into a VM; POSIX locks and the -shm shared memory are not coherent across the VM boundary"
		}
	case fstype == "drvfs":
		out.Class, out.Platform = ClassCrossVM, "WSL drive"
		what = "WSL maps a Windows drive into Linux; POSIX locks and the -shm shared memory are not coherent with Windows processes"
	case fstype == "fuse.grpcfuse" || fstype == "osxfs" || fstype == "fuse.osxfs":
		out.Class, out.Platform = ClassCrossVM, "Docker Desktop"
	case fstype == "vboxsf":
		out.Class, out.Platform = ClassCrossVM, "VirtualBox"
	case fstype == "vmhgfs" || fstype == "fuse.vmhgfs-fuse":
		out.Class, out.Platform = ClassCrossVM, "VMware"
	case fstype == "prl_fs" || fstype == "fuse.prl_fsd":
		out.Class, out.Platform = ClassCrossVM, "Parallels"
	case fstype == "fuse.sshfs" && strings.HasPrefix(src, ":"):
		out.Class, out.Platform = ClassCrossVM, "Lima or Colima"
		what = "the VM mounts a host directory by reverse sshfs (as Lima and Colima do); POSIX locks are not forwarded over SFTP and the -shm shared memory is not coherent across the VM boundary"
	default:
		return "", false
	}
	return what, true
}

// classifyOther sets out's class for every fstype (lower case) that is not
// a cross-VM share: network, FUSE, ephemeral, local or unknown, by the
// rules of Classify, and returns the explanation for its reason.
func classifyOther(out *Mount, fstype, mountpoint string) string {
	src := out.Source
	switch {
	case networkTypes[fstype]:
		out.Class = ClassNetwork
		out.Platform = networkPlatform(fstype, src, out.Options)
		what := "a network filesystem; SQLite's WAL index is shared memory that other clients cannot see, so WAL is only safe from one host, and locks depend on the server"
		if out.NoLocks {
			what += "; the options keep byte-range locks local to this client (nobrl, nolock or local_lock), so other clients never see them"
		}
		return what
	case isFUSE(fstype) && (src == "litefs" || fstype == "fuse.litefs"):
		out.Class = ClassLocal
		return "LiteFS, a FUSE filesystem built for SQLite that handles the journal, WAL and locks itself"
	case fstype == "fuse.shfs" || fstype == "fuse.mergerfs":
		out.Class, out.KnownLosses = ClassFUSE, true
		if fstype == "fuse.shfs" {
			out.Platform = "Unraid user share"
		}
		return "a FUSE union filesystem that spreads files over several disks; SQLite databases in WAL mode have been lost on it"
	case fstype == "fuse":
		out.Class = ClassFUSE
		return "FUSE with no subtype (Google's Cloud Storage FUSE CSI driver mounts this way); lock and shared-memory behaviour depend on the daemon"
	case isFUSE(fstype):
		out.Class = ClassFUSE
		return "a FUSE filesystem; lock and shared-memory behaviour depend on the daemon"
	case fstype == "overlay" && mountpoint == "/":
		out.Class = ClassEphemeral
		return "the container's writable layer; locks and shared memory work, but the data goes when the container is removed"
	case fstype == "overlay":
		// As safe as the filesystem under its upper directory, which only
		// the table shows (Table.ClassifyMount).
		out.Class = ClassUnknown
		return "an overlay filesystem (not a container's root), as safe for WAL as the filesystem under its upper directory, which is not known here"
	case fstype == "tmpfs" || fstype == "ramfs":
		out.Class = ClassEphemeral
		return "memory-backed; locks and shared memory work, but the data goes at unmount or reboot"
	case localTypes[fstype]:
		out.Class = ClassLocal
		return "a disk filesystem in this kernel; POSIX locks and the -shm shared memory work"
	}
	out.Class = ClassUnknown
	return "a filesystem type not in the classification table; its lock and shared-memory behaviour is not known"
}

func describe(fstype, src string) string {
	if src == "" || src == "none" {
		return fstype + " mount (no source)"
	}
	return fstype + " mount from " + src
}

func isFUSE(fstype string) bool {
	return fstype == "fuse" || fstype == "fuseblk" || strings.HasPrefix(fstype, "fuse.")
}

// virtiofsPlatform names the product from a virtiofs tag.
func virtiofsPlatform(tag string) string {
	switch {
	case dockerDesktopTag.MatchString(tag):
		return "Docker Desktop"
	case tag == "mac":
		return "OrbStack"
	case limaTag.MatchString(tag):
		return "Lima or Colima"
	case podmanTag.MatchString(tag):
		return "Podman machine"
	case tag == "lxd_lxc":
		return "LXD VM"
	case tag == "com.apple.virtio-fs.automount":
		return "Apple Virtualization"
	}
	return ""
}

// networkPlatform names a managed service from the source or options.
func networkPlatform(fstype, src, opts string) string {
	host, _, _ := strings.Cut(src, ":")
	switch {
	case (fstype == "nfs" || fstype == "nfs4") && strings.Contains(host, ".efs.") && strings.HasSuffix(host, ".amazonaws.com"):
		return "AWS EFS"
	case fstype == "nfs4" && src == "127.0.0.1:/" && efsTLSPort(opts):
		// efs-utils tunnels NFS through stunnel on a local port 20049-21049.
		return "AWS EFS"
	case (fstype == "cifs" || fstype == "smb3") && strings.Contains(strings.ToLower(src), ".file.core.windows.net/"):
		return "Azure Files"
	case fstype == "cifs" && strings.HasPrefix(src, "//10.0.75.1/"):
		return "Docker Desktop (Hyper-V)"
	}
	return ""
}

func efsTLSPort(opts string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if v, ok := strings.CutPrefix(o, "port="); ok {
			n, err := strconv.Atoi(v)
			return err == nil && n >= 20049 && n <= 21049
		}
	}
	return false
}

// hasOption reports whether opts holds any of names. Options are split on
// ',' and each option again on ';' (9p's aname=drvfs;path=C:\;... is one
// comma-separated option).
// localLockOptions are the mount options that keep byte-range (POSIX)
// locks on the client: nobrl (cifs(5)), nolock and local_lock=all or
// local_lock=posix (nfs(5)).
var localLockOptions = []string{"nobrl", "nolock", "local_lock=all", "local_lock=posix"}

// LocalLockOptions lists, in the order written, the options of opts (a
// comma-joined option string, as in Mount.Options) that keep byte-range
// locks on this client, so that other clients never see them; nil when
// there are none (Mount.NoLocks is false).
func LocalLockOptions(opts string) []string {
	var out []string
	for o := range strings.SplitSeq(opts, ",") {
		for sub := range strings.SplitSeq(o, ";") {
			if slices.Contains(localLockOptions, sub) {
				out = append(out, sub)
			}
		}
	}
	return out
}

func hasOption(opts string, names ...string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		for sub := range strings.SplitSeq(o, ";") {
			for _, n := range names {
				if sub == n {
					return true
				}
			}
		}
	}
	return false
}

// joinOptions appends the options of b that a does not already hold.
func joinOptions(a, b string) string {
	if b == "" {
		return a
	}
	if a == "" {
		return b
	}
	seen := make(map[string]bool)
	parts := strings.Split(a, ",")
	for _, o := range parts {
		seen[o] = true
	}
	for o := range strings.SplitSeq(b, ",") {
		if !seen[o] {
			seen[o] = true
			parts = append(parts, o)
		}
	}
	return strings.Join(parts, ",")
}

// gvisorGofer reports whether 9p mount options are gVisor's gofer options
// (runsc's sentry mounts host directories with trans=fd and options of
// its own; Linux's v9fs has trans=fd but none of those).
func gvisorGofer(opts string) bool {
	if !hasOption(opts, "trans=fd") {
		return false
	}
	if hasOption(opts, "disable_fifo_open", "overlayfs_stale_read", "directfs", "cache=remote_revalidating") {
		return true
	}
	for o := range strings.SplitSeq(opts, ",") {
		if strings.HasPrefix(o, "dcache=") {
			return true
		}
	}
	return false
}

// gvisorMount finishes out, the classification of m, as gVisor's gofer
// mount: sandbox, or ephemeral for the sandbox's root.
func gvisorMount(m *mountinfo.Info, out Mount) Mount {
	out.Class, out.Platform = ClassSandbox, "gVisor"
	what := "gVisor's gofer mount of a host directory (gVisor names these 9p); the sandbox's own kernel serves every process inside it, so locks and the -shm shared memory are coherent among them, but not with the host or another sandbox that opens the same files"
	if m.Mountpoint == "/" {
		out.Class = ClassEphemeral
		what = "the root filesystem of a gVisor sandbox (gVisor names it 9p): the container's own files, whose changes go when the container is removed"
	}
	out.KnownLosses = false
	out.Reason = describe(m.FSType, m.Source) + ": " + what
	return out
}

// IsGVisorBanner reports whether a /proc/version banner is gVisor's
// ("Linux version 4.19.0-gvisor #1 SMP ..."): a kernel release ending in
// "-gvisor".
func IsGVisorBanner(banner string) bool {
	f := strings.Fields(banner)
	return len(f) >= 3 && f[0] == "Linux" && f[1] == "version" && strings.HasSuffix(f[2], "-gvisor")
}
