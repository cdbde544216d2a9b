package mounts_test

import (
	"testing"

	"github.com/moby/sys/mountinfo"

	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// TestClassifySoft: soft and softerr on NFS set Soft; the same word on
// other filesystems, or inside another option, does not.
func TestClassifySoft(t *testing.T) {
	tests := []struct {
		fstype, opts, vfs string
		want              bool
	}{
		{"nfs", "rw,relatime", "rw,vers=3,soft,proto=tcp,timeo=600", true},
		{"nfs4", "rw", "rw,vers=4.2,softerr,timeo=600", true},
		{"nfs4", "rw", "rw,vers=4.2,hard,timeo=600", false},
		{"nfs4", "rw", "rw,vers=4.2,softreval", false},
		{"cifs", "rw", "rw,vers=3.1.1,soft,nobrl", false},
		{"ext4", "rw", "rw", false},
	}
	for _, tt := range tests {
		got := mounts.Classify(&mountinfo.Info{Mountpoint: "/data", FSType: tt.fstype, Source: "nas:/export", Options: tt.opts, VFSOptions: tt.vfs})
		if got.Soft != tt.want {
			t.Errorf("Classify(%s, %s) Soft = %v, want %v", tt.fstype, tt.vfs, got.Soft, tt.want)
		}
	}
}
