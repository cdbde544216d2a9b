package mounts_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/moby/sys/mountinfo"

	"github.com/preflight-sqlite/preflight/probe/mounts"
)

func parseString(t *testing.T, s string) *mounts.Table {
	t.Helper()
	tab, err := mounts.Parse(strings.NewReader(s))
	if err != nil {
		if errors.Is(err, mounts.ErrNotSupported) {
			t.Skipf("Parse: %v", err)
		}
		t.Fatalf("Parse error: %v", err)
	}
	return tab
}

func TestClassifyFSTypes(t *testing.T) {
	tests := []struct {
		fstype, source, opts, mp string
		class                    mounts.Class
		platform                 string
	}{
		{"virtiofs", "virtiofs0", "rw", "/work", mounts.ClassCrossVM, "Docker Desktop"},
		{"virtiofs", "mac", "rw", "/work", mounts.ClassCrossVM, "OrbStack"},
		{"virtiofs", "mount0", "rw", "/work", mounts.ClassCrossVM, "Lima or Colima"},
		{"virtiofs", "a2a0ee2c717462feb1de2f5afd59de5fd2d8", "rw", "/work", mounts.ClassCrossVM, "Podman machine"},
		{"virtiofs", "lxd_lxc", "rw", "/work", mounts.ClassCrossVM, "LXD VM"},
		{"virtiofs", "com.apple.virtio-fs.automount", "rw", "/work", mounts.ClassCrossVM, "Apple Virtualization"},
		{"virtiofs", "myshare", "rw", "/work", mounts.ClassCrossVM, ""},
		{"virtiofs.virtiofs0", "/run/host_virtiofs/Users", "rw", "/run/host_mark/Users", mounts.ClassCrossVM, "Docker Desktop"},
		{"9p", "drvfs", "rw,aname=drvfs;path=C:\\;uid=0;gid=0;metadata,mmap,trans=virtio", "/mnt/c", mounts.ClassCrossVM, "WSL2 drive"},
		{"9p", "share", "rw,access=client,trans=virtio", "/mnt/share", mounts.ClassCrossVM, ""},
		{"9p", "none", "rw,trans=fd,rfdno=7,wfdno=7,aname=/,dfltuid=4294967294,dfltgid=4294967294,dcache=1000,cache=remote_revalidating,disable_fifo_open,directfs", "/home/node", mounts.ClassSandbox, "gVisor"},
		{"9p", "none", "rw,trans=fd,rfdno=3,wfdno=3,aname=/,dcache=1000,cache=fscache,disable_fifo_open,overlayfs_stale_read,directfs", "/", mounts.ClassEphemeral, "gVisor"},
		{"9p", "127.0.0.1", "rw,trans=fd,rfdno=5,wfdno=5,version=9p2000.L,msize=65536", "/tmp/cpu", mounts.ClassCrossVM, ""}, // Linux v9fs over an fd
		{"fakeowner", "/run/host_mark/Users", "rw,fakeowner", "/app", mounts.ClassCrossVM, "Docker Desktop"},
		{"fuse.grpcfuse", "grpcfuse", "rw", "/app", mounts.ClassCrossVM, "Docker Desktop"},
		{"osxfs", "osxfs", "rw", "/app", mounts.ClassCrossVM, "Docker Desktop"},
		{"fuse.osxfs", "osxfs", "rw", "/app", mounts.ClassCrossVM, "Docker Desktop"},
		{"vboxsf", "vagrant", "rw", "/vagrant", mounts.ClassCrossVM, "VirtualBox"},
		{"vmhgfs", ".host:/share", "rw", "/mnt/hgfs", mounts.ClassCrossVM, "VMware"},
		{"fuse.vmhgfs-fuse", "vmhgfs-fuse", "rw", "/mnt/hgfs", mounts.ClassCrossVM, "VMware"},
		{"prl_fs", "none", "rw", "/media/psf", mounts.ClassCrossVM, "Parallels"},
		{"fuse.prl_fsd", "prl_fsd", "rw", "/media/psf", mounts.ClassCrossVM, "Parallels"},
		{"drvfs", "C:", "rw", "/mnt/c", mounts.ClassCrossVM, "WSL drive"},
		{"fuse.sshfs", ":/Users/alice", "rw", "/Users/alice", mounts.ClassCrossVM, "Lima or Colima"},
		{"fuse.sshfs", "alice@host:/srv", "rw", "/srv", mounts.ClassNetwork, ""},
		{"nfs", "10.0.0.5:/srv", "rw,vers=3", "/mnt", mounts.ClassNetwork, ""},
		{"nfs4", "127.0.0.1:/", "rw,port=20052,addr=127.0.0.1", "/mnt/efs", mounts.ClassNetwork, "AWS EFS"},
		{"nfs4", "127.0.0.1:/", "rw,addr=127.0.0.1", "/mnt/efs", mounts.ClassNetwork, ""},
		{"nfs4", "fs-0123.efs.us-east-1.amazonaws.com:/", "rw", "/mnt/efs", mounts.ClassNetwork, "AWS EFS"},
		{"cifs", "//acct.file.core.windows.net/pvc-1", "rw", "/data", mounts.ClassNetwork, "Azure Files"},
		{"cifs", "//10.0.75.1/C", "rw,nobrl", "/c", mounts.ClassNetwork, "Docker Desktop (Hyper-V)"},
		{"smb3", "//srv/share", "rw", "/data", mounts.ClassNetwork, ""},
		{"smbfs", "//srv/share", "rw", "/data", mounts.ClassNetwork, ""},
		{"ceph", "mon1:6789:/volumes/csi", "rw", "/data", mounts.ClassNetwork, ""},
		{"fuse.ceph-fuse", "ceph-fuse", "rw", "/data", mounts.ClassNetwork, ""},
		{"fuse.glusterfs", "gluster:/vol", "rw", "/data", mounts.ClassNetwork, ""},
		{"glusterfs", "gluster:/vol", "rw", "/data", mounts.ClassNetwork, ""},
		{"lustre", "10.0.0.5@tcp:/fs", "rw", "/data", mounts.ClassNetwork, ""},
		{"gpfs", "gpfs0", "rw", "/data", mounts.ClassNetwork, ""},
		{"beegfs", "beegfs_nodev", "rw", "/data", mounts.ClassNetwork, ""},
		{"afs", "AFS", "rw", "/afs", mounts.ClassNetwork, ""},
		{"fuse.s3fs", "s3fs", "rw", "/data", mounts.ClassNetwork, ""},
		{"fuse.gcsfuse", "bucket", "rw", "/data", mounts.ClassNetwork, ""},
		{"fuse.rclone", "r2:bucket", "rw", "/data", mounts.ClassNetwork, ""},
		{"fuse.juicefs", "JuiceFS:myjfs", "rw", "/data", mounts.ClassNetwork, ""},
		{"fuse.goofys", "bucket", "rw", "/data", mounts.ClassNetwork, ""},
		{"fuse.blobfuse2", "blobfuse2", "rw", "/data", mounts.ClassNetwork, ""},
		{"fuse.shfs", "shfs", "rw", "/mnt/user", mounts.ClassFUSE, "Unraid user share"},
		{"fuse.mergerfs", "pool", "rw", "/mnt/pool", mounts.ClassFUSE, ""},
		{"fuse", "my-bucket", "rw", "/data", mounts.ClassFUSE, ""},
		{"fuseblk", "/dev/sdb1", "rw", "/mnt/win", mounts.ClassFUSE, ""},
		{"fuse.lxcfs", "lxcfs", "rw", "/proc/cpuinfo", mounts.ClassFUSE, ""},
		{"fuse.litefs", "litefs", "rw", "/litefs", mounts.ClassLocal, ""},
		{"fuse", "litefs", "rw", "/litefs", mounts.ClassLocal, ""},
		{"overlay", "overlay", "rw,lowerdir=/a", "/", mounts.ClassEphemeral, ""},
		{"overlay", "overlay", "rw,lowerdir=/a", "/var/lib/docker/overlay2/x/merged", mounts.ClassUnknown, ""}, // alone: its upper directory is not known
		{"tmpfs", "tmpfs", "rw", "/tmp", mounts.ClassEphemeral, ""},
		{"ramfs", "ramfs", "rw", "/mnt/ram", mounts.ClassEphemeral, ""},
		{"ext2", "/dev/sda1", "rw", "/boot", mounts.ClassLocal, ""},
		{"ext3", "/dev/sda1", "rw", "/data", mounts.ClassLocal, ""},
		{"ext4", "/dev/vda1", "rw", "/data", mounts.ClassLocal, ""},
		{"xfs", "/dev/mapper/vg-root", "rw", "/data", mounts.ClassLocal, ""},
		{"btrfs", "/dev/sda2", "rw", "/data", mounts.ClassLocal, ""},
		{"zfs", "tank/data", "rw", "/data", mounts.ClassLocal, ""},
		{"f2fs", "/dev/sda3", "rw", "/data", mounts.ClassLocal, ""},
		{"bcachefs", "/dev/sda4", "rw", "/data", mounts.ClassLocal, ""},
		{"jfs", "/dev/sda5", "rw", "/data", mounts.ClassLocal, ""},
		{"reiserfs", "/dev/sda6", "rw", "/data", mounts.ClassLocal, ""},
		{"autofs", "systemd-1", "rw", "/mnt", mounts.ClassUnknown, ""},
		{"vfat", "/dev/sda1", "rw", "/boot/efi", mounts.ClassUnknown, ""},
		{"", "", "", "/x", mounts.ClassUnknown, ""},
	}
	for _, tt := range tests {
		info := &mountinfo.Info{Mountpoint: tt.mp, FSType: tt.fstype, Source: tt.source, VFSOptions: tt.opts}
		got := mounts.Classify(info)
		if got.Class != tt.class || got.Platform != tt.platform {
			t.Errorf("Classify(%q from %q) = %v, %q, want %v, %q", tt.fstype, tt.source, got.Class, got.Platform, tt.class, tt.platform)
		}
		if tt.fstype != mounts.FSTypeUnreadable && !strings.HasPrefix(got.Reason, tt.fstype+" mount") {
			t.Errorf("Classify(%q).Reason = %q, want it to start with the fstype", tt.fstype, got.Reason)
		}
	}
}

func TestClassifyFlags(t *testing.T) {
	tests := []struct {
		fstype, opts string
		noLocks      bool
		losses       bool
	}{
		{"cifs", "rw,nobrl,soft", true, false},
		{"nfs", "rw,vers=3,nolock", true, false},
		{"nfs4", "rw,local_lock=all", true, false},
		{"nfs4", "rw,local_lock=posix", true, false},
		{"nfs4", "rw,local_lock=none", false, false},
		{"nfs4", "rw,local_lock=flock", false, false},
		{"fuse.shfs", "rw", false, true},
		{"fuse.mergerfs", "rw", false, true},
		{"fuse.rclone", "rw", false, false},
	}
	for _, tt := range tests {
		got := mounts.Classify(&mountinfo.Info{Mountpoint: "/d", FSType: tt.fstype, Source: "src", Options: tt.opts})
		if got.NoLocks != tt.noLocks || got.KnownLosses != tt.losses {
			t.Errorf("Classify(%q, %q) NoLocks, KnownLosses = %v, %v, want %v, %v", tt.fstype, tt.opts, got.NoLocks, got.KnownLosses, tt.noLocks, tt.losses)
		}
	}
}

func TestClassifyMount(t *testing.T) {
	info := &mountinfo.Info{
		ID: 629, Parent: 601, Root: "/Data/dev/app", Mountpoint: "/workspace",
		Options: "rw,nosuid,nodev,relatime", FSType: "fakeowner",
		Source: "/run/host_mark/Volumes", VFSOptions: "rw,fakeowner",
	}
	want := mounts.Mount{
		Mountpoint: "/workspace",
		Root:       "/Data/dev/app",
		FSType:     "fakeowner",
		Source:     "/run/host_mark/Volumes",
		Options:    "rw,nosuid,nodev,relatime,fakeowner",
		Class:      mounts.ClassCrossVM,
		Platform:   "Docker Desktop",
		Reason:     "fakeowner mount from /run/host_mark/Volumes: Docker Desktop shares the host directory into its VM; POSIX locks and the -shm shared memory are not coherent across the VM boundary",
	}
	if diff := cmp.Diff(want, mounts.Classify(info)); diff != "" {
		t.Errorf("Classify(fakeowner) mismatch (-want +got):\n%s", diff)
	}
}

func TestParseFormats(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  mounts.Table
	}{
		{
			name:  "mountinfo",
			input: "36 35 98:0 /mnt1 /mnt\\040two rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n",
			want: mounts.Table{Format: mounts.FormatMountinfo, Mounts: []*mountinfo.Info{{
				ID: 36, Parent: 35, Major: 98, Minor: 0, Root: "/mnt1", Mountpoint: "/mnt two",
				Options: "rw,noatime", Optional: "master:1", FSType: "ext3", Source: "/dev/root", VFSOptions: "rw,errors=continue",
			}}},
		},
		{
			name:  "mountinfo empty source",
			input: "12 1 0:5 / /dev/shm rw - tmpfs  rw,size=65536k\n",
			want: mounts.Table{Format: mounts.FormatMountinfo, Mounts: []*mountinfo.Info{{
				ID: 12, Parent: 1, Major: 0, Minor: 5, Root: "/", Mountpoint: "/dev/shm",
				Options: "rw", FSType: "tmpfs", Source: "", VFSOptions: "rw,size=65536k",
			}}},
		},
		{
			name:  "proc-mounts",
			input: "//srv/share /mnt/my\\040share cifs rw,nobrl 0 0\r\n",
			want: mounts.Table{Format: mounts.FormatProcMounts, Mounts: []*mountinfo.Info{{
				Mountpoint: "/mnt/my share", FSType: "cifs", Source: "//srv/share", Options: "rw,nobrl",
			}}},
		},
		{
			name:  "mount",
			input: "drvfs on /mnt/c type 9p (rw,aname=drvfs;path=C:\\;uid=0,trans=virtio)\nnone on /x\\040y type tmpfs (rw) [label]\n",
			want: mounts.Table{Format: mounts.FormatMount, Mounts: []*mountinfo.Info{
				{Mountpoint: "/mnt/c", FSType: "9p", Source: "drvfs", Options: "rw,aname=drvfs;path=C:\\;uid=0,trans=virtio"},
				{Mountpoint: "/x y", FSType: "tmpfs", Source: "none", Options: "rw"},
			}},
		},
		{
			name: "findmnt",
			input: "TARGET          SOURCE            FSTYPE OPTIONS\n" +
				"/               /dev/sda1         ext4   rw\n" +
				"└─/srv/a\\x20b  /dev/sda1[/data]  ext4   rw,relatime\n",
			want: mounts.Table{Format: mounts.FormatFindmnt, Mounts: []*mountinfo.Info{
				{Mountpoint: "/", FSType: "ext4", Source: "/dev/sda1", Options: "rw"},
				{Mountpoint: "/srv/a b", Root: "/data", FSType: "ext4", Source: "/dev/sda1", Options: "rw,relatime"},
			}},
		},
		{
			name: "findmnt other columns",
			input: "ID  PARENT MAJ:MIN TARGET FSTYPE SOURCE   FSROOT VFS-OPTIONS FS-OPTIONS\n" +
				"21  1      0:45    /data  nfs4   srv:/x   /      rw          rw,vers=4.2,local_lock=all\n",
			want: mounts.Table{Format: mounts.FormatFindmnt, Mounts: []*mountinfo.Info{{
				ID: 21, Parent: 1, Minor: 45, Root: "/", Mountpoint: "/data", FSType: "nfs4", Source: "srv:/x",
				Options: "rw", VFSOptions: "rw,vers=4.2,local_lock=all",
			}}},
		},
		{
			name:  "comments and blank lines are not counted",
			input: "# saved by alice\n\n   \n/dev/sda1 / ext4 rw 0 0\n# end\n",
			want: mounts.Table{Format: mounts.FormatProcMounts, Mounts: []*mountinfo.Info{{
				Mountpoint: "/", FSType: "ext4", Source: "/dev/sda1", Options: "rw",
			}}},
		},
		{
			name: "garbage lines are counted",
			input: "root@abc:/# cat /proc/self/mountinfo\n" +
				"1 0 8:1 / / rw - ext4 /dev/sda1 rw\n" +
				"Filesystem 1K-blocks Used Available Use% Mounted on\n" +
				"1 0 8:1 / / rw no separator here at all\n" +
				"mount: /mnt: permission denied.\n" +
				"/dev/sdb1 /data xfs rw 0 0\n",
			want: mounts.Table{Format: mounts.FormatMountinfo, Skipped: 4, Mounts: []*mountinfo.Info{
				{ID: 1, Major: 8, Minor: 1, Root: "/", Mountpoint: "/", Options: "rw", FSType: "ext4", Source: "/dev/sda1", VFSOptions: "rw"},
				// the mangled mountinfo line still names its mountpoint
				{ID: 1, Major: 8, Minor: 1, Root: "/", Mountpoint: "/", FSType: mounts.FSTypeUnreadable},
				{Mountpoint: "/data", FSType: "xfs", Source: "/dev/sdb1", Options: "rw"},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseString(t, tt.input)
			if diff := cmp.Diff(&tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tt.input, diff)
			}
		})
	}
}

func TestParseNoMounts(t *testing.T) {
	for _, in := range []string{
		"",
		"# only a comment\n\n",
		"alice@host:~$ cat /proc/self/mountinfo\ncat: /proc/self/mountinfo: No such file or directory\n",
		"Filesystem     Type      Size  Used Avail Use% Mounted on\nvirtiofs3      virtiofs  117G  103G  8.8G  93% /exports\n",
		"TARGET SOURCE FSTYPE OPTIONS\n",
		"1 0 8:1 / relative rw - ext4 /dev/sda1 rw\n",
	} {
		tab, err := mounts.Parse(strings.NewReader(in))
		if !errors.Is(err, mounts.ErrNoMounts) {
			t.Errorf("Parse(%q) = %+v, %v, want error %v", in, tab, err, mounts.ErrNoMounts)
		}
	}
}

// TestParseLongLine feeds an overlay line far over the 64 KiB token limit
// of the mountinfo library, between two ordinary lines.
func TestParseLongLine(t *testing.T) {
	var lower []string
	for i := range 4000 {
		lower = append(lower, "/var/lib/docker/overlay2/l/LAYER"+strings.Repeat("X", 20)+string(rune('A'+i%26)))
	}
	long := "1 0 0:30 / / rw,relatime - overlay overlay rw,lowerdir=" + strings.Join(lower, ":") + ",upperdir=/u,workdir=/w,nolock"
	if len(long) < 100<<10 {
		t.Fatalf("test line is only %d bytes", len(long))
	}
	tab := parseString(t, "2 1 8:1 / /data rw - ext4 /dev/sda1 rw\n"+long+"\n3 1 0:40 / /share rw - 9p share rw\n")
	if tab.Skipped != 0 || len(tab.Mounts) != 3 {
		t.Fatalf("Parse(long line) = %d mounts, %d skipped, want 3, 0", len(tab.Mounts), tab.Skipped)
	}
	m, err := tab.Classify("/app.db")
	if err != nil {
		t.Fatal(err)
	}
	if m.Class != mounts.ClassEphemeral || !m.NoLocks || !strings.Contains(m.Options, "upperdir=/u") || len(m.Options) < 100<<10 {
		t.Errorf("Classify(%q) = %v, NoLocks %v, options %d bytes; want ephemeral, NoLocks, every option kept", "/app.db", m.Class, m.NoLocks, len(m.Options))
	}

	// A line over 1 MiB is skipped, not fatal.
	huge := "/dev/sda1 / ext4 rw," + strings.Repeat("x", 2<<20) + " 0 0"
	tab = parseString(t, huge+"\n/dev/sdb1 /data xfs rw 0 0\n")
	if tab.Skipped != 1 {
		t.Errorf("Parse(2 MiB line) skipped %d lines, want 1", tab.Skipped)
	}
}

// TestParseLongNFSLine: an NFS line of many short options over 60 KiB is
// read whole, so /data is network, not the "/" under it.
func TestParseLongNFSLine(t *testing.T) {
	var opts []string
	for i := range 9000 {
		opts = append(opts, "opt"+strconv.Itoa(i)+"=1")
	}
	nfs := "40 1 0:52 / /data rw,relatime - nfs4 srv:/export rw,vers=4.2," + strings.Join(opts, ",")
	if len(nfs) < 70<<10 {
		t.Fatalf("test line is only %d bytes", len(nfs))
	}
	tab := parseString(t, "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"+nfs+"\n")
	m, err := tab.Classify("/data/app.db")
	if err != nil {
		t.Fatal(err)
	}
	if m.Class != mounts.ClassNetwork || tab.Skipped != 0 {
		t.Errorf("Classify(%q) = %v (%s), %d skipped; want network, 0", "/data/app.db", m.Class, m.Reason, tab.Skipped)
	}
}

// TestParseUnreadableLine: a line that cannot be read but shows its
// mountpoint makes paths under it unknown, never the class of "/".
func TestParseUnreadableLine(t *testing.T) {
	huge := "40 1 0:52 / /data rw,relatime - nfs4 srv:/export rw," + strings.Repeat("x", 2<<20)
	broken := "41 1 0:53 / /srv/app rw,relatime"
	for _, tt := range []struct{ name, in, path string }{
		{"mountinfo over 1 MiB", "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n" + huge + "\n", "/data/app.db"},
		{"proc-mounts over 1 MiB", "/dev/sda1 / ext4 rw 0 0\nsrv:/x /data nfs rw," + strings.Repeat("x", 2<<20) + " 0 0\n", "/data/app.db"},
		{"mount(8) over 1 MiB", "/dev/sda1 on / type ext4 (rw)\nsrv:/x on /data type nfs (rw," + strings.Repeat("x", 2<<20) + ")\n", "/data"},
		{"mountinfo without a separator", "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n" + broken + " shared:1 x y z\n", "/srv/app/app.db"},
	} {
		tab := parseString(t, tt.in)
		m, err := tab.Classify(tt.path)
		if err != nil {
			t.Errorf("%s: Classify(%q) error: %v", tt.name, tt.path, err)
			continue
		}
		if m.Class != mounts.ClassUnknown || tab.Skipped != 1 || !strings.Contains(m.Reason, "could not be read") {
			t.Errorf("%s: Classify(%q) = %v (%s), %d skipped; want unknown from the unreadable line, 1 skipped", tt.name, tt.path, m.Class, m.Reason, tab.Skipped)
		}
		if m, _ := tab.Classify("/other"); m.Class != mounts.ClassLocal {
			t.Errorf("%s: Classify(%q) = %v, want local (the / line)", tt.name, "/other", m.Class)
		}
	}
}

// TestEscapedDotDot: a mountpoint written "\056\056" is a directory named
// "..", which holds nothing a clean path can name; it must not become
// the parent directory.
func TestEscapedDotDot(t *testing.T) {
	for _, in := range []string{
		"1 0 8:1 / / rw - ext4 /dev/sda1 rw\n2 1 0:40 / /data rw - ext4 /dev/sdb1 rw\n3 1 0:52 / /data/\\056\\056 rw - nfs4 srv:/x rw\n",
		"/dev/sda1 / ext4 rw 0 0\n/dev/sdb1 /data ext4 rw 0 0\nsrv:/x /data/sub/\\056\\056 nfs rw 0 0\n",
		"/dev/sda1 / ext4 rw 0 0\nsrv:/x /\\056 nfs rw 0 0\n",
	} {
		tab := parseString(t, in)
		for _, p := range []string{"/", "/data", "/data/app.db"} {
			m, err := tab.Classify(p)
			if err != nil || m.Class != mounts.ClassLocal {
				t.Errorf("Parse(%q).Classify(%q) = %v (%s), %v; want local", in, p, m.Class, m.Reason, err)
			}
		}
	}
}

func TestFind(t *testing.T) {
	tab := parseString(t, ""+
		"1 0 0:30 / / rw - overlay overlay rw\n"+
		"10 1 254:1 /placeholder /data rw - ext4 /dev/vda1 rw\n"+
		"11 10 0:40 / /data rw - virtiofs mount0 rw\n"+
		"12 1 254:1 / /foo rw - ext4 /dev/vda1 rw\n"+
		"13 1 254:1 /x/app.db /srv/app.db rw - ext4 /dev/vda1 rw\n")
	tests := []struct {
		path   string
		wantID int
	}{
		{"/", 1},
		{"/data", 11},
		{"/data/", 11},
		{"/data/../data/x", 11},
		{"/foo", 12},
		{"/foo/bar", 12},
		{"/foobar", 1},
		{"/fo", 1},
		{"/srv/app.db", 13},
		{"/srv/app.db-wal", 1},
		{"/srv", 1},
	}
	for _, tt := range tests {
		m, err := tab.Find(tt.path)
		if err != nil {
			t.Errorf("Find(%q) error: %v", tt.path, err)
			continue
		}
		if m.ID != tt.wantID {
			t.Errorf("Find(%q) = mount %d (%s), want %d", tt.path, m.ID, m.Mountpoint, tt.wantID)
		}
	}

	// Hand-edited tables may carry unclean mountpoints.
	unclean := parseString(t, "/dev/sda1 / ext4 rw 0 0\nsrv:/x /data/ nfs rw 0 0\nshare /x/./y/../z 9p rw 0 0\n")
	for p, want := range map[string]string{"/data/app.db": "nfs", "/x/z/app.db": "9p", "/x/y/app.db": "ext4"} {
		m, err := unclean.Find(p)
		if err != nil || m.FSType != want {
			t.Errorf("Find(%q) = %+v, %v, want the %s mount", p, m, err, want)
		}
	}

	if _, err := tab.Find("data/x"); err == nil || errors.Is(err, mounts.ErrNoMount) {
		t.Errorf("Find(%q) error = %v, want a not-absolute error", "data/x", err)
	}
	noRoot := parseString(t, "/dev/sdb1 /data xfs rw 0 0\n")
	if _, err := noRoot.Find("/srv/app.db"); !errors.Is(err, mounts.ErrNoMount) {
		t.Errorf("Find(%q) error = %v, want %v", "/srv/app.db", err, mounts.ErrNoMount)
	}
	if _, err := noRoot.Classify("/srv/app.db"); !errors.Is(err, mounts.ErrNoMount) {
		t.Errorf("Classify(%q) error = %v, want %v", "/srv/app.db", err, mounts.ErrNoMount)
	}
}

func TestReadFileMissing(t *testing.T) {
	_, err := mounts.ReadFile(filepath.Join(t.TempDir(), "nope"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile(missing) error = %v, want %v", err, os.ErrNotExist)
	}
}

func TestReadSelf(t *testing.T) {
	tab, err := mounts.ReadSelf()
	if runtime.GOOS != "linux" {
		if !errors.Is(err, mounts.ErrNotSupported) {
			t.Errorf("ReadSelf() error = %v, want %v on %s", err, mounts.ErrNotSupported, runtime.GOOS)
		}
		return
	}
	if err != nil {
		t.Fatalf("ReadSelf() error: %v", err)
	}
	if tab.Format != mounts.FormatMountinfo {
		t.Errorf("ReadSelf().Format = %q, want %q", tab.Format, mounts.FormatMountinfo)
	}
	m, err := tab.Classify("/")
	if err != nil {
		t.Fatalf("Classify(%q) error: %v", "/", err)
	}
	if m.Class == "" || m.Mountpoint != "/" || m.Reason == "" {
		t.Errorf("Classify(%q) = %+v, want a class for the root mount", "/", m)
	}
}

func TestResolvePath(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir()) // the temp dir may itself sit under a symlink
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(tmp, "real")
	if err := os.MkdirAll(filepath.Join(real, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(tmp, "link")); err != nil {
		t.Skipf("cannot create symlinks here: %v", err)
	}
	if err := os.Symlink("real/data", filepath.Join(tmp, "rel")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ in, want string }{
		{filepath.Join(tmp, "link", "data"), filepath.Join(real, "data")},
		{filepath.Join(tmp, "link", "data", "app.db"), filepath.Join(real, "data", "app.db")},
		{filepath.Join(tmp, "link", "missing", "deeper", "app.db"), filepath.Join(real, "missing", "deeper", "app.db")},
		{filepath.Join(tmp, "rel", "app.db"), filepath.Join(real, "data", "app.db")},
		{filepath.Join(tmp, "link", "data", "..", "data", "x") + string(filepath.Separator), filepath.Join(real, "data", "x")},
		{filepath.Join(tmp, "file", "x"), filepath.Join(tmp, "file", "x")},
		{"sub/app.db", filepath.Join(tmp, "sub", "app.db")},
		{"link/data", filepath.Join(real, "data")},
	}
	t.Chdir(tmp)
	for _, tt := range tests {
		got, err := mounts.ResolvePath(tt.in)
		if err != nil {
			t.Errorf("ResolvePath(%q) error: %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ResolvePath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestOverlayUpperDir: an overlay not at "/" is classified by the mount
// that holds its upper directory (Docker Desktop for Mac: an overlay whose
// upperdir is on the virtiofs share), and is unknown, never local, when
// the table does not show that mount.
func TestOverlayUpperDir(t *testing.T) {
	const root = "1 0 0:30 / / rw - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/A,upperdir=/var/lib/docker/overlay2/abc/diff,workdir=/var/lib/docker/overlay2/abc/work\n"
	tests := []struct {
		name, table string
		class       mounts.Class
		platform    string
	}{
		{"upper on a virtiofs share", root +
			"50 1 0:60 / /mnt/host rw,relatime - virtiofs virtiofs0 rw\n" +
			"60 1 0:70 / /data rw,relatime - overlay overlay rw,lowerdir=/srv/lower,upperdir=/mnt/host/Users/me/openclaw/upper,workdir=/mnt/host/Users/me/openclaw/work\n",
			mounts.ClassCrossVM, "Docker Desktop"},
		{"upper on fakeowner, escaped", root +
			"50 1 0:60 /Users /Users rw - fakeowner /run/host_mark/Users rw,fakeowner\n" +
			"60 1 0:70 / /data rw - overlay overlay rw,lowerdir=/l,upperdir=/Users/me/my\\040app/upper,workdir=/Users/me/w\n",
			mounts.ClassCrossVM, "Docker Desktop"},
		{"upper on NFS through a second overlay", "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n" +
			"50 1 0:60 / /nfs rw - nfs4 srv:/x rw\n" +
			"60 1 0:70 / /o1 rw - overlay overlay rw,lowerdir=/l,upperdir=/nfs/u,workdir=/nfs/w\n" +
			"61 1 0:71 / /data rw - overlay overlay rw,lowerdir=/l,upperdir=/o1/u,workdir=/o1/w\n",
			mounts.ClassNetwork, ""},
		{"upper on tmpfs", "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n" +
			"50 1 0:60 / /run rw - tmpfs tmpfs rw\n" +
			"60 1 0:70 / /data rw - overlay overlay rw,lowerdir=/l,upperdir=/run/u,workdir=/run/w\n",
			mounts.ClassEphemeral, ""},
		{"upper on the host's ext4 root", "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n" +
			"60 1 0:70 / /data rw - overlay overlay rw,lowerdir=/l,upperdir=/var/lib/u,workdir=/var/lib/w\n",
			mounts.ClassLocal, ""},
		{"upper only under the container's root overlay", root +
			"60 1 0:70 / /data rw - overlay overlay rw,lowerdir=/l,upperdir=/var/lib/docker/volumes/x/upper,workdir=/var/lib/docker/volumes/x/work\n",
			mounts.ClassUnknown, ""},
		{"no upper directory", "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n" +
			"60 1 0:70 / /data ro - overlay overlay ro,lowerdir=/a:/b\n",
			mounts.ClassUnknown, ""},
		{"upper on no mount", "60 1 0:70 / /data rw - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w\n",
			mounts.ClassUnknown, ""},
	}
	for _, tt := range tests {
		tab := parseString(t, tt.table)
		m, err := tab.Classify("/data/app.db")
		if err != nil {
			t.Errorf("%s: Classify error: %v", tt.name, err)
			continue
		}
		if m.Class != tt.class || m.Platform != tt.platform || m.FSType != "overlay" || !strings.Contains(m.Reason, "upper directory") {
			t.Errorf("%s: Classify(%q) = %v, %q (%s); want %v, %q", tt.name, "/data/app.db", m.Class, m.Platform, m.Reason, tt.class, tt.platform)
		}
	}
	// A cycle of overlays (hand-edited) ends, unknown.
	tab := parseString(t, "60 1 0:70 / /a rw - overlay overlay rw,upperdir=/b/u\n61 1 0:71 / /b rw - overlay overlay rw,upperdir=/a/u\n")
	if m, err := tab.Classify("/a/x"); err != nil || m.Class != mounts.ClassUnknown {
		t.Errorf("Classify(overlay cycle) = %v, %v; want unknown", m.Class, err)
	}
}

// TestCompareStatfs: the table fstype and statfs's f_type agree for the
// same family, disagree across families, and an unknown magic agrees.
func TestCompareStatfs(t *testing.T) {
	for _, tt := range []struct {
		fstype string
		magic  uint32
		agrees bool
		class  mounts.Class
	}{
		{"ext4", 0xEF53, true, mounts.ClassLocal},
		{"ext4", 0x6969, false, mounts.ClassNetwork},
		{"nfs4", 0x6969, true, mounts.ClassNetwork},
		{"fuse.grpcfuse", 0x65735546, true, mounts.ClassFUSE},
		{"virtiofs", 0x65735546, true, mounts.ClassFUSE},
		{"xfs", 0x65735546, false, mounts.ClassFUSE},
		{"9p", 0x01021997, true, mounts.ClassCrossVM},
		{"overlay", 0x794C7630, true, ""},
		{"fakeowner", 0x12345678, true, ""},
		{mounts.FSTypeUnreadable, 0xEF53, false, mounts.ClassLocal},
	} {
		w := mounts.CompareStatfs(tt.fstype, tt.magic)
		if w.Agrees != tt.agrees || w.Class != tt.class || w.Magic != tt.magic {
			t.Errorf("CompareStatfs(%q, %#x) = %+v, want agrees %v, class %q", tt.fstype, tt.magic, w, tt.agrees, tt.class)
		}
	}
}

// TestStatfsLive: statfs(2) of "/" and of every tmpfs mountpoint here
// agrees with the live mount table.
func TestStatfsLive(t *testing.T) {
	tab, err := mounts.ReadSelf()
	if errors.Is(err, mounts.ErrNotSupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, m := range tab.Mounts {
		if m.Mountpoint != "/" && m.FSType != "tmpfs" {
			continue
		}
		if got, _ := tab.Find(m.Mountpoint); got != m {
			continue // covered by a later mount
		}
		magic, err := mounts.StatfsType(m.Mountpoint)
		if err != nil {
			continue // not reachable from here
		}
		if w := mounts.CompareStatfs(m.FSType, magic); !w.Agrees {
			t.Errorf("CompareStatfs(%q, statfs(%s)) = %+v, want agreement", m.FSType, m.Mountpoint, w)
		}
		checked++
	}
	if checked == 0 {
		t.Skip("no mount to check")
	}
}

// TestGVisorBanner: inside gVisor (the banner as captured in the report
// behind testdata/gvisor-runsc-mountinfo.txt) a 9p mount over a file
// descriptor is the sandbox's gofer even without the gofer's own options;
// on a Linux kernel it stays cross-vm.
func TestGVisorBanner(t *testing.T) {
	if !mounts.IsGVisorBanner("Linux version 4.19.0-gvisor #1 SMP Sun Jan 10 15:06:54 PST 2016\n") {
		t.Error("IsGVisorBanner(gVisor's banner) = false")
	}
	if mounts.IsGVisorBanner("Linux version 6.8.0-45-generic (buildd@lcy02-amd64-115) (x86_64-linux-gnu-gcc-13) #45-Ubuntu\n") {
		t.Error("IsGVisorBanner(Ubuntu's banner) = true")
	}
	tab := parseString(t, "1 0 0:36 / / rw - overlay none rw\n2 1 0:49 / /opt/data rw - 9p none rw,trans=fd,rfdno=50,wfdno=50,aname=/\n")
	if m, _ := tab.Classify("/opt/data/app.db"); m.Class != mounts.ClassCrossVM {
		t.Errorf("Classify(9p over an fd, Linux) = %v, want cross-vm", m.Class)
	}
	tab.GVisor = true
	if m, _ := tab.Classify("/opt/data/app.db"); m.Class != mounts.ClassSandbox || m.Platform != "gVisor" {
		t.Errorf("Classify(9p over an fd, gVisor) = %v %q, want sandbox gVisor", m.Class, m.Platform)
	}
	if self, err := mounts.ReadSelf(); err == nil && self.GVisor {
		t.Log("this test runs inside gVisor")
	}
}

// TestMountLineSpaces: mount(8) prints mountpoints unescaped. A mountpoint
// with spaces, or with " type " or " (" inside, is recovered; a line that
// fits no format, or that could split at several " on /", makes every
// path under a mountpoint it might name unknown, never the class of "/".
func TestMountLineSpaces(t *testing.T) {
	const root = "/dev/sda1 on / type ext4 (rw)\n"
	for _, tt := range []struct {
		name, in, path string
		want           mounts.Class
		skipped        int
	}{
		{"space", root + "srv:/e on /mnt/a b type nfs4 (rw)\n", "/mnt/a b/app.db", mounts.ClassNetwork, 0},
		{"type inside", root + "srv:/e on /mnt/x type y type nfs4 (rw)\n", "/mnt/x type y/app.db", mounts.ClassNetwork, 0},
		{"paren inside", root + "srv:/e on /mnt/a (b) type nfs4 (rw) [label]\n", "/mnt/a (b)/app.db", mounts.ClassNetwork, 0},
		{"source with spaces", root + "my share on /mnt/s type cifs (rw)\n", "/mnt/s/app.db", mounts.ClassNetwork, 0},
		{"bad fstype", root + "srv:/e on /mnt/a b type nfs4! (rw)\n", "/mnt/a b/app.db", mounts.ClassUnknown, 1},
		{"no options", root + "srv:/e on /mnt/a b type nfs4\n", "/mnt/a b/app.db", mounts.ClassUnknown, 1},
		{"two on", root + "srv on /x on /mnt/a type nfs4 (rw)\n", "/mnt/a/app.db", mounts.ClassUnknown, 1},
		{"two on, longer", root + "srv on /x on /mnt/a type nfs4 (rw)\n", "/x on /mnt/a/app.db", mounts.ClassUnknown, 1},
		{"findmnt row", "TARGET SOURCE FSTYPE OPTIONS\n/ /dev/sda1 ext4 rw\n/mnt/a b srv:/e nfs4 rw\n", "/mnt/a b/app.db", mounts.ClassUnknown, 1},
	} {
		tab := parseString(t, tt.in)
		m, err := tab.Classify(tt.path)
		if err != nil || m.Class != tt.want || tab.Skipped != tt.skipped {
			t.Errorf("%s: Classify(%q) = %v (%s), %v, %d skipped; want %v, %d skipped", tt.name, tt.path, m.Class, m.Reason, err, tab.Skipped, tt.want, tt.skipped)
		}
		if m, _ := tab.Classify("/other/app.db"); m.Class != mounts.ClassLocal {
			t.Errorf("%s: Classify(%q) = %v, want local (the / line)", tt.name, "/other/app.db", m.Class)
		}
	}
}
