package docker

import (
	"os"

	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// readLocalSelf reads /proc/self/mountinfo, then /proc/self/cgroup, and
// checks /.dockerenv (Docker) and /run/.containerenv (Podman).
func readLocalSelf() localSelf {
	var s localSelf
	if t, err := mounts.ReadSelf(); err == nil {
		s.table = t
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

func exists(name string) bool {
	_, err := os.Lstat(name)
	return err == nil
}
