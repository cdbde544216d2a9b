package preflight

import (
	"testing"

	"github.com/moby/sys/mountinfo"

	"github.com/preflight-sqlite/preflight/internal/fuseloop"
	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/rules"
)

// TestStatfsWitness: on a real FUSE mount statfs(2) agrees with the live
// mount table; a table entry that says ext4 there (a stale or foreign
// copy) is overruled by the riskier class statfs implies, and the
// disagreement is the fs-type-mismatch finding.
func TestStatfsWitness(t *testing.T) {
	testdb.NeedFUSE(t)
	backing, mnt := t.TempDir(), t.TempDir()
	unmount, err := fuseloop.Mount(backing, mnt, "grpcfuse")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmount() })

	table, err := mounts.ReadSelf()
	if err != nil {
		t.Fatal(err)
	}
	m, err := lookup(table, mnt, false)
	if err != nil {
		t.Fatal(err)
	}
	if m.Statfs == nil || !m.Statfs.Agrees || m.Statfs.Name != "fuse" || m.Class != mounts.ClassCrossVM {
		t.Errorf("lookup(%s) = %s, statfs %+v; want cross-vm, statfs agreeing (fuse)", mnt, m.Class, m.Statfs)
	}

	lie := mounts.Classify(&mountinfo.Info{Mountpoint: mnt, FSType: "ext4", Source: "/dev/sda1"})
	witness(&lie, mnt)
	if lie.Statfs == nil || lie.Statfs.Agrees || lie.Class != mounts.ClassFUSE {
		t.Fatalf("witness(ext4 entry over a FUSE mount) = %s, statfs %+v; want fuse, a disagreement", lie.Class, lie.Statfs)
	}
	r := &Report{DataDirs: []DataDir{{Path: mnt, Resolved: mnt, Exists: true, Inspected: true, Mount: &lie, Databases: []Database{}}}}
	var got []string
	for _, f := range rules.Evaluate(r, rules.Input{}) {
		if f.ID == "fs-type-mismatch" {
			got = append(got, string(f.Level)+": "+f.Message)
		}
	}
	if len(got) != 1 || got[0][:5] != "warn:" {
		t.Errorf("findings = %q, want one fs-type-mismatch warning", got)
	}
	t.Log(got)
}
