package mounts_test

import (
	"bytes"
	"errors"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// FuzzParse checks that Parse never panics or hangs, that it either fails
// with one of its documented errors or returns mounts with absolute
// mountpoints, and that Find of each mountpoint finds a mount there.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{sharedCases, "testdata"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
		for _, name := range files {
			b, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	for _, s := range []string{
		"36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n",
		"15 1 0:5 / /x\\040y rw shared:1 - tmpfs  rw\n",
		"//srv/share /mnt/my\\040share cifs rw,nobrl 0 0\n",
		"drvfs on /mnt/c type 9p (rw,aname=drvfs;path=C:\\;uid=0,trans=virtio)\n",
		"TARGET SOURCE FSTYPE OPTIONS\n/ /dev/sda1 ext4 rw\n└─/srv/a\\x20b /dev/sda1[/data] ext4 rw\n",
		"SOURCE TARGET FSTYPE\nshfs |-/mnt/user fuse.shfs\n",
		"/dev/sda1 on / type ext4 (rw)\nsrv:/e on /mnt/a b type nfs4 (rw)\n",
		"srv:/e on /mnt/x type y type nfs4 (rw) [l]\n",
		"srv on /x on /mnt/a type nfs4 (rw)\non / type ext4 (rw)\n",
		"/dev/sda1 on / type ext4 (rw)\nsrv:/e on /mnt/a b c d e f g h i j k l m n o p q r s t u v w x y z a b c d e f g h i j k l m n o p q r s t u v w x y z a b c d e f g h i j\n",
		"TARGET SOURCE FSTYPE OPTIONS\n/ /dev/sda1 ext4 rw\n/mnt/a b srv:/e nfs4 rw\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := mounts.Parse(bytes.NewReader(data))
		if err != nil {
			if tab != nil {
				t.Fatalf("Parse(%q) = %+v, %v; want a nil table with an error", data, tab, err)
			}
			if !errors.Is(err, mounts.ErrNoMounts) && !errors.Is(err, mounts.ErrNotSupported) {
				t.Fatalf("Parse(%q) error = %v, want %v or %v", data, err, mounts.ErrNoMounts, mounts.ErrNotSupported)
			}
			return
		}
		if len(tab.Mounts) == 0 || tab.Format == "" || tab.Skipped < 0 {
			t.Fatalf("Parse(%q) = format %q, %d mounts, %d skipped", data, tab.Format, len(tab.Mounts), tab.Skipped)
		}
		for _, m := range tab.Mounts {
			if m.Mountpoint == "" || m.Mountpoint[0] != '/' {
				t.Fatalf("Parse(%q) gave mountpoint %q, want an absolute path", data, m.Mountpoint)
			}
			c := mounts.Classify(m)
			if c.Class == "" || c.Reason == "" {
				t.Fatalf("Classify(%+v) = %+v, want a class and a reason", m, c)
			}
			if path.Clean(m.Mountpoint) != m.Mountpoint {
				continue // "." or ".." from an escape: a name no clean path reaches
			}
			got, err := tab.Find(m.Mountpoint)
			if err != nil {
				t.Fatalf("Find(%q) error: %v", m.Mountpoint, err)
			}
			if path.Clean(got.Mountpoint) != path.Clean(m.Mountpoint) {
				t.Fatalf("Find(%q) = mount at %q", m.Mountpoint, got.Mountpoint)
			}
		}
		if _, err := tab.Classify("/"); err != nil && !errors.Is(err, mounts.ErrNoMount) {
			t.Fatalf("Classify(%q) error = %v", "/", err)
		}
	})
}
