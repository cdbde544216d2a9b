package report

import (
	"fmt"
	"strings"

	"github.com/preflight-sqlite/preflight/internal/shell"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/kube"
	"github.com/preflight-sqlite/preflight/probe/locks"
)

// WriterKind says how a writer was found; its JSON form is the bare string.
type WriterKind string

// Writer kinds.
const (
	// WriterProcess is a process on this kernel with the database, its
	// -wal or its -shm open (the /proc scan).
	WriterProcess WriterKind = "process"
	// WriterLock is a POSIX lock holder the /proc scan could not name
	// (outside this PID namespace), or named only by its lock.
	WriterLock WriterKind = "lock"
	// WriterContainer is another container that mounts the database's data
	// read-write (the Docker Engine API).
	WriterContainer WriterKind = "container"
	// WriterPod is another pod that mounts the database's storage
	// read-write (the Kubernetes API).
	WriterPod WriterKind = "pod"
)

// ProbeStatus says how one probe went; its JSON form is the bare string.
// Report.Probes and WriterProbes hold these; the Docker probe's own
// statuses (docker.StatusRan, ...) appear as they are.
type ProbeStatus string

// Probe statuses.
const (
	ProbeRan         ProbeStatus = "ran"         // ran fully
	ProbeOff         ProbeStatus = "off"         // not asked for
	ProbeFailed      ProbeStatus = "failed"      // could not run
	ProbeUnsure      ProbeStatus = "unsure"      // ran, but could not see everything
	ProbeUnsupported ProbeStatus = "unsupported" // not available on this platform
	ProbeQuiet       ProbeStatus = "quiet"       // activity: the files did not change
	ProbeChanged     ProbeStatus = "changed"     // activity: the files changed
	ProbeNoDatabase  ProbeStatus = "no database" // no database to probe
)

// Writer is a process, lock holder or container that has a database open.
type Writer struct {
	Kind WriterKind `json:"kind"`
	// Process fields (Kind "process", and "lock" when the holder's pid is
	// known in our PID namespace).
	PID     int    `json:"pid,omitempty"`
	Comm    string `json:"comm,omitempty"`
	Cmdline string `json:"cmdline,omitempty"`
	User    string `json:"user,omitempty"`
	// Files lists how the process holds the database: "db fd 5",
	// "shm mmap", ...
	Files []string `json:"files,omitempty"`
	// Locks lists the POSIX locks held (kind "lock", or a process whose
	// locks were also seen).
	Locks []locks.Lock `json:"locks,omitempty"`
	// ContainerID is, for a process or lock writer, the container the
	// process runs in (from /proc/PID/cgroup), when that is not the
	// container preflight runs in.
	ContainerID string `json:"container_id,omitempty"`
	// Container is the container (Kind "container"), or for a process or
	// lock writer its container (ContainerID) as the Engine API describes
	// it, when it answered. Relation says how that container reaches the
	// database's data (Kind "container", and a process whose container
	// the Docker probe found mounting it).
	Container *docker.Container `json:"container,omitempty"`
	Relation  string            `json:"relation,omitempty"`
	// OwnService is true for a Swarm task's container (Kind "container")
	// of the service our own container is a task of.
	OwnService bool `json:"own_service,omitempty"`
	// Pod is another pod mounting the same storage (Kind "pod").
	Pod *kube.Writer `json:"pod,omitempty"`
}

// Name describes the writer in one phrase for messages.
func (w Writer) Name() string {
	switch w.Kind {
	case WriterContainer:
		c := w.Container
		s := fmt.Sprintf("container %s (%s, image %s", c.Name, docker.ShortID(c.ID), c.Image)
		if c.ComposeService != "" {
			s += fmt.Sprintf(", compose project %s service %s", c.ComposeProject, c.ComposeService)
		}
		if c.OneOff {
			s += ", a one-off compose run"
		}
		if c.SwarmService != "" {
			s += ", a task of swarm service " + c.SwarmService
		}
		return s + ")"
	case WriterPod:
		return podName(w.Pod)
	case WriterLock:
		if w.PID > 0 {
			return fmt.Sprintf("process %d%s holding %s", w.PID, wrapped(w.containerName(), " (container ", ")"), LockNames(w.Locks))
		}
		return fmt.Sprintf("a process outside this PID namespace (another container or the host) holding %s", LockNames(w.Locks))
	}
	cmd := w.Cmdline
	if cmd == "" {
		cmd = w.Comm
	}
	return fmt.Sprintf("process %d (%s, user %s%s)", w.PID, cmd, w.User, wrapped(w.containerName(), ", container ", ""))
}

// containerName names the container of a process or lock writer: its
// name, else its short ID; "" when it runs in none (or in ours).
func (w Writer) containerName() string {
	switch {
	case w.Container != nil:
		return w.Container.Name
	case w.ContainerID != "":
		return docker.ShortID(w.ContainerID)
	}
	return ""
}

// wrapped is pre+s+post, or "" when s is empty.
func wrapped(s, pre, post string) string {
	if s == "" {
		return ""
	}
	return pre + s + post
}

// Stop is the command that stops the writer, run as printed (see
// StopNote): for a process in a container, the container's (docker stop
// NAME, or its compose or Swarm command), not kill; "kill PID" for another
// process; "" when nothing names it (a lock holder outside this PID
// namespace).
func (w Writer) Stop() string {
	if w.Kind != WriterContainer && w.Container != nil {
		c := w
		c.Kind = WriterContainer
		return c.Stop()
	}
	switch {
	case w.Kind != WriterContainer && w.ContainerID != "":
		return "docker stop " + docker.ShortID(w.ContainerID)
	case w.Kind == WriterContainer && w.Container.SwarmService != "":
		// Swarm starts a new task for one stopped with docker stop.
		n := "0"
		if w.OwnService {
			n = "1"
		}
		return "docker service scale " + shell.Quote(w.Container.SwarmService) + "=" + n
	case w.Kind == WriterPod:
		return podStop(w.Pod)
	case w.Kind == WriterContainer && w.Container.ComposeService != "" && !w.Container.OneOff:
		return w.Container.ComposeCommand() + " stop " + w.Container.ComposeServiceArg()
	case w.Kind == WriterContainer:
		return "docker stop " + w.Container.Name
	case w.PID > 0:
		return fmt.Sprintf("kill %d", w.PID)
	}
	return ""
}

// orService is what StopNote adds to a kill: the process may be a
// service's, which would start it again.
const orService = " (or the service that runs it)"

// StopNote qualifies Stop in a sentence ("Stop it" + StopNote + ": " +
// Stop): " (or the service that runs it)" for a kill, "" otherwise.
func (w Writer) StopNote() string {
	if w.Kind != WriterContainer && w.Kind != WriterPod && w.Container == nil && w.ContainerID == "" && w.PID > 0 {
		return orService
	}
	return ""
}

// LockNames describes ls as "write POSIX lock on app.db, ...".
func LockNames(ls []locks.Lock) string {
	var names []string
	for _, l := range ls {
		names = append(names, fmt.Sprintf("%s %s lock on %s", l.Type, l.Name, l.File))
	}
	return strings.Join(names, ", ")
}

// WriterProbes says, for one database, which live-writer probes ran and
// whether "no writer found" can be trusted.
type WriterProbes struct {
	// Processes, Locks, Docker, Activity: ran, unsure, failed, off,
	// unsupported (and for Docker its probe status; for Activity quiet or
	// changed).
	Processes ProbeStatus `json:"processes"`
	Locks     ProbeStatus `json:"locks"`
	Docker    ProbeStatus `json:"docker"`
	Kube      ProbeStatus `json:"kube,omitempty"`
	Activity  ProbeStatus `json:"activity"`
	// Sure is true when every probe that can see a writer of this database
	// ran fully and no writer can hide from all of them.
	Sure bool `json:"sure"`
	// Blind lists what the probes could not see, in words.
	Blind []string `json:"blind,omitempty"`
}

// podName describes a writer pod in one phrase.
func podName(w *kube.Writer) string {
	s := fmt.Sprintf("pod %s/%s (", w.Namespace, w.Name)
	if w.Node != "" {
		s += "node " + w.Node
		if w.SameNode {
			s += ", ours"
		} else {
			s += ", another node"
		}
	} else {
		s += "not scheduled"
	}
	s += ", " + nonEmptyOr(w.Phase, "phase unknown")
	if w.OwnerKind != "" {
		s += ", " + w.OwnerKind + " " + w.OwnerName
	}
	return s + ")"
}

// podStop is the command that stops a writer pod for good: scale its
// controller down, or delete a bare pod.
func podStop(w *kube.Writer) string {
	ns := shell.Quote(w.Namespace)
	switch w.OwnerKind {
	case "Deployment", "StatefulSet", "ReplicaSet":
		return fmt.Sprintf("kubectl -n %s scale %s %s --replicas=0 (or remove the claim from its pod template)", ns, strings.ToLower(w.OwnerKind), shell.Quote(w.OwnerName))
	case "Job", "CronJob":
		return fmt.Sprintf("kubectl -n %s delete %s %s", ns, strings.ToLower(w.OwnerKind), shell.Quote(w.OwnerName))
	case "DaemonSet":
		return fmt.Sprintf("remove the volume from DaemonSet %s (kubectl -n %s edit daemonset %s): it runs one pod per node", w.OwnerName, ns, shell.Quote(w.OwnerName))
	case "":
		return fmt.Sprintf("kubectl -n %s delete pod %s", ns, shell.Quote(w.Name))
	}
	return fmt.Sprintf("stop %s %s, then kubectl -n %s delete pod %s", w.OwnerKind, w.OwnerName, ns, shell.Quote(w.Name))
}

func nonEmptyOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
