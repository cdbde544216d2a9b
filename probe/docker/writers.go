package docker

import (
	"path"
	"strings"

	"github.com/preflight-sqlite/preflight/internal/shell"

	"github.com/moby/moby/api/types/container"
)

// target is one piece of data whose writers we look for.
type target struct {
	label       string // Writer.Path
	volume      string // volume name; "" when the data is not on a volume
	hostPath    string // engine-host path of the data; "" when unknown
	mountSource string // engine-host source of the mount holding it (== hostPath on a host)
}

// relation says how mount m of another container reaches t, or "" when it
// does not or is read-only. Paths are the engine's (slash-separated). The
// source compared is src(m) (see sources.of).
func relation(t target, m MountRef, src sources) string {
	if !m.RW || m.Type == MountTmpfs {
		return ""
	}
	if t.volume != "" && m.Type == MountVolume && m.Name == t.volume {
		return SameVolume
	}
	s := src.of(m)
	if t.hostPath == "" || s == "" {
		return ""
	}
	same := s == t.mountSource || s == t.hostPath
	contains, inside := within(t.hostPath, s), within(s, t.hostPath)
	if !same && !contains && !inside && src.same != nil {
		// Other paths may still be one directory: a bind mount of it
		// elsewhere (mount --bind), compared by device and inode.
		same = src.same(s, t.hostPath)
		contains = !same && src.under(t.hostPath, s)
		inside = !same && !contains && src.under(s, t.hostPath)
	}
	switch {
	case same:
		if m.Type == MountVolume && src.devices[m.Name] == "" {
			return SameVolume
		}
		return SameBindSource
	case contains:
		if m.Type == MountVolume && src.devices[m.Name] == "" {
			// Our data is inside that volume's mountpoint: the volume
			// (when the volume list was denied, or a volume's mountpoint
			// was given below its _data directory).
			return SameVolume
		}
		return BindContainsOurs
	case inside:
		return BindInsideOurs
	}
	return ""
}

// sources gives the host directory a container mount really uses.
type sources struct {
	// resolve, when not nil, resolves a host path on this machine (the
	// engine reports a bind source as the user wrote it).
	resolve func(string) string
	// devices maps a local volume that is a bind mount of a host
	// directory (driver_opts o: bind, device: DIR) to that directory; the
	// engine reports such a volume's source as its _data directory.
	devices map[string]string
	// same, when not nil, reports whether two host paths on this machine
	// are one file or directory (device and inode), whatever their paths.
	same func(a, b string) bool
}

// maxAliasDepth is how many directories above a path under looks at: a
// real bind source is not nested deeper below the data directory, and an
// engine's answer cannot make each of its sources cost more stats.
const maxAliasDepth = 32

// under reports whether one of the maxAliasDepth directories above p (by
// its path) is dir by device and inode (src.same).
func (s sources) under(p, dir string) bool {
	x := p
	for range maxAliasDepth {
		if x == "/" || x == "." {
			return false
		}
		x = path.Dir(x)
		if s.same(x, dir) {
			return true
		}
	}
	return false
}

// of returns the host path behind m: a bind's source (resolved when
// possible), a bind volume's device, or the engine's source.
func (s sources) of(m MountRef) string {
	src := path.Clean(m.Source)
	if m.Source == "" {
		return ""
	}
	if m.Type == MountVolume {
		if d := s.devices[m.Name]; d != "" {
			src = d
		} else {
			return src
		}
	}
	if s.resolve != nil {
		src = s.resolve(src)
	}
	return src
}

// within reports whether p is strictly below dir.
func within(p, dir string) bool {
	if dir == "/" {
		return p != "/"
	}
	return strings.HasPrefix(p, dir+"/")
}

// findWriters returns, for every target, each container other than selfID
// with a read-write mount that reaches it. Containers are taken in list
// order; one container is reported once per target (its first such mount).
// src gives the host path behind each mount (see sources).
func findWriters(list []container.Summary, selfID string, targets []target, src sources) []Writer {
	ws := []Writer{}
	for _, t := range targets {
		for i := range list {
			s := &list[i]
			if s.ID == selfID {
				continue
			}
			for _, mp := range s.Mounts {
				m := mountRef(mp)
				if rel := relation(t, m, src); rel != "" {
					ws = append(ws, Writer{Container: fromSummary(s), Mount: m, Relation: rel, Path: t.label})
					break
				}
			}
		}
	}
	return ws
}

func mountRef(mp container.MountPoint) MountRef {
	return MountRef{
		Type:        string(mp.Type),
		Name:        mp.Name,
		Source:      mp.Source,
		Destination: mp.Destination,
		Driver:      mp.Driver,
		RW:          mp.RW,
	}
}

func mountRefs(mps []container.MountPoint) []MountRef {
	out := make([]MountRef, 0, len(mps))
	for _, mp := range mps {
		out = append(out, mountRef(mp))
	}
	return out
}

func fromSummary(s *container.Summary) Container {
	c := Container{ID: s.ID, Image: s.Image, State: string(s.State), Mounts: mountRefs(s.Mounts)}
	if len(s.Names) > 0 {
		c.Name = strings.TrimPrefix(s.Names[0], "/")
	}
	c.setLabels(s.Labels)
	return c
}

func fromInspect(r *container.InspectResponse) *Container {
	c := &Container{ID: r.ID, Name: strings.TrimPrefix(r.Name, "/"), Image: r.Image, Mounts: mountRefs(r.Mounts)}
	if r.State != nil {
		c.State = string(r.State.Status)
	}
	if r.Config != nil {
		c.Image, c.User = r.Config.Image, r.Config.User
		c.setLabels(r.Config.Labels)
		for _, e := range r.Config.Env {
			if strings.HasPrefix(e, "DOCKER_HOST=") || strings.HasPrefix(e, "PREFLIGHT_") {
				c.Env = append(c.Env, e)
			}
		}
	}
	if r.HostConfig != nil {
		c.GroupAdd = r.HostConfig.GroupAdd
		for _, v := range r.HostConfig.VolumesFrom {
			name, _, _ := strings.Cut(v, ":")
			c.VolumesFrom = append(c.VolumesFrom, name)
		}
		c.Network = string(r.HostConfig.NetworkMode)
	}
	return c
}

// DockerHost is the DOCKER_HOST of c's environment (Env), empty without.
func (c *Container) DockerHost() string {
	for _, e := range c.Env {
		if v, ok := strings.CutPrefix(e, "DOCKER_HOST="); ok {
			return v
		}
	}
	return ""
}

func (c *Container) setLabels(l map[string]string) {
	c.SwarmService, c.SwarmTask = l[labelSwarmService], l[labelSwarmTask]
	// An image built by docker compose carries the project and service
	// labels too, and every container run from it inherits them; only a
	// container compose created has its config hash (or is a one-off run).
	if l[labelConfigHash] == "" && l[labelOneOff] == "" {
		return
	}
	c.ComposeProject = l[labelProject]
	c.ComposeService = l[labelService]
	c.OneOff = strings.EqualFold(l[labelOneOff], "true")
	c.ComposeDir = l[labelDir]
	if f := l[labelFiles]; f != "" {
		c.ComposeFiles = strings.Split(f, ",")
	}
}

// ComposeCommand is the start of a `docker compose` command line that
// reaches c's project from anywhere on the engine host: -p with the
// project name, and -f for each of its files (so services resolve as when
// it was started, overrides included).
func (c *Container) ComposeCommand() string {
	s := "docker compose -p " + shell.Quote(c.ComposeProject)
	for _, f := range c.ComposeFiles {
		s += " -f " + shell.Quote(f)
	}
	return s
}

// ComposeServiceArg is c's compose service as it follows a docker compose
// subcommand (stop, start, run's options) on a command line: one shell
// word, after "--" when it starts with '-' (so that a label such as
// "-h" or "x; rm -rf ~" names the service, never an option or a second
// command).
func (c *Container) ComposeServiceArg() string {
	q := shell.Quote(c.ComposeService)
	if strings.HasPrefix(c.ComposeService, "-") {
		return "-- " + q
	}
	return q
}

// sourceOf finds the mount of our container holding data path p (absolute,
// symlinks resolved). mountpoint is the deepest mountpoint over p from our
// own mount table, or "" when unknown; when it is known, only a mount with
// exactly that destination counts, so a data path on a mount the engine did
// not make (or on the writable layer) has no source. Without it, the
// longest destination prefix wins.
func sourceOf(p, mountpoint string, ms []MountRef) PathSource {
	ps := PathSource{Path: p}
	best := -1
	for i, m := range ms {
		d := path.Clean(m.Destination)
		if mountpoint != "" {
			if d == path.Clean(mountpoint) {
				best = i
			}
			continue
		}
		if (p == d || within(p, d)) && (best < 0 || len(d) > len(path.Clean(ms[best].Destination))) {
			best = i
		}
	}
	if best < 0 {
		return ps
	}
	m := ms[best]
	ps.Mount = &m
	if m.Source != "" && m.Type != MountTmpfs {
		rel := strings.TrimPrefix(p, path.Clean(m.Destination))
		ps.HostPath = path.Join(m.Source, rel)
	}
	return ps
}
