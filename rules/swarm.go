package rules

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/internal/shell"
	"github.com/preflight-sqlite/preflight/policy"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// swarmRules judge what a Swarm manager says about the services whose
// tasks mount a database's data (probe/docker Swarm), and the deploy:
// section of the compose services that mount a data directory (the same
// file deploys to Swarm with docker stack deploy); table.go places them
// after the report rules.
var swarmRules = []rule{
	{
		Rule: Rule{LiveWriterTask, LevelError, "a Swarm task on another node (another kernel) mounts this database's data read-write on storage both nodes reach (a network volume or filesystem): no lock, process or activity probe here sees it; error in WAL mode, warn in DELETE mode (two writers across network locks)"}, scope: ScopeDatabase,
		match: func(s subject) (string, Level, bool) {
			var who []string
			for _, svc := range swarmServices(s) {
				for _, t := range remoteTasks(s, svc) {
					who = append(who, fmt.Sprintf("task %s of service %s (%s, node %s)", t.Name, svc.Name, t.State, nodeName(t)))
				}
			}
			if len(who) == 0 {
				return "", "", false
			}
			lvl := LevelWarn
			what := "two writers whose locks meet only through the network filesystem's lock manager"
			if s.db.JournalMode == sqlitefile.JournalWAL {
				lvl = LevelError
				what = "WAL's shared memory is per kernel, so their WAL frames interleave: corruption is happening now"
			}
			return fmt.Sprintf("%s is written from another node by %s, on storage both nodes reach; %s", filepath.Base(s.db.Path), strings.Join(who, "; "), what), lvl, true
		},
		remedy: func(s subject) []string {
			var out []string
			for _, svc := range swarmServices(s) {
				if len(remoteTasks(s, svc)) > 0 {
					out = append(out, oneTask(svc))
				}
			}
			return append(out, "Keep the database on storage local to one node (a local volume, with a placement constraint pinning the service to that node); back it up to the share instead.")
		},
	},
	{
		Rule: Rule{ReplicasOnSQLiteVolume, LevelWarn, "a Swarm service (or, in compose, a service's deploy: section) that mounts a data directory read-write runs more than one task at once: replicas above 1 or mode global; every task beyond the first is a second writer on one node, or a second copy of the database on another"}, scope: ScopeDatabase,
		match: replicasMatch, remedy: replicasRemedy,
	},
	{
		// A service with no task here (audit): its spec alone shows the
		// replicas, on a path whose databases could not be read.
		Rule:  Rule{ReplicasOnSQLiteVolume, LevelWarn, ""},
		match: replicasMatch, remedy: replicasRemedy,
	},
	{
		Rule: Rule{StartFirstOnSQLiteVolume, LevelWarn, "a Swarm service (or, in compose, a service's deploy: section) that mounts a data directory read-write updates or rolls back start-first: the new task starts beside the old one, two writers during every update"}, scope: ScopeDatabase,
		match: startFirstMatch, remedy: startFirstRemedy,
	},
	{
		Rule:  Rule{StartFirstOnSQLiteVolume, LevelWarn, ""},
		match: startFirstMatch, remedy: startFirstRemedy,
	},
	{
		Rule: Rule{ServicesNotVisible, LevelInfo, "the engine is a Swarm node whose services and tasks could not be listed (a worker: only managers answer; or a manager behind a socket proxy that denies /services or /tasks): tasks on other nodes that mount the same data are not known; warn when a data directory is on a network or FUSE filesystem, which other nodes may mount too"}, scope: ScopeReport,
		match: func(s subject) (string, Level, bool) {
			d := s.r.Docker
			if d == nil || d.Swarm == nil || d.Swarm.ServicesVisible || !anyDatabase(s.r) {
				return "", "", false
			}
			why := "this engine is a Swarm " + d.Swarm.Role + " node; only managers list services and tasks"
			if d.Swarm.Err != "" {
				why = d.Swarm.Err
			}
			lvl := LevelInfo
			for _, dir := range s.r.DataDirs {
				if policy.OtherMachines(subject{dir: &dir}.class()) {
					lvl = LevelWarn
				}
			}
			return fmt.Sprintf("not sure that no Swarm task on another node writes the data: %s", why), lvl, true
		},
		remedy: func(s subject) []string {
			return []string{"Run preflight on a manager node (docker node ls there lists them), or let a socket proxy allow SERVICES, TASKS and NODES (GET only)."}
		},
	},
	{
		Rule: Rule{ReplicasOnSQLiteVolume, LevelWarn, ""}, scope: ScopeCompose,
		match: func(s subject) (string, Level, bool) {
			m, d := s.cm, s.cm.Deploy
			if !composeWriterMount(m) || d.Mode != compose.DeployGlobal && d.Replicas <= 1 {
				return "", "", false
			}
			what := fmt.Sprintf("%s is %d", d.ReplicasKey, d.Replicas)
			if d.Mode == compose.DeployGlobal {
				what = "deploy.mode is global (a task on every node)"
			}
			return fmt.Sprintf("%s %s is mounted read-write by service %s, and %s: each container beyond the first is a second writer (docker compose up, and docker stack deploy on Swarm, where a task on another node writes that node's own copy of a local volume or the same file across the network) (%s)",
				m.Key(), dataWhat(m), m.Service, what, m.Why), composeDeployLevel(m), true
		},
		remedy: func(s subject) []string {
			m := s.cm
			return appendDocs(m, []string{fmt.Sprintf("Run one container of %s: deploy: {mode: replicated, replicas: 1} (and no scale:); a stack already deployed: docker service scale STACK_%s=1.", m.Service, m.Service)})
		},
	},
	{
		Rule: Rule{StartFirstOnSQLiteVolume, LevelWarn, ""}, scope: ScopeCompose,
		match: func(s subject) (string, Level, bool) {
			m := s.cm
			if !composeWriterMount(m) {
				return "", "", false
			}
			o := startFirst(m.Deploy.UpdateOrder, m.Deploy.RollbackOrder)
			if o == "" {
				return "", "", false
			}
			return fmt.Sprintf("%s %s is mounted read-write by service %s, whose deploy: section has %s: on Swarm each update starts the new task beside the old one, two writers of one database (%s)",
				m.Key(), dataWhat(m), m.Service, o, m.Why), composeDeployLevel(m), true
		},
		remedy: func(s subject) []string {
			m := s.cm
			return appendDocs(m, []string{fmt.Sprintf("Set order: stop-first (the default) under deploy.update_config and deploy.rollback_config of %s; a stack already deployed: docker service update --update-order stop-first --rollback-order stop-first STACK_%s.", m.Service, m.Service)})
		},
	},
}

// swarmServices are the Swarm services whose tasks mount s.db's data.
func swarmServices(s subject) []docker.Service {
	d := s.r.Docker
	if d == nil || d.Swarm == nil {
		return nil
	}
	var out []docker.Service
	for _, svc := range d.Swarm.Services {
		if svc.Path == s.db.Path {
			out = append(out, svc)
		}
	}
	return out
}

// specServices are, for a data directory that was not inspected (audit
// of a service with no task here), the Swarm services whose spec mounts
// it, and with layer those that have it on no mount (their writable
// layer, Mount unset) too.
func specServices(s subject, layer bool) []docker.Service {
	d := s.r.Docker
	if s.dir.NotInspected == "" || d == nil || d.Swarm == nil {
		return nil
	}
	var out []docker.Service
	for _, svc := range d.Swarm.Services {
		if svc.Path == s.dir.Path && (layer || svc.Mount.Type != "") {
			out = append(out, svc)
		}
	}
	return out
}

// judgedServices are the services a Swarm rule judges for s, and what
// they mount: a database's services and its name, or (a data directory,
// audit of a service with no task here) the services whose spec mounts
// it and its path.
func judgedServices(s subject) ([]docker.Service, string) {
	if s.db != nil {
		return swarmServices(s), filepath.Base(s.db.Path)
	}
	return specServices(s, false), s.dir.Path + " (not inspected)"
}

// replicasMatch is replicas-on-sqlite-volume over judgedServices.
func replicasMatch(s subject) (string, Level, bool) {
	services, what := judgedServices(s)
	var who []string
	for _, svc := range services {
		if manyTasks(svc) {
			who = append(who, fmt.Sprintf("service %s (%s; tasks %s) mounts it through %s", svc.Name, modeWhat(svc), TaskList(svc.Tasks), mountWhat(svc.Mount)))
		}
	}
	if len(who) == 0 {
		return "", "", false
	}
	return fmt.Sprintf("%s: %s: tasks on one node are concurrent writers (\"database is locked\"), and a task on another node writes that node's own copy of a local volume, or the same file across the network", what, strings.Join(who, "; ")), "", true
}

func replicasRemedy(s subject) []string {
	services, _ := judgedServices(s)
	var out []string
	for _, svc := range services {
		if manyTasks(svc) {
			out = append(out, oneTask(svc))
		}
	}
	return out
}

// manyTasks reports whether svc runs more than one task at once.
func manyTasks(svc docker.Service) bool {
	return svc.Mode == docker.ModeGlobal || svc.Mode == docker.ModeReplicated && svc.Replicas > 1
}

// startFirstMatch is start-first-on-sqlite-volume over judgedServices.
func startFirstMatch(s subject) (string, Level, bool) {
	services, what := judgedServices(s)
	var who []string
	for _, svc := range services {
		if o := startFirst(svc.UpdateOrder, svc.RollbackOrder); o != "" {
			who = append(who, fmt.Sprintf("service %s (%s)", svc.Name, o))
		}
	}
	if len(who) == 0 {
		return "", "", false
	}
	return fmt.Sprintf("%s is mounted by %s: at each update its new task opens the database while the old one still writes it", what, strings.Join(who, "; ")), "", true
}

func startFirstRemedy(s subject) []string {
	services, _ := judgedServices(s)
	var out []string
	for _, svc := range services {
		if startFirst(svc.UpdateOrder, svc.RollbackOrder) != "" {
			out = append(out, fmt.Sprintf("Stop the old task first: docker service update --update-order stop-first --rollback-order stop-first %s (order: stop-first under update_config: and rollback_config: in its stack file).", shell.Quote(svc.Name)))
		}
	}
	return out
}

// remoteTasks are svc's tasks on other nodes that reach the same data:
// svc's mount is shared storage, or the data is on a network or FUSE
// filesystem here (a bind of a path every node mounts from one server).
// Tasks on this node are containers, judged by live-writer-container.
func remoteTasks(s subject, svc docker.Service) []docker.Task {
	if !svc.Shared && !policy.OtherMachines(s.class()) {
		return nil
	}
	var out []docker.Task
	for _, t := range svc.Tasks {
		if t.OtherNode && !t.Self {
			out = append(out, t)
		}
	}
	return out
}

// oneTask says how to leave svc one task (several replicas, global), or
// none (one task, so a service beside the application's).
func oneTask(svc docker.Service) string {
	switch {
	case svc.Mode == docker.ModeGlobal:
		return fmt.Sprintf("Service %s runs a task on every node: deploy it as mode: replicated with replicas: 1 (docker service rm %s, then create it again, or change deploy: in the stack file and docker stack deploy).", svc.Name, shell.Quote(svc.Name))
	case svc.Replicas > 1:
		return fmt.Sprintf("Run one task: docker service scale %s=1 (and replicas: 1 under deploy: in its stack file).", shell.Quote(svc.Name))
	}
	return fmt.Sprintf("Stop service %s, or give it data of its own: docker service scale %s=0", svc.Name, shell.Quote(svc.Name))
}

// remoteWriters counts the tasks on other nodes that write s.db's data
// (see remoteTasks).
func remoteWriters(s subject) int {
	n := 0
	for _, svc := range swarmServices(s) {
		n += len(remoteTasks(s, svc))
	}
	return n
}

func nodeName(t docker.Task) string {
	if t.Node != "" {
		return t.Node
	}
	return t.NodeID
}

func modeWhat(svc docker.Service) string {
	if svc.Mode == docker.ModeGlobal {
		return "mode global, a task on every node"
	}
	return fmt.Sprintf("%d replicas", svc.Replicas)
}

// TaskList names tasks with their node and state, "none running" when
// empty.
func TaskList(ts []docker.Task) string {
	if len(ts) == 0 {
		return "none running"
	}
	var out []string
	for _, t := range ts {
		where := "this node"
		switch {
		case t.NodeID == "":
			where = "no node yet" // pending: no node satisfies its constraints, or none has room
		case t.OtherNode:
			where = "node " + nodeName(t)
		}
		out = append(out, fmt.Sprintf("%s on %s, %s", t.Name, where, t.State))
	}
	return strings.Join(out, ", ")
}

func mountWhat(m docker.MountRef) string {
	if m.Type == docker.MountVolume {
		return "volume " + m.Name
	}
	return m.Type + " " + m.Source
}

// startFirst says which of the orders are start-first, or "".
func startFirst(update, rollback string) string {
	var out []string
	if update == docker.OrderStartFirst {
		out = append(out, "update_config order start-first")
	}
	if rollback == docker.OrderStartFirst {
		out = append(out, "rollback_config order start-first")
	}
	return strings.Join(out, ", ")
}

// composeWriterMount reports whether m is a data directory a service
// mounts read-write from a volume or bind, with a deploy: section.
func composeWriterMount(m *compose.Mount) bool {
	return m.DataDir && m.ReadWrite && m.Deploy != nil && (m.Type == "volume" || m.Type == "bind")
}

// composeDeployLevel is error for a data directory on a network volume or
// filesystem (tasks on several nodes write one file), else warn; warn for
// a possible data directory.
func composeDeployLevel(m *compose.Mount) Level {
	if m.Volume != nil && m.Volume.NetworkFS != "" || m.HostFS != nil && policy.OtherMachines(m.HostFS.Class) {
		return confidenceLevel(m, LevelError)
	}
	return LevelWarn
}
