package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/preflight-sqlite/preflight/internal/fsbound"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// Probe finds the other containers that write the data at dataPaths
// (absolute paths in this process's mount namespace), within
// opts.Timeout (default 2s).
//
// Inside a container it finds our own container: the id in the mountinfo
// root of /etc/hostname, /etc/hosts or /etc/resolv.conf (SelfHow
// "mountinfo"), else in /proc/self/cgroup ("cgroup"), else $HOSTNAME as a
// short id or name whose inspect shows that hostname ("hostname"). It then
// finds, in our inspect, the mount holding each data path (the path may be
// below the mount's destination), lists all containers once, and reports
// every other running, restarting or paused container that mounts the
// same volume, or a bind source equal to, inside or containing ours,
// read-write, in Writers, and every such stopped container in Stopped.
// Our own container is never reported.
//
// On a host (no container found), data paths are host paths and every
// container reaching them is reported.
//
// Failures are values: Status says what happened and Err why; Writers is
// then empty and Sure false (except "no-daemon", see Result.Sure).
func Probe(ctx context.Context, dataPaths []string, opts Options) Result {
	if opts.Mode == ModeOff {
		return Result{Status: StatusOff, Writers: []Writer{}}
	}
	ctx, cancel := context.WithTimeout(ctx, opts.timeout())
	defer cancel()

	resolved := make([]string, len(dataPaths))
	for i, p := range dataPaths {
		resolved[i] = resolve(p)
	}
	var local localSelf
	if !opts.HostPaths {
		local = readLocalSelf(opts.MountTable, resolved)
	}
	res := Result{Writers: []Writer{}, InContainer: local.id != "", SelfID: local.id}
	c, ok := start(ctx, &res, opts)
	if !ok {
		return res
	}
	defer c.close()

	var self *Container
	var notFound string // why findSelf found no container, when it says
	if local.id != "" || local.marker != "" {
		var how string
		var err error
		self, how, err = c.findSelf(ctx, local, opts.env())
		if err != nil {
			res.fail(c, err, local.id != "")
			return res
		}
		if self != nil {
			res.Self, res.SelfHow, res.InContainer = self, how, true
		} else {
			notFound = how
		}
	}
	// Volumes that are bind mounts of a host directory in disguise: their
	// writers include every container that binds that directory.
	vf, derr := c.volumes(ctx)
	if derr != nil {
		res.note(derr.Error() + " (a volume that binds a host directory is compared by name only)")
	}
	var targets []target
	sure := true
	switch {
	case self != nil:
		targets, sure = selfTargets(ctx, dataPaths, resolved, local.table, self, vf.devices, &res)
	case local.id != "":
		// In a container the engine does not know (another engine, a pod
		// sandbox): we cannot tell where our data comes from.
		res.note(fmt.Sprintf("own container %s (from %s) not found on the engine%s", short(local.id), local.how, notFound))
		sure = false
	default:
		for i, p := range dataPaths {
			hp := resolved[i]
			targets = append(targets, target{label: p, hostPath: hp, mountSource: hp})
		}
	}
	if len(targets) > 0 {
		found, ok := c.probeTargets(ctx, &res, targets, local, self, vf, derr)
		if !ok {
			return res
		}
		sure = sure && found
	}
	res.Status = StatusRan
	res.Sure = sure
	return res
}

// note appends one phrase to r.Err.
func (r *Result) note(s string) {
	r.Err = strings.TrimPrefix(r.Err+"; "+s, "; ")
}

// selfTargets maps each data path to the mount of our own container that
// holds it (Result.Paths) and returns the targets whose writers are looked
// for: those on a volume or a bind (a tmpfs, or the writable layer, is
// private to our container). sure is false when a data path is on a volume
// whose driver is not local (containers on other hosts may mount it) or a
// mount destination did not answer.
func selfTargets(ctx context.Context, dataPaths, resolved []string, table *mounts.Table, self *Container, devices map[string]string, res *Result) (targets []target, sure bool) {
	sure = true
	destCache := map[string]string{}
	for i, p := range dataPaths {
		rp := resolved[i]
		mp := ""
		if table != nil {
			if m, err := table.Find(rp); err == nil {
				mp = m.Mountpoint
			}
		}
		ps := sourceOf(rp, mp, self.Mounts)
		if ps.Mount == nil && mp != "" && mp != "/" {
			// The engine reports destinations as written; in the image
			// one may be a symlink (/data -> /srv/data), and the mount
			// is then where the symlink points.
			ms, answered := resolvedDestinations(ctx, self.Mounts, destCache)
			if ps = sourceOf(rp, mp, ms); ps.Mount == nil && !answered {
				sure = false
				res.note("a mount destination of this container did not answer: where " + p + " lives is unknown")
			}
		}
		ps.Path = p
		res.Paths = append(res.Paths, ps)
		if ps.Mount == nil || ps.Mount.Type == MountTmpfs {
			continue // private to our container
		}
		if ps.Mount.Type == MountVolume && ps.Mount.Driver != "" && ps.Mount.Driver != "local" {
			sure = false // containers on other hosts may mount it
		}
		t := target{label: p, hostPath: ps.HostPath}
		if ps.Mount.Source != "" {
			t.mountSource = path.Clean(ps.Mount.Source)
		}
		if ps.Mount.Type == MountVolume {
			t.volume = ps.Mount.Name
			if dev := devices[t.volume]; dev != "" {
				t.mountSource = dev
				t.hostPath = path.Join(dev, strings.TrimPrefix(ps.HostPath, path.Clean(ps.Mount.Source)))
			}
		}
		targets = append(targets, t)
	}
	return targets, sure
}

// probeTargets lists the containers (and, on a Swarm manager, the
// services) and fills res.Writers, res.Stopped and res.Swarm for targets.
// sure says whether that answer is complete; ok is false after a failed
// container list, recorded in res.
func (c *conn) probeTargets(ctx context.Context, res *Result, targets []target, local localSelf, self *Container, vf volumeFacts, derr error) (sure, ok bool) {
	list, stopped, err := c.list(ctx)
	if err != nil {
		res.fail(c, err, res.InContainer)
		return false, false
	}
	selfID := ""
	if self != nil {
		selfID = self.ID
	}
	hr := newHostResolver(ctx, res.Endpoint, local, self)
	src := sources{resolve: hr.resolve(), devices: vf.devices, same: hr.same()}
	if self == nil {
		// Host paths: one under a volume's mountpoint is that volume.
		for i := range targets {
			targets[i].volume = vf.volumeAt(targets[i].hostPath, src.resolve)
		}
	}
	sure = c.match(ctx, res, matchInput{list, stopped, selfID, targets, src, vf, hr, derr})
	if self == nil && local.id == "" && local.marker != "" && !c.onEngineHost(ctx, list, stopped) {
		// A marker file but no container id, and $HOSTNAME is no
		// container: most likely a host (or VM) built from a container
		// image, but we cannot be sure, and there are containers whose
		// mounts we compared with our paths as if they were host paths.
		res.note(fmt.Sprintf("%s exists but no container id was found, and the engine's data root is not visible here; data paths taken as host paths", local.marker))
		sure = false
	}
	return sure, true
}

// matchInput is what match compares: the engine's running and stopped
// containers, our own container's ID ("" when none is left out), the
// targets, and what resolves their sources.
type matchInput struct {
	list, stopped []container.Summary
	selfID        string
	targets       []target
	src           sources
	vf            volumeFacts
	hr            *hostResolver
	// derr is the volume list's error, if any.
	derr error
}

// match fills res.Writers, res.Stopped and res.Swarm from in, and reports
// whether that answer is sure: not when the volume list failed while
// volumes are involved, the Swarm facts could not be had, or a host path
// did not answer.
func (c *conn) match(ctx context.Context, res *Result, in matchInput) (sure bool) {
	res.Writers = findWriters(in.list, in.selfID, in.targets, in.src)
	res.Stopped = findWriters(in.stopped, in.selfID, in.targets, in.src)
	sure = true
	if in.derr != nil && volumesInvolved(in.targets, in.list) {
		sure = false // a volume may bind the same directory as a bind mount
	}
	if res.Swarm = c.swarmFacts(ctx, in.targets, in.src, in.vf, in.selfID); res.Swarm != nil && res.Swarm.Err != "" {
		sure = false
		res.note(res.Swarm.Err)
	}
	if stuck := in.hr.stuck(); stuck != "" {
		sure = false
		res.note(stuck)
	}
	return sure
}

// WritersOf lists the running, restarting and paused containers that mount
// volume (a volume name) or hostPath (a path on the engine host; a bind
// source equal to it, inside it or containing it, or the mountpoint of a
// local volume that holds it: that volume) read-write, for use on a host,
// and in Stopped the other containers that do. Either may be empty. When
// this process runs in a container found from mountinfo or cgroup, that
// container is left out. A volume the engine's volume list does not hold
// sets NoSuchVolume (Status "ran", nothing listed).
func WritersOf(ctx context.Context, volume, hostPath string, opts Options) Result {
	if opts.Mode == ModeOff {
		return Result{Status: StatusOff, Writers: []Writer{}}
	}
	ctx, cancel := context.WithTimeout(ctx, opts.timeout())
	defer cancel()

	local := readLocalSelf(opts.MountTable, nil)
	res := Result{Writers: []Writer{}, InContainer: local.id != ""}
	c, ok := start(ctx, &res, opts)
	if !ok {
		return res
	}
	defer c.close()

	vf, derr := c.volumes(ctx)
	if derr != nil {
		res.Err = derr.Error() + " (a volume that binds a host directory is compared by name only)"
	}
	if volume != "" && derr == nil && !vf.names[volume] {
		res.Status, res.Sure, res.NoSuchVolume = StatusRan, true, true
		return res
	}
	var targets []target
	if volume != "" {
		t := target{label: volume, volume: volume}
		if dev := vf.devices[volume]; dev != "" {
			t.hostPath, t.mountSource = dev, dev
		}
		targets = append(targets, t)
	}
	hr := newHostResolver(ctx, res.Endpoint, local, nil)
	src := sources{resolve: hr.resolve(), devices: vf.devices, same: hr.same()}
	if hostPath != "" {
		hp := resolve(hostPath)
		targets = append(targets, target{label: hostPath, volume: vf.volumeAt(hp, src.resolve), hostPath: hp, mountSource: hp})
	}
	if len(targets) == 0 {
		res.Status, res.Sure = StatusRan, true
		return res
	}
	list, stopped, err := c.list(ctx)
	if err != nil {
		res.fail(c, err, res.InContainer)
		return res
	}
	// Our own container is left out, once the engine confirms which it
	// is (the hostname files may be another's whose network we joined);
	// unconfirmed, nothing is left out and the answer is not sure.
	selfID, sure := "", true
	if local.id != "" {
		self, _, err := c.findSelf(ctx, local, opts.env())
		switch {
		case err != nil:
			res.fail(c, err, true)
			return res
		case self != nil:
			selfID = self.ID
		default:
			sure = false
			res.Err = strings.TrimPrefix(res.Err+"; "+fmt.Sprintf("own container %s (from %s) not confirmed by the engine: it is not left out", short(local.id), local.how), "; ")
		}
	}
	if !c.match(ctx, &res, matchInput{list, stopped, selfID, targets, src, vf, hr, derr}) {
		sure = false
	}
	res.Status, res.Sure = StatusRan, sure
	return res
}

// InspectContainer inspects the container nameOrID (a name, full id or
// unique id prefix) and returns it with its mounts, and the engine, within
// opts.Timeout. Errors wrap ErrNotFound, ErrNoDaemon, ErrDenied or
// ErrUnreachable where they apply.
func InspectContainer(ctx context.Context, nameOrID string, opts Options) (*Container, *Engine, error) {
	ctx, cancel := context.WithTimeout(ctx, opts.timeout())
	defer cancel()
	var res Result
	c, ok := start(ctx, &res, opts)
	if !ok {
		return nil, nil, errorOf(res)
	}
	defer c.close()
	r, err := c.cli.ContainerInspect(ctx, nameOrID, client.ContainerInspectOptions{})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, res.Engine, fmt.Errorf("inspect container %s: %w", nameOrID, ErrNotFound)
		}
		st := c.classify(err, false)
		if s := sentinel(st); s != nil {
			return nil, res.Engine, fmt.Errorf("inspect container %s: %w: %w", nameOrID, s, err)
		}
		return nil, res.Engine, fmt.Errorf("inspect container %s: %w", nameOrID, err)
	}
	return fromInspect(&r.Container), res.Engine, nil
}

// start discovers the endpoint, connects and reads the engine, filling res.
// On failure res carries the status and error.
func start(ctx context.Context, res *Result, opts Options) (*conn, bool) {
	ep, err := Discover(opts)
	res.Endpoint = ep
	if err != nil {
		res.Status, res.Err = StatusFailed, err.Error()
		return nil, false
	}
	c, err := connect(ep, opts.timeout())
	if err != nil {
		res.Status, res.Err = StatusFailed, err.Error()
		return nil, false
	}
	e, err := c.engine(ctx)
	if err != nil {
		c.close()
		res.fail(c, err, res.InContainer)
		return nil, false
	}
	res.Engine = e
	return c, true
}

// fail records a failed call: its status, and in Err one short phrase
// naming the endpoint and the cause.
func (r *Result) fail(c *conn, err error, inContainer bool) {
	r.Status = c.classify(err, inContainer)
	r.Err = err.Error()
	host, dialErr := r.Endpoint.Host, c.dialErrValue()
	var ne net.Error
	switch {
	case r.Status == StatusNoDaemon:
		r.Err = fmt.Sprintf("no docker socket at %s", host)
		r.Sure = true
	case errors.Is(dialErr, os.ErrNotExist) && inContainer:
		r.Err = fmt.Sprintf("no docker socket at %s inside this container", host)
	case errors.Is(dialErr, os.ErrNotExist):
		r.Err = fmt.Sprintf("no socket at %s, from %s: that engine is down or gone", host, r.Endpoint.Source)
	case dialErr != nil:
		r.Err = fmt.Sprintf("connect to %s: %v", host, innermost(dialErr))
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		r.Err = fmt.Sprintf("no answer from %s within %s", host, c.timeout)
	}
	r.Writers = []Writer{}
}

// innermost is the last error in err's Unwrap chain (for a dial error:
// "connection refused", "permission denied").
func innermost(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

func (c *conn) dialErrValue() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dialErr
}

func errorOf(r Result) error {
	if s := sentinel(r.Status); s != nil {
		return fmt.Errorf("%w: %s", s, r.Err)
	}
	return errors.New(r.Err)
}

// list lists every container with its mounts, in one GET
// /containers/json?all=1, and splits them into live ones (running,
// restarting, paused: they may write now) and stopped ones (created,
// exited, dead: they write once started).
func (c *conn) list(ctx context.Context) (live, stopped []container.Summary, err error) {
	r, err := c.cli.ContainerList(ctx, client.ContainerListOptions{All: true})
	if err != nil {
		return nil, nil, fmt.Errorf("list containers: %w", err)
	}
	for _, s := range r.Items {
		switch s.State {
		case container.StateRunning, container.StateRestarting, container.StatePaused:
			live = append(live, s)
		default:
			stopped = append(stopped, s)
		}
	}
	return live, stopped, nil
}

// volumesInvolved reports whether a target is on a volume or a listed
// container mounts a local volume: without the volume list, one of those
// may be a bind of the same directory in disguise.
func volumesInvolved(targets []target, list []container.Summary) bool {
	for _, t := range targets {
		if t.volume != "" {
			return true
		}
	}
	for _, s := range list {
		for _, m := range s.Mounts {
			if string(m.Type) == MountVolume && (m.Driver == "" || m.Driver == "local") {
				return true
			}
		}
	}
	return false
}

// volumeFacts is what GET /volumes says about the engine's volumes.
type volumeFacts struct {
	// devices maps every local volume that is a bind mount of a host
	// directory in disguise (driver_opts type none, o bind, device DIR)
	// to its device directory.
	devices map[string]string
	// mountpoints maps every local volume to its Mountpoint on the engine
	// host (/var/lib/docker/volumes/NAME/_data by default).
	mountpoints map[string]string
	// names holds every volume, whatever its driver.
	names map[string]bool
	// shared holds every volume that names storage other hosts reach too:
	// a driver that is not local, or a local one whose driver_opts type is
	// a network filesystem (nfs, nfs4, cifs, smb, ceph, glusterfs).
	shared map[string]bool
}

// volumes lists the engine's volumes in one GET /volumes. An engine that
// does not answer (a socket proxy that denies /volumes) gives empty facts
// and the reason.
func (c *conn) volumes(ctx context.Context) (volumeFacts, error) {
	f := volumeFacts{devices: map[string]string{}, mountpoints: map[string]string{}, names: map[string]bool{}, shared: map[string]bool{}}
	r, err := c.cli.VolumeList(ctx, client.VolumeListOptions{})
	if err != nil {
		return volumeFacts{}, fmt.Errorf("list volumes: %w", err)
	}
	for _, v := range r.Items {
		f.names[v.Name] = true
		if sharedDriver(v.Driver, v.Options) {
			f.shared[v.Name] = true
		}
		if v.Driver != "local" {
			continue
		}
		if v.Mountpoint != "" {
			f.mountpoints[v.Name] = path.Clean(v.Mountpoint)
		}
		if v.Options["device"] != "" && slices.Contains(strings.Split(v.Options["o"], ","), "bind") {
			f.devices[v.Name] = path.Clean(v.Options["device"])
		}
	}
	return f, nil
}

// volumeAt returns the local volume whose mountpoint is hostPath or holds
// it, or "" (the deepest when mountpoints nest): on the engine host, a
// path under /var/lib/docker/volumes/NAME/_data is that named volume.
// Mountpoints are also compared resolved when resolve is not nil (a data
// root reached through a symlink).
func (f volumeFacts) volumeAt(hostPath string, resolve func(string) string) string {
	best, bestLen := "", -1
	for name, mp := range f.mountpoints {
		for _, d := range []string{mp, resolvedOr(mp, resolve)} {
			if (hostPath == d || within(hostPath, d)) && (len(d) > bestLen || len(d) == bestLen && name < best) {
				best, bestLen = name, len(d)
			}
		}
	}
	return best
}

func resolvedOr(p string, resolve func(string) string) string {
	if resolve == nil {
		return p
	}
	return resolve(p)
}

// findSelf inspects our container by the id found locally, else by
// $HOSTNAME (or the kernel hostname) confirmed by the inspect's
// Config.Hostname. It returns nil without error when the engine does not
// know us.
func (c *conn) findSelf(ctx context.Context, local localSelf, env func(string) string) (*Container, string, error) {
	if local.id != "" {
		r, err := c.cli.ContainerInspect(ctx, local.id, client.ContainerInspectOptions{})
		if err == nil {
			up := upperDirOf(&r.Container)
			if local.upperDir == "" || up == "" || up == local.upperDir {
				return fromInspect(&r.Container), local.how, nil
			}
			// The hostname files are that container's but the root
			// filesystem is not: we share its network namespace
			// (--network container:X, compose network_mode: service:X),
			// and are one of the containers that joined it.
			return c.joinedSelf(ctx, r.Container.ID, local.upperDir)
		}
		if !cerrdefs.IsNotFound(err) {
			return nil, "", fmt.Errorf("inspect own container %s: %w", short(local.id), err)
		}
	}
	if local.id == "" && local.marker == "" {
		return nil, "", nil
	}
	h := env("HOSTNAME")
	if h == "" {
		h, _ = os.Hostname()
	}
	if h == "" {
		return nil, "", nil
	}
	r, err := c.cli.ContainerInspect(ctx, h, client.ContainerInspectOptions{})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, "", nil
		}
		return nil, "", fmt.Errorf("inspect own container %s: %w", h, err)
	}
	ct := r.Container
	confirmed := ct.Config != nil && ct.Config.Hostname == h
	if isShortID(h) && !strings.HasPrefix(ct.ID, h) {
		confirmed = false
	}
	if local.id != "" && ct.ID != local.id {
		confirmed = false
	}
	if !confirmed {
		return nil, "", nil
	}
	return fromInspect(&ct), "hostname", nil
}

// joinedSelf finds our container, whose hostname files are those of
// container id, among the containers that joined another's network
// namespace (directly or through a chain), by the overlay upperdir of our
// root filesystem. It returns nil without error when none matches, with
// how many it looked at: our container is then unknown, and the caller
// says so.
func (c *conn) joinedSelf(ctx context.Context, id, upperDir string) (*Container, string, error) {
	list, _, err := c.list(ctx)
	if err != nil {
		return nil, "", err
	}
	joined := 0
	for i := range list {
		s := &list[i]
		if !strings.HasPrefix(s.HostConfig.NetworkMode, "container:") {
			continue // only a container that joined a network namespace, directly or through a chain
		}
		joined++
		r, err := c.cli.ContainerInspect(ctx, s.ID, client.ContainerInspectOptions{})
		if ctx.Err() != nil {
			// Out of time: say so, rather than that no container is ours.
			return nil, "", fmt.Errorf("find own container among those in another's network namespace: %w", context.Cause(ctx))
		}
		if err != nil {
			continue // gone since the list
		}
		if upperDirOf(&r.Container) == upperDir {
			return fromInspect(&r.Container), "mountinfo, network namespace of " + short(id), nil
		}
	}
	return nil, fmt.Sprintf(": its hostname files are those of %s, and none of the %d running containers that joined a network namespace has our root filesystem (upperdir %s)", short(id), joined, upperDir), nil
}

// upperDirOf is the container's writable layer directory from its
// GraphDriver data (overlay2), or "".
func upperDirOf(r *container.InspectResponse) string {
	if r.GraphDriver == nil {
		return ""
	}
	return r.GraphDriver.Data["UpperDir"]
}

// resolvedDestinations returns ms with each destination resolved in our
// own filesystem (symlinks in the image), each within sourceTimeout; one
// that does not answer is kept as written and answered is false. cache
// keeps the answers across calls ("" for one that did not answer).
func resolvedDestinations(ctx context.Context, ms []MountRef, cache map[string]string) (out []MountRef, answered bool) {
	answered = true
	out = make([]MountRef, len(ms))
	for i, m := range ms {
		d, seen := cache[m.Destination]
		if !seen {
			if r, ok := resolveWithin(ctx, m.Destination, sourceTimeout); ok {
				d = r
			}
			cache[m.Destination] = d
		}
		if d == "" {
			answered = false
		} else {
			m.Destination = d
		}
		out[i] = m
	}
	return out, answered
}

// resolveWithin is resolve(p) within timeout; on a filesystem that does not
// answer it returns p and false.
func resolveWithin(ctx context.Context, p string, timeout time.Duration) (string, bool) {
	if r, ok := fsbound.Within(ctx, timeout, func() string { return resolve(p) }); ok {
		return r, true
	}
	return p, false
}

// hostResolver resolves bind sources on this machine when it is the
// engine's host (a unix socket, no container of ours): the engine reports a
// bind source as the user wrote it, symlinks included, and our data paths
// are resolved. Elsewhere the host's symlinks cannot be read from here and
// sources are compared as written. Each source is resolved once, in its own
// goroutine, within the caller's deadline: a source on a filesystem that
// stops answering (a stuck FUSE daemon, a dead NFS server) is compared as
// written and named by stuck.
type hostResolver struct {
	ctx     context.Context
	on      bool
	cache   map[string]string
	stats   map[string]os.FileInfo // same's
	noReply []string
	late    bool // asked after the deadline: sources compared as written
}

// sourceTimeout bounds the resolution of one bind source.
const sourceTimeout = 500 * time.Millisecond

func newHostResolver(ctx context.Context, ep Endpoint, local localSelf, self *Container) *hostResolver {
	on := self == nil && local.id == "" && strings.HasPrefix(ep.Host, "unix://")
	return &hostResolver{ctx: ctx, on: on, cache: map[string]string{}}
}

// resolve returns the function findWriters calls, or nil when sources are
// compared as written.
func (h *hostResolver) resolve() func(string) string {
	if !h.on {
		return nil
	}
	return func(p string) string {
		if r, ok := h.cache[p]; ok {
			return r
		}
		if h.ctx.Err() != nil {
			h.late = true
			return p // past the deadline: compared as written
		}
		r, ok := resolveWithin(h.ctx, p, sourceTimeout)
		if !ok {
			h.noReply = append(h.noReply, p)
		}
		h.cache[p] = r
		return r
	}
}

// same returns the function relation compares host paths by identity
// with (os.SameFile, each path stated once within sourceTimeout, none
// once the deadline passed: then stuck says so), or nil when sources are
// compared as written.
func (h *hostResolver) same() func(a, b string) bool {
	if !h.on {
		return nil
	}
	if h.stats == nil {
		h.stats = map[string]os.FileInfo{}
	}
	stat := func(p string) os.FileInfo {
		if fi, ok := h.stats[p]; ok {
			return fi
		}
		if h.ctx.Err() != nil {
			h.late = true
			return nil
		}
		fi, ok := fsbound.Within(h.ctx, sourceTimeout, func() os.FileInfo {
			fi, _ := os.Stat(p)
			return fi
		})
		if !ok {
			h.noReply = append(h.noReply, p)
		}
		h.stats[p] = fi
		return fi
	}
	return func(a, b string) bool {
		fa, fb := stat(a), stat(b)
		return fa != nil && fb != nil && os.SameFile(fa, fb)
	}
}

// stuck names the bind sources that did not answer, or "".
func (h *hostResolver) stuck() string {
	var why []string
	if len(h.noReply) > 0 {
		why = append(why, fmt.Sprintf("bind source %s of a container did not answer within %s: compared as written, without resolving symlinks", strings.Join(h.noReply, ", "), sourceTimeout))
	}
	if h.late {
		why = append(why, "the deadline passed before every bind source was resolved and compared with the data by device and inode: the others compared as written")
	}
	return strings.Join(why, "; ")
}

// resolve makes p absolute and resolves symlinks in its existing part.
func resolve(p string) string {
	if rp, err := mounts.ResolvePath(p); err == nil {
		return filepath.ToSlash(rp)
	}
	return path.Clean(filepath.ToSlash(p))
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// onEngineHost reports whether this process sees the engine's data root
// (GET /info DockerRootDir): its containers/<id> directory exists here for
// the first listed container, looked at within sourceTimeout. With no
// container at all it is true: no mount was compared, so who we are does
// not change the answer. Without a data root (/info denied, an engine
// that does not report one) it is false.
func (c *conn) onEngineHost(ctx context.Context, live, stopped []container.Summary) bool {
	all := append(slices.Clone(live), stopped...)
	if len(all) == 0 {
		return true
	}
	if c.rootDir == "" || !path.IsAbs(c.rootDir) {
		return false
	}
	seen, answered := fsbound.Within(ctx, sourceTimeout, func() bool {
		return exists(path.Join(c.rootDir, "containers", all[0].ID))
	})
	return seen && answered
}
