package docker

import (
	"context"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// inspectParallel is how many containers List inspects at once.
const inspectParallel = 8

// Volume is what GET /volumes says about one volume.
type Volume struct {
	Name   string `json:"name"`
	Driver string `json:"driver"`
	// Type is the local driver's driver_opts type (nfs, cifs, none, ...);
	// Device its device (a host directory for a bind volume, a remote
	// export for a network one).
	Type   string `json:"type,omitempty"`
	Device string `json:"device,omitempty"`
	// Mountpoint is the volume's directory on the engine host.
	Mountpoint string `json:"mountpoint,omitempty"`
	// NetworkFS is Type when it names a network filesystem (nfs, cifs,
	// ...), else "".
	NetworkFS string `json:"network_fs,omitempty"`
}

// Inventory is every container of one engine with its mounts, the
// engine's volumes and (on a Swarm manager) its services: one snapshot
// from which the writers of any engine-host path are found without asking
// the engine again.
type Inventory struct {
	// Status and Err are as in Result: StatusRan when the container list
	// was read.
	Status   string   `json:"status"`
	Err      string   `json:"error,omitempty"`
	Endpoint Endpoint `json:"endpoint"`
	Engine   *Engine  `json:"engine,omitempty"`
	// Containers are the running, restarting and paused containers (with
	// All, every container), sorted by name; each live one inspected for
	// its PID, which is 0 when the inspect failed (InspectErrors).
	Containers []Container `json:"containers"`
	// InspectErrors counts the live containers whose inspect failed.
	InspectErrors int `json:"inspect_errors,omitempty"`
	// Volumes are the engine's volumes by name; VolumesErr says why the
	// list is missing (a socket proxy that denies /volumes).
	Volumes    map[string]Volume `json:"-"`
	VolumesErr string            `json:"volumes_error,omitempty"`
	// OnEngineHost is true when this process sees the engine's data root
	// (its containers/ID directory for a listed container): the engine
	// host's paths, bind sources and volume directories, are ours.
	OnEngineHost bool `json:"on_engine_host"`
	// Swarm is this engine's node in a swarm (nil when in none), without
	// Services: those are matched per path by Writers.
	Swarm *Swarm `json:"swarm,omitempty"`

	live, stopped []container.Summary
	vf            volumeFacts
	derr          error
	sl            swarmLists
}

// ListOptions configure List.
type ListOptions struct {
	Options
	// All lists stopped containers (created, exited, dead) too.
	All bool
}

// List reads the engine's containers (GET /containers/json?all=1, then GET
// /containers/ID/json for each live one, a few at a time), volumes and
// Swarm services, within opts.Timeout. Failures are values, as in Probe:
// Status other than StatusRan means no container list.
func List(ctx context.Context, opts ListOptions) *Inventory {
	inv := &Inventory{Containers: []Container{}, Volumes: map[string]Volume{}}
	if opts.Mode == ModeOff {
		inv.Status = StatusOff
		return inv
	}
	ctx, cancel := context.WithTimeout(ctx, opts.timeout())
	defer cancel()
	var res Result
	c, ok := start(ctx, &res, opts.Options)
	inv.Endpoint, inv.Engine = res.Endpoint, res.Engine
	if !ok {
		inv.Status, inv.Err = res.Status, res.Err
		return inv
	}
	defer c.close()
	inv.vf, inv.derr = c.volumes(ctx)
	if inv.derr != nil {
		inv.VolumesErr = inv.derr.Error()
	}
	if err := inv.volumeList(ctx, c); err != nil && inv.VolumesErr == "" {
		inv.VolumesErr = err.Error()
	}
	live, stopped, err := c.list(ctx)
	if err != nil {
		res.fail(c, err, false)
		inv.Status, inv.Err = res.Status, res.Err
		return inv
	}
	inv.live, inv.stopped = live, stopped
	inv.OnEngineHost = c.onEngineHost(ctx, live, stopped)
	show := live
	if opts.All {
		show = append(slices.Clone(live), stopped...)
	}
	inv.Containers = make([]Container, len(show))
	for i := range show {
		inv.Containers[i] = fromSummary(&show[i])
	}
	inv.InspectErrors = c.pids(ctx, inv.Containers)
	// sort.Slice, not slices.SortFunc: each struct type sorted generically gets its own copy of the sort (about 11 KB of binary).
	sort.SliceStable(inv.Containers, func(i, j int) bool { return inv.Containers[i].Name < inv.Containers[j].Name })
	inv.Swarm, inv.sl = c.swarmLists(ctx)
	inv.Status = StatusRan
	return inv
}

// volumeList fills inv.Volumes (one more GET /volumes: volumeFacts keeps
// only what matching needs).
func (inv *Inventory) volumeList(ctx context.Context, c *conn) error {
	r, err := c.cli.VolumeList(ctx, client.VolumeListOptions{})
	if err != nil {
		return err
	}
	for _, v := range r.Items {
		vol := Volume{Name: v.Name, Driver: v.Driver, Type: v.Options["type"], Device: v.Options["device"], Mountpoint: v.Mountpoint}
		if slices.Contains(networkTypes, strings.ToLower(vol.Type)) {
			vol.NetworkFS = strings.ToLower(vol.Type)
		}
		inv.Volumes[v.Name] = vol
	}
	return nil
}

// pids inspects each running, restarting or paused container of cs for
// its PID (State.Pid), inspectParallel at a time; it returns how many
// inspects failed.
func (c *conn) pids(ctx context.Context, cs []Container) int {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed int
	)
	sem := make(chan struct{}, inspectParallel)
	for i := range cs {
		if cs[i].State != string(container.StateRunning) && cs[i].State != string(container.StatePaused) && cs[i].State != string(container.StateRestarting) {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(ct *Container) {
			defer func() { <-sem; wg.Done() }()
			r, err := c.cli.ContainerInspect(ctx, ct.ID, client.ContainerInspectOptions{})
			if err != nil || r.Container.State == nil {
				mu.Lock()
				failed++
				mu.Unlock()
				return
			}
			ct.PID = r.Container.State.Pid
			if hc := r.Container.HostConfig; hc != nil {
				ct.Mounts = withTmpfs(ct.Mounts, hc.Tmpfs)
			}
		}(&cs[i])
	}
	wg.Wait()
	return failed
}

// withTmpfs adds to ms a tmpfs mount for each destination of tmpfs
// (HostConfig.Tmpfs: the --tmpfs and compose tmpfs: mounts, which the
// engine leaves out of Mounts) that ms does not hold yet.
func withTmpfs(ms []MountRef, tmpfs map[string]string) []MountRef {
	dests := make([]string, 0, len(tmpfs))
	for d := range tmpfs {
		dests = append(dests, d)
	}
	slices.Sort(dests)
	for _, d := range dests {
		if !slices.ContainsFunc(ms, func(m MountRef) bool { return path.Clean(m.Destination) == path.Clean(d) }) {
			ms = append(ms, MountRef{Type: MountTmpfs, Destination: d, RW: true})
		}
	}
	return ms
}

// HostTarget is one piece of data on the engine host whose writers
// Writers looks for.
type HostTarget struct {
	// Label is the path Writer.Path and Service.Path carry.
	Label string
	// HostPath is the data's path on the engine host.
	HostPath string
	// Mount is the mount of the container being audited that holds it.
	Mount MountRef
}

// Writers is Probe's answer for targets from the inventory, without
// asking the engine again: every other container (not self, an ID) that
// mounts the same data read-write, live in Writers and stopped in Stopped,
// and the Swarm services whose tasks do. Sure is false when the volume
// list was denied while volumes are involved, or the Swarm lists are
// missing on a manager.
func (inv *Inventory) Writers(targets []HostTarget, self string) Result {
	res := Result{Status: inv.Status, Err: inv.Err, Endpoint: inv.Endpoint, Engine: inv.Engine, Writers: []Writer{}}
	if inv.Status != StatusRan {
		return res
	}
	ts := make([]target, 0, len(targets))
	for _, ht := range targets {
		t := target{label: ht.Label, hostPath: path.Clean(ht.HostPath)}
		if ht.Mount.Source != "" {
			t.mountSource = path.Clean(ht.Mount.Source)
		}
		if ht.Mount.Type == MountVolume {
			t.volume = ht.Mount.Name
			if dev := inv.vf.devices[t.volume]; dev != "" {
				t.mountSource = dev
				t.hostPath = path.Join(dev, strings.TrimPrefix(t.hostPath, path.Clean(ht.Mount.Source)))
			}
		}
		ts = append(ts, t)
	}
	src := sources{devices: inv.vf.devices}
	res.Writers = findWriters(inv.live, self, ts, src)
	res.Stopped = findWriters(inv.stopped, self, ts, src)
	res.Sure = true
	if inv.derr != nil && volumesInvolved(ts, inv.live) {
		res.Sure = false
		res.note(inv.derr.Error() + " (a volume that binds a host directory is compared by name only)")
	}
	if inv.Swarm != nil {
		sw := *inv.Swarm
		if sw.ServicesVisible {
			sw.Services = matchServices(inv.sl.services, inv.sl.tasks, inv.sl.hosts, sw.NodeID, self, ts, src, inv.vf)
		}
		if sw.Err != "" {
			res.Sure = false
			res.note(sw.Err)
		}
		res.Swarm = &sw
	}
	return res
}
