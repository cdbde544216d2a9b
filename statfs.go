package preflight

import (
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// witness asks statfs(2) about p, a path on this machine, and records the
// answer in m, the mount the table gave for p. When the two disagree and
// the magic number implies a riskier class than the table's (the table
// says ext4, statfs says NFS), the riskier class wins and the reason says
// why; the disagreement itself is the fs-type-mismatch finding. A statfs
// that fails (or a system without it) leaves m as it was.
func witness(m *mounts.Mount, p string) {
	fType, err := mounts.StatfsType(p)
	if err != nil {
		return
	}
	w := mounts.CompareStatfs(m.FSType, fType)
	m.Statfs = &w
	if !w.Agrees && w.Class != "" && riskier(w.Class, m.Class) {
		m.Reason += "; but statfs(2) reports " + w.String() + ", which the mount table does not show, so it is judged " + string(w.Class)
		m.Class = w.Class
	}
}

// statfsDisagreements lists the mounts of d (its own, its databases' and
// their sidecars') on which the mount table and statfs(2) disagree.
func statfsDisagreements(d *DataDir) []*mounts.Mount {
	var out []*mounts.Mount
	add := func(m *mounts.Mount) {
		if m == nil || m.Statfs == nil || m.Statfs.Agrees {
			return
		}
		for _, o := range out {
			if o.Mountpoint == m.Mountpoint {
				return
			}
		}
		out = append(out, m)
	}
	add(d.Mount)
	for i := range d.Databases {
		db := &d.Databases[i]
		add(db.Mount)
		for _, sfx := range sidecarSuffixes {
			add(db.SidecarMounts[sfx])
		}
	}
	return out
}
