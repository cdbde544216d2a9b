package report

import (
	"fmt"
	"strings"

	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/locks"
)

// LockHolder is one holder of SQLite's locks on a database or its -shm,
// with what its locks mean ("database is locked": who holds which lock).
type LockHolder struct {
	// PID is the holder's PID in our PID namespace; 0 when it is in
	// another one.
	PID int `json:"pid,omitempty"`
	// ProcPID is the holder's PID in the PID namespace of this /proc (an
	// ancestor's: the host's), found through /proc/locks by device and
	// inode, when PID is 0.
	ProcPID int `json:"proc_pid,omitempty"`
	// OtherNamespace is true when the holder is outside our PID namespace.
	OtherNamespace bool `json:"other_pid_namespace,omitempty"`
	// Invisible is true when no PID names the holder: its locks were seen,
	// but this /proc cannot show who holds them (run with the host's PID
	// namespace, docker run --pid host, to name it).
	Invisible bool `json:"invisible,omitempty"`
	// Comm, Cmdline and User are from /proc (procfs), when readable.
	Comm    string `json:"comm,omitempty"`
	Cmdline string `json:"cmdline,omitempty"`
	User    string `json:"user,omitempty"`
	// ContainerID is the container the holder runs in, from its cgroup;
	// Container is that container as the Engine API describes it, when it
	// answered.
	ContainerID string            `json:"container_id,omitempty"`
	Container   *docker.Container `json:"container,omitempty"`
	// Holds names what the locks mean, strongest first.
	Holds []locks.Held `json:"holds"`
	// Locks are the locks held.
	Locks []locks.Lock `json:"locks"`
}

// Who names the holder in one phrase: "process 123 (sqlite3 /data/app.db,
// user root, container web)", "a process in another PID namespace that
// this /proc cannot name".
func (h LockHolder) Who() string {
	if h.Invisible {
		return "a process in another PID namespace (another container or the host) that this /proc cannot name"
	}
	pid := h.PID
	s := "process "
	if pid == 0 {
		pid, s = h.ProcPID, "host process "
	}
	s += fmt.Sprint(pid)
	var about []string
	if cmd := nonEmptyOr(h.Cmdline, h.Comm); cmd != "" {
		about = append(about, cmd)
	}
	if h.User != "" {
		about = append(about, "user "+h.User)
	}
	switch {
	case h.Container != nil:
		about = append(about, "container "+h.Container.Name)
	case h.ContainerID != "":
		about = append(about, "container "+docker.ShortID(h.ContainerID))
	}
	if len(about) > 0 {
		s += " (" + strings.Join(about, ", ") + ")"
	}
	return s
}

// What is what the holder's locks mean: "holds the write lock (WAL)".
func (h LockHolder) What() string { return locks.Phrase(h.Holds) }

// Stop is the command that stops the holder, run as printed: "docker
// stop web" (or its compose or Swarm command) for a holder in another
// container, "kill 123" for a process (on the host for a ProcPID, see
// StopNote); "" when nothing names it (Invisible).
func (h LockHolder) Stop() string {
	switch {
	case h.Container != nil:
		return Writer{Kind: WriterContainer, Container: h.Container}.Stop()
	case h.ContainerID != "":
		return "docker stop " + docker.ShortID(h.ContainerID)
	case h.PID > 0:
		return fmt.Sprintf("kill %d", h.PID)
	case h.ProcPID > 0:
		return fmt.Sprintf("kill %d", h.ProcPID)
	}
	return ""
}

// StopNote qualifies Stop in a sentence ("Stop it" + StopNote + ": " +
// Stop): where and what else to stop for a kill, "" for a container.
func (h LockHolder) StopNote() string {
	switch {
	case h.Container != nil || h.ContainerID != "":
		return ""
	case h.PID > 0:
		return orService
	}
	return " on the host" + orService
}
