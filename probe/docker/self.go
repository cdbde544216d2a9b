package docker

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// containerRoot matches the mountinfo root of the files an engine bind
// mounts at /etc/hostname, /etc/hosts and /etc/resolv.conf: Docker's
// <data-root>/containers/<id>/hostname and Podman's
// .../overlay-containers/<id>/userdata/hostname. A CRI sandbox path
// (.../sandboxes/<id>/hostname) does not match: that id is not a container's.
var containerRoot = regexp.MustCompile(`/(?:containers|overlay-containers)/([0-9a-f]{64})/(?:userdata/)?(?:hostname|hosts|resolv\.conf)$`)

// ContainerIDFromMounts returns our container id from a mount table: the
// id in the root field of the /etc/hostname mount, else /etc/hosts, else
// /etc/resolv.conf. It returns "" when none matches (not in a container, or
// a table without root fields). Works with cgroup v1 and v2.
func ContainerIDFromMounts(t *mounts.Table) string {
	rank := map[string]int{"/etc/hostname": 1, "/etc/hosts": 2, "/etc/resolv.conf": 3}
	id, best := "", 4
	for _, m := range t.Mounts {
		r, ok := rank[m.Mountpoint]
		if !ok || r >= best {
			continue
		}
		if sm := containerRoot.FindStringSubmatch(m.Root); sm != nil {
			id, best = sm[1], r
		}
	}
	return id
}

// ContainerIDFromCgroup returns our container id from /proc/self/cgroup
// content: the innermost of ContainerIDsFromCgroup. Nested engines give
// /docker/<outer>/docker/<inner>; the innermost id is the container of
// the engine nearest to us. It returns "" when no line has one, as with
// cgroup v2 and a private cgroup namespace ("0::/").
func ContainerIDFromCgroup(r io.Reader) (string, error) {
	ids, err := ContainerIDsFromCgroup(r)
	if len(ids) == 0 {
		return "", err
	}
	return ids[len(ids)-1], err
}

// ContainerIDsFromCgroup returns the container ids in the first line of
// /proc/PID/cgroup content that has one, outermost first: each path
// element that is a 64-hex id, bare (/docker/<id>) or as a systemd scope
// (docker-<id>.scope, libpod-<id>.scope, cri-containerd-<id>.scope,
// crio-<id>.scope). The outermost is the container on the engine whose
// cgroup tree holds the path; an inner one is either a nested engine's
// container or a cgroup the process made inside its own container (a
// privileged container can name one after any container's id), so an
// inner id is only to be believed when the outer ones are unknown to the
// engine asked.
func ContainerIDsFromCgroup(r io.Reader) ([]string, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path (cgroups(7))
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		var ids []string
		for _, el := range strings.Split(parts[2], "/") {
			el = strings.TrimSuffix(el, ".scope")
			for _, pre := range []string{"docker-", "libpod-", "cri-containerd-", "crio-"} {
				el = strings.TrimPrefix(el, pre)
			}
			if isHexID(el) {
				ids = append(ids, el)
			}
		}
		if len(ids) > 0 {
			return ids, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read cgroup: %w", err)
	}
	return nil, nil
}

func isHexID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// isShortID reports whether s looks like Docker's default hostname, the
// first 12 hex digits of the container id.
func isShortID(s string) bool {
	if len(s) != 12 {
		return false
	}
	return isHexID(s + strings.Repeat("0", 52))
}

// localSelf is what this process can tell about its container without the
// engine.
type localSelf struct {
	id     string        // from mountinfo or cgroup
	how    string        // "mountinfo" or "cgroup"
	marker string        // "/.dockerenv" or "/run/.containerenv" when present
	table  *mounts.Table // our mount table; nil when unreadable
	// upperDir is the overlay upperdir of our root filesystem (the
	// container's writable layer, as the engine's GraphDriver.Data names
	// it); empty when / is not an overlay with one.
	upperDir string
}

// RootUpperDir returns the upperdir= option of the overlay mounted at / in
// t (the last such mount: the one on top), or "".
func RootUpperDir(t *mounts.Table) string {
	dir := ""
	for _, m := range t.Mounts {
		if m.Mountpoint != "/" || m.FSType != "overlay" {
			continue
		}
		dir = ""
		for _, o := range strings.Split(m.VFSOptions, ",") {
			if v, ok := strings.CutPrefix(o, "upperdir="); ok {
				dir = v
			}
		}
	}
	return dir
}

// exists reports whether name exists (not following a final symlink).
func exists(name string) bool {
	_, err := os.Lstat(name)
	return err == nil
}
