package docker

import (
	"context"
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"
)

// Swarm roles in Swarm.Role: this engine's node as GET /info Swarm
// describes it (LocalNodeState "active", and ControlAvailable for a
// manager). Any other node state (pending, locked, error) is its own role,
// in which services cannot be listed either.
const (
	SwarmManager = "manager"
	SwarmWorker  = "worker"
)

// Swarm service modes in Service.Mode (the engine's ServiceMode).
const (
	ModeReplicated    = "replicated"
	ModeGlobal        = "global"
	ModeReplicatedJob = "replicated-job"
	ModeGlobalJob     = "global-job"
)

// Update orders in Service.UpdateOrder and Service.RollbackOrder (the
// engine's UpdateConfig.Order; stop-first when the spec leaves it unset).
const (
	OrderStopFirst  = "stop-first"
	OrderStartFirst = "start-first"
)

// Swarm is what the engine's Swarm API says about the data, when the
// engine is a node of a swarm (nil otherwise). Services and tasks are
// listed only by a manager (GET /services, /tasks, /nodes); on a worker
// ServicesVisible is false and tasks on other nodes cannot be seen from
// this engine at all.
type Swarm struct {
	// Role is SwarmManager, SwarmWorker, or the node state ("pending",
	// "locked", "error") of a node that is neither.
	Role string `json:"role"`
	// NodeID is this engine's node (/info Swarm.NodeID).
	NodeID string `json:"node_id,omitempty"`
	// ServicesVisible is true when the services and tasks were listed.
	ServicesVisible bool `json:"services_visible"`
	// Err says why a manager's services or tasks could not be listed (a
	// socket proxy that denies /services or /tasks), or why node names
	// are missing (/nodes denied: node IDs only).
	Err string `json:"error,omitempty"`
	// Services are, for each data path, the services whose task template
	// mounts it read-write, by name.
	Services []Service `json:"services,omitempty"`
}

// Service is a Swarm service whose tasks mount a data path read-write.
type Service struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Stack is the label com.docker.stack.namespace (docker stack deploy).
	Stack string `json:"stack,omitempty"`
	// Mode is ModeReplicated, ModeGlobal (one task on every eligible
	// node), ModeReplicatedJob or ModeGlobalJob.
	Mode string `json:"mode"`
	// Replicas is the desired number of tasks of a replicated service
	// (0 for the other modes).
	Replicas uint64 `json:"replicas"`
	// UpdateOrder and RollbackOrder are OrderStopFirst or OrderStartFirst:
	// with start-first the new task starts before the old one stops.
	UpdateOrder   string `json:"update_order"`
	RollbackOrder string `json:"rollback_order"`
	// Mount is the task template's mount that reaches the data (Source is
	// this node's mountpoint of a local volume), Relation how (as
	// Writer.Relation), Path the data path.
	Mount    MountRef `json:"mount"`
	Relation string   `json:"relation"`
	Path     string   `json:"path"`
	// Shared is true when the mount names storage that every node reaches
	// alike: a cluster volume, a volume driver that is not local, or a
	// local volume whose driver_opts type is a network filesystem (in the
	// service's spec, or on this node's volume of that name). A local
	// volume on another node is that node's own directory; a bind source
	// on another node is that node's path (shared only when that path is
	// a network filesystem there too, which this engine cannot see).
	Shared bool `json:"shared"`
	// Own is true when our own container is one of its tasks.
	Own bool `json:"own,omitempty"`
	// Tasks are its tasks that run or are about to (every state before
	// complete, shutdown, failed, rejected, remove, orphaned), by name.
	Tasks []Task `json:"tasks"`
}

// Task is one task of a Service.
type Task struct {
	ID string `json:"id"`
	// Name is SERVICE.SLOT (replicated) or SERVICE.NODEID (global), as
	// docker service ps prints it; the task's container is named
	// NAME.ID.
	Name string `json:"name"`
	// NodeID is the node the task is scheduled on; Node its hostname
	// (GET /nodes), "" when unknown.
	NodeID string `json:"node_id"`
	Node   string `json:"node,omitempty"`
	// OtherNode is true when NodeID is not this engine's node: another
	// kernel, whose processes, locks and files no probe here can see.
	OtherNode bool `json:"other_node"`
	// State is the task's observed state (running, starting, ...),
	// DesiredState what the orchestrator wants (running, shutdown).
	State        string `json:"state"`
	DesiredState string `json:"desired_state"`
	ContainerID  string `json:"container_id,omitempty"`
	// Self is true for the task whose container is our own.
	Self bool `json:"self,omitempty"`
}

// swarmFacts asks a Swarm manager which services mount targets: GET
// /services, /tasks and /nodes, each once. It returns nil when the engine
// is in no swarm; on a worker, Role says so and nothing is listed.
func (c *conn) swarmFacts(ctx context.Context, targets []target, src sources, vf volumeFacts, selfID string) *Swarm {
	sw, l := c.swarmLists(ctx)
	if sw != nil && sw.ServicesVisible {
		sw.Services = matchServices(l.services, l.tasks, l.hosts, sw.NodeID, selfID, targets, src, vf)
	}
	return sw
}

// swarmLists is what a Swarm manager lists, for matchServices.
type swarmLists struct {
	services []swarm.Service
	tasks    []swarm.Task
	hosts    map[string]string
}

// swarmLists asks a Swarm manager for its services, tasks and nodes (GET
// /services, /tasks and /nodes, each once). The Swarm is nil when the
// engine is in no swarm; ServicesVisible says whether the lists are there.
func (c *conn) swarmLists(ctx context.Context) (*Swarm, swarmLists) {
	info := c.swarm
	switch {
	case info.LocalNodeState == "" || info.LocalNodeState == swarm.LocalNodeStateInactive:
		return nil, swarmLists{}
	case info.LocalNodeState != swarm.LocalNodeStateActive:
		return &Swarm{Role: string(info.LocalNodeState), NodeID: info.NodeID,
			Err: fmt.Sprintf("swarm node state %s: services cannot be listed", info.LocalNodeState)}, swarmLists{}
	case !info.ControlAvailable:
		return &Swarm{Role: SwarmWorker, NodeID: info.NodeID}, swarmLists{}
	}
	sw := &Swarm{Role: SwarmManager, NodeID: info.NodeID}
	services, err := c.cli.ServiceList(ctx, client.ServiceListOptions{})
	if err != nil {
		sw.Err = fmt.Sprintf("list swarm services: %v", err)
		return sw, swarmLists{}
	}
	tasks, err := c.cli.TaskList(ctx, client.TaskListOptions{})
	if err != nil {
		sw.Err = fmt.Sprintf("list swarm tasks: %v", err)
		return sw, swarmLists{}
	}
	hosts := map[string]string{}
	if nodes, err := c.cli.NodeList(ctx, client.NodeListOptions{}); err == nil {
		for _, n := range nodes.Items {
			hosts[n.ID] = n.Description.Hostname
		}
	}
	sw.ServicesVisible = true
	return sw, swarmLists{services: services.Items, tasks: tasks.Items, hosts: hosts}
}

// matchServices returns, for every target, each service with a
// read-write mount in its task template that reaches it (its first such
// mount), with its live tasks. node is this engine's node ID, selfID our
// own container's ID (or ""), hosts maps node IDs to hostnames.
func matchServices(services []swarm.Service, tasks []swarm.Task, hosts map[string]string, node, selfID string, targets []target, src sources, vf volumeFacts) []Service {
	byService := map[string][]swarm.Task{}
	for _, t := range tasks {
		if liveTask(t.Status.State) {
			byService[t.ServiceID] = append(byService[t.ServiceID], t)
		}
	}
	// sort.Slice, not slices.SortFunc: each struct type sorted generically gets its own copy of the sort (about 11 KB of binary).
	sort.Slice(services, func(i, j int) bool { return services[i].Spec.Name < services[j].Spec.Name })
	out := []Service{}
	for _, t := range targets {
		for i := range services {
			s := &services[i]
			cs := s.Spec.TaskTemplate.ContainerSpec
			if cs == nil {
				continue
			}
			for _, mp := range cs.Mounts {
				m, shared := serviceMount(mp, vf)
				rel := relation(t, m, src)
				if rel == "" {
					continue
				}
				svc := serviceOf(s)
				svc.Mount, svc.Relation, svc.Path, svc.Shared = m, rel, t.label, shared
				for _, tk := range byService[s.ID] {
					task := taskOf(s.Spec.Name, tk, hosts, node, selfID)
					svc.Own = svc.Own || task.Self
					svc.Tasks = append(svc.Tasks, task)
				}
				sort.Slice(svc.Tasks, func(i, j int) bool { return svc.Tasks[i].Name < svc.Tasks[j].Name })
				out = append(out, svc)
				break
			}
		}
	}
	return out
}

// liveTask reports whether a task in state s runs or is about to: every
// state before complete, shutdown, failed, rejected, remove and orphaned.
func liveTask(s swarm.TaskState) bool {
	switch s {
	case swarm.TaskStateComplete, swarm.TaskStateShutdown, swarm.TaskStateFailed,
		swarm.TaskStateRejected, swarm.TaskStateRemove, swarm.TaskStateOrphaned:
		return false
	}
	return true
}

// serviceMount is a task template mount as a MountRef (a local volume's
// Source is its mountpoint on this node, when known), and whether it names
// storage every node reaches alike (see Service.Shared).
func serviceMount(mp mount.Mount, vf volumeFacts) (MountRef, bool) {
	m := MountRef{Type: string(mp.Type), Destination: mp.Target, RW: !mp.ReadOnly}
	shared := mp.Type == mount.TypeCluster
	switch mp.Type {
	case mount.TypeBind:
		m.Source = mp.Source
	case mount.TypeVolume:
		m.Name = mp.Source
		if vo := mp.VolumeOptions; vo != nil && vo.DriverConfig != nil {
			m.Driver = vo.DriverConfig.Name
			shared = sharedDriver(m.Driver, vo.DriverConfig.Options)
		}
		shared = shared || vf.shared[m.Name]
		if mpt := vf.mountpoints[m.Name]; mpt != "" {
			m.Source = mpt
			if vo := mp.VolumeOptions; vo != nil && vo.Subpath != "" {
				m.Source = path.Join(mpt, vo.Subpath)
			}
		}
	}
	return m, shared
}

// networkTypes are the driver_opts types of a local volume that mount a
// network filesystem (mount -t TYPE).
var networkTypes = []string{"nfs", "nfs4", "cifs", "smb3", "smb", "ceph", "glusterfs", "9p", "virtiofs"}

// sharedDriver reports whether a volume of driver with options names
// storage other hosts reach too: a driver that is not local, or a local
// one whose type option is a network filesystem.
func sharedDriver(driver string, opts map[string]string) bool {
	if driver != "" && driver != "local" {
		return true
	}
	return slices.Contains(networkTypes, strings.ToLower(opts["type"]))
}

func serviceOf(s *swarm.Service) Service {
	svc := Service{ID: s.ID, Name: s.Spec.Name, Stack: s.Spec.Labels["com.docker.stack.namespace"],
		UpdateOrder: OrderStopFirst, RollbackOrder: OrderStopFirst, Tasks: []Task{}}
	switch m := s.Spec.Mode; {
	case m.Replicated != nil:
		svc.Mode = ModeReplicated
		if m.Replicated.Replicas != nil {
			svc.Replicas = *m.Replicated.Replicas
		}
	case m.Global != nil:
		svc.Mode = ModeGlobal
	case m.ReplicatedJob != nil:
		svc.Mode = ModeReplicatedJob
	case m.GlobalJob != nil:
		svc.Mode = ModeGlobalJob
	}
	if u := s.Spec.UpdateConfig; u != nil && u.Order != "" {
		svc.UpdateOrder = string(u.Order)
	}
	if u := s.Spec.RollbackConfig; u != nil && u.Order != "" {
		svc.RollbackOrder = string(u.Order)
	}
	return svc
}

// taskOf names task t of service name as docker service ps does.
func taskOf(name string, t swarm.Task, hosts map[string]string, node, selfID string) Task {
	task := Task{ID: t.ID, NodeID: t.NodeID, Node: hosts[t.NodeID], OtherNode: t.NodeID != node,
		State: string(t.Status.State), DesiredState: string(t.DesiredState)}
	if t.Slot != 0 {
		task.Name = name + "." + strconv.Itoa(t.Slot)
	} else {
		task.Name = name + "." + t.NodeID
	}
	if cs := t.Status.ContainerStatus; cs != nil {
		task.ContainerID = cs.ContainerID
		task.Self = selfID != "" && cs.ContainerID == selfID
	}
	return task
}

// SpecService is a Swarm service as its spec describes it, for a service
// none of whose tasks is a container this engine lists: its tasks run on
// other nodes, or none runs (a placement constraint no node satisfies).
type SpecService struct {
	// ID, Name, Stack, Mode, Replicas, UpdateOrder, RollbackOrder and
	// Tasks (its live tasks) are as in Service.
	ID            string `json:"id"`
	Name          string `json:"name"`
	Stack         string `json:"stack,omitempty"`
	Mode          string `json:"mode"`
	Replicas      uint64 `json:"replicas"`
	UpdateOrder   string `json:"update_order"`
	RollbackOrder string `json:"rollback_order"`
	Tasks         []Task `json:"tasks"`
	// Image is its task template's image.
	Image string `json:"image"`
	// Mounts are its task template's mounts (Source of a local volume is
	// this node's mountpoint of a volume of that name, when there is one).
	Mounts []SpecMount `json:"mounts"`
}

// SpecMount is one mount of a SpecService's task template.
type SpecMount struct {
	MountRef
	// Shared is as in Service.Shared.
	Shared bool `json:"shared"`
}

// ServicesElsewhere lists, on a manager whose services and tasks were
// listed, each service none of whose tasks is a container of
// inv.Containers, by name; nil elsewhere. Only the inventory's answers are
// read: no request is made.
func (inv *Inventory) ServicesElsewhere() []SpecService {
	if inv.Swarm == nil || !inv.Swarm.ServicesVisible {
		return nil
	}
	here := map[string]bool{}
	for _, c := range inv.Containers {
		if c.SwarmService != "" {
			here[c.SwarmService] = true
		}
	}
	byService := map[string][]swarm.Task{}
	for _, t := range inv.sl.tasks {
		if liveTask(t.Status.State) {
			byService[t.ServiceID] = append(byService[t.ServiceID], t)
		}
	}
	// By name, as matchServices sorts them.
	sort.Slice(inv.sl.services, func(i, j int) bool { return inv.sl.services[i].Spec.Name < inv.sl.services[j].Spec.Name })
	var out []SpecService
	for i := range inv.sl.services {
		s := &inv.sl.services[i]
		if here[s.Spec.Name] {
			continue
		}
		svc := serviceOf(s)
		ss := SpecService{ID: svc.ID, Name: svc.Name, Stack: svc.Stack, Mode: svc.Mode, Replicas: svc.Replicas,
			UpdateOrder: svc.UpdateOrder, RollbackOrder: svc.RollbackOrder, Tasks: svc.Tasks, Mounts: []SpecMount{}}
		for _, tk := range byService[s.ID] {
			ss.Tasks = append(ss.Tasks, taskOf(s.Spec.Name, tk, inv.sl.hosts, inv.Swarm.NodeID, ""))
		}
		sort.Slice(ss.Tasks, func(i, j int) bool { return ss.Tasks[i].Name < ss.Tasks[j].Name })
		if cs := s.Spec.TaskTemplate.ContainerSpec; cs != nil {
			ss.Image = cs.Image
			for _, mp := range cs.Mounts {
				m, shared := serviceMount(mp, inv.vf)
				ss.Mounts = append(ss.Mounts, SpecMount{MountRef: m, Shared: shared})
			}
		}
		out = append(out, ss)
	}
	return out
}

// Service is s as a Service that reaches path through m (Relation as
// Writer.Relation; m's zero value for a path on no mount), for the rules.
func (s SpecService) Service(m MountRef, shared bool, path string) Service {
	svc := Service{ID: s.ID, Name: s.Name, Stack: s.Stack, Mode: s.Mode, Replicas: s.Replicas, UpdateOrder: s.UpdateOrder,
		RollbackOrder: s.RollbackOrder, Tasks: s.Tasks, Mount: m, Path: path, Shared: shared}
	switch m.Type {
	case MountVolume:
		svc.Relation = SameVolume
	case MountBind:
		svc.Relation = SameBindSource
	}
	return svc
}
