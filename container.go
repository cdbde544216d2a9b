package preflight

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// containerPath is a path as a container sees it, translated to this host.
type containerPath struct {
	// local is the host path to classify and inspect; empty when the data
	// is not reachable from this host (writable layer, tmpfs, or a bind
	// from a desktop VM's host).
	local string
	// mount is set when the classification comes from the container's
	// inspect rather than from this host's mount table.
	mount *mounts.Mount
}

// translate finds the mount of container c that holds p (a path inside the
// container) and maps p to this host. A path on no mount is in the
// container's writable layer; a bind mount on an engine whose binds cross a
// VM is cross-vm whatever this host's table says.
func translate(p string, c *docker.Container, eng *docker.Engine) containerPath {
	p = path.Clean(p)
	var best *docker.MountRef
	for i := range c.Mounts {
		m := &c.Mounts[i]
		d := path.Clean(m.Destination)
		if p == d || strings.HasPrefix(p, d+"/") || d == "/" {
			if best == nil || len(d) > len(path.Clean(best.Destination)) {
				best = m
			}
		}
	}
	em := mounts.EngineMount{Type: "", HasSource: true}
	if best != nil {
		em = mounts.EngineMount{Type: best.Type, Driver: best.Driver, HasSource: best.Source != ""}
	}
	if eng != nil && eng.CrossesVM {
		em.VM = mounts.EngineInVM
	}
	class, why := mounts.EngineClass(em)
	if why == mounts.WhyHost {
		return containerPath{local: filepath.Join(best.Source, strings.TrimPrefix(p, path.Clean(best.Destination)))}
	}
	m := &mounts.Mount{Class: class}
	var dest string
	if best != nil {
		dest = path.Clean(best.Destination)
	}
	switch why {
	case mounts.WhyWritableLayer:
		m.Mountpoint, m.FSType, m.Source = "/", "overlay", "overlay"
		m.Reason = fmt.Sprintf("%s is on no mount of container %s: the container's writable layer; locks and shared memory work, but the data goes when the container is removed", p, c.Name)
	case mounts.WhyTmpfs:
		m.Mountpoint, m.FSType, m.Source = dest, "tmpfs", "tmpfs"
		m.Reason = fmt.Sprintf("tmpfs mount at %s in container %s: the data goes when the container stops", dest, c.Name)
	case mounts.WhyVMBind:
		m.Mountpoint, m.FSType, m.Source, m.Platform = dest, "bind", best.Source, eng.Kind
		m.Reason = fmt.Sprintf("bind mount of host path %s into container %s on %s: the engine runs in a VM, so the share crosses the VM boundary; POSIX locks and the -shm shared memory are not coherent across it", best.Source, c.Name, eng.Kind)
	case mounts.WhyRemoteDriver:
		m.Mountpoint, m.FSType, m.Source = dest, "volume", best.Name
		m.Reason = fmt.Sprintf("volume %s uses driver %s: it may live on a network filesystem", best.Name, best.Driver)
	case mounts.WhyVMVolume:
		m.Mountpoint, m.FSType, m.Source, m.Platform = dest, "volume", best.Name, eng.Kind
		m.Reason = fmt.Sprintf("named volume %s inside the %s VM: a disk filesystem of the VM's kernel, where the container runs", best.Name, eng.Kind)
	case mounts.WhyNoSource:
		m.Mountpoint, m.FSType = dest, best.Type
		m.Reason = fmt.Sprintf("%s mount at %s in container %s has no host source", best.Type, dest, c.Name)
	default: // an engine known to be native or in a VM, no driver options: not reached
		m.Mountpoint, m.FSType, m.Source = dest, best.Type, best.Source
		m.Reason = fmt.Sprintf("%s mount at %s in container %s: %s", best.Type, dest, c.Name, class)
	}
	return containerPath{mount: m}
}

// inspectContainer resolves opts.Container and translates every path, and
// adds each of the container's own mounts below a path (a volume or bind
// mounted inside the data directory): those are other filesystems, which
// the host path of the outer mount does not show. It returns the paths
// checked, in the container's terms, and their translations.
func inspectContainer(ctx context.Context, r *Report, opts Options) ([]string, []containerPath, error) {
	c, eng, err := docker.InspectContainer(ctx, opts.Container, opts.Writers.Docker)
	if err != nil {
		return nil, nil, fmt.Errorf("check container %s: %w", opts.Container, err)
	}
	r.Engine = eng
	r.Container = c
	var paths []string
	var out []containerPath
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			paths = append(paths, p)
			out = append(out, translate(p, c, eng))
		}
	}
	for _, p := range opts.Paths {
		if !path.IsAbs(p) {
			return nil, nil, fmt.Errorf("check %s in container %s: %w", p, opts.Container, ErrRelativePath)
		}
		p = path.Clean(p)
		add(p)
		for _, m := range c.Mounts {
			if d := path.Clean(m.Destination); strings.HasPrefix(d, p+"/") || p == "/" && d != "/" {
				add(d)
			}
		}
	}
	return paths, out, nil
}
