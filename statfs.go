package preflight

import (
	"github.com/preflight-sqlite/preflight/policy"
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
	if !w.Agrees && w.Class != "" && policy.Riskier(w.Class, m.Class) {
		m.Reason += "; but statfs(2) reports " + w.String() + ", which the mount table does not show, so it is judged " + string(w.Class)
		m.Class = w.Class
	}
}
