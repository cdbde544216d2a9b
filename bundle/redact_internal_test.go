package bundle

import (
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/report"
)

// TestRedactor: paths outside the data directories, host and user names
// become placeholders, the same for the same value; the data directory,
// the kernel's filesystems, URLs and words that only contain a name (a
// class such as cross-vm when the host is "vm") stay.
func TestRedactor(t *testing.T) {
	red := newRedactor(&report.Report{DataDirs: []report.DataDir{{Path: "/srv/data", Resolved: "/srv/data"}}}, nil)
	red.kind = map[string]string{"vm": "host", "alice": "user"}
	red.names = mustNames("alice", "vm")
	for _, v := range []string{"x", "root", "localhost"} {
		if red.name(v, "user"); red.kind[v] != "" {
			t.Errorf("name(%q) is redacted; want it left (too short or common)", v)
		}
	}
	in := `vm: /srv/data/app.db on /srv (ext4 from /dev/vda), also /srv/data-wal and /home/alice/app.db; user alice on vm; cross-vm see https://sqlite.org/wal.html 3/4
"path": "/home/alice/app.db", lowerdir=/var/lib/docker/overlay2/l:/x
`
	want := `host-1: /srv/data/app.db on /redacted-path-1 (ext4 from /dev/vda), also /srv/data-wal and /redacted-path-2; user user-1 on host-1; cross-vm see https://sqlite.org/wal.html 3/4
"path": "/redacted-path-2", lowerdir=/redacted-path-3
`
	if got := string(red.apply([]byte(in))); got != want {
		t.Errorf("apply:\n got %s\nwant %s", got, want)
	}
	if c := red.counts(); c["path"] != 3 || c["host"] != 1 || c["user"] != 1 {
		t.Errorf("counts = %v, want 3 paths, 1 host, 1 user", c)
	}
}

// TestRedactorMountSources: the servers of network mounts (NFS, SMB, and
// their addresses in the options) are host names too.
func TestRedactorMountSources(t *testing.T) {
	table := "41 1 0:50 / /mnt/nas rw - nfs4 nas.home.lan:/volume1/data rw,vers=4.2,addr=192.168.1.20,clientaddr=192.168.1.5\n" +
		"42 1 0:51 / /mnt/smb rw - cifs //fileserver/share rw,addr=10.0.0.7\n"
	red := newRedactor(&report.Report{}, []byte(table))
	got := string(red.apply([]byte(table)))
	for _, leak := range []string{"nas.home.lan", "fileserver", "192.168.1.20", "192.168.1.5", "10.0.0.7", "/volume1", "/mnt/nas"} {
		if strings.Contains(got, leak) {
			t.Errorf("apply(mount table) leaks %q:\n%s", leak, got)
		}
	}
	if !strings.Contains(got, " - nfs4 ") || !strings.Contains(got, " - cifs ") {
		t.Errorf("apply(mount table) lost the filesystem types:\n%s", got)
	}
}
