package docker

import (
	"os"
	"slices"

	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// readLocalSelf reads /proc/self/mountinfo (unless table is given), then
// /proc/self/cgroup, and checks /.dockerenv (Docker) and /run/.containerenv
// (Podman). Of the mount table it keeps the mounts that hold SelfFiles and
// each of paths (absolute, symlinks resolved): a host can have thousands of
// mounts, and this runs at every container start.
func readLocalSelf(table *mounts.Table, paths []string) localSelf {
	var s localSelf
	t, err := table, error(nil)
	if t == nil {
		t, err = mounts.ReadSelfFor(append(slices.Clone(SelfFiles), paths...), nil)
	}
	if err == nil {
		s.table = t
		s.upperDir = RootUpperDir(t)
		if id := ContainerIDFromMounts(t); id != "" {
			s.id, s.how = id, "mountinfo"
		}
	}
	if s.id == "" {
		if f, err := os.Open("/proc/self/cgroup"); err == nil {
			id, _ := ContainerIDFromCgroup(f)
			f.Close()
			if id != "" {
				s.id, s.how = id, "cgroup"
			}
		}
	}
	for _, m := range []string{"/.dockerenv", "/run/.containerenv"} {
		if exists(m) {
			s.marker = m
			break
		}
	}
	return s
}
