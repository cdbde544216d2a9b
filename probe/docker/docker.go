// Package docker is the Docker Engine API side of the live-writer probes: it
// finds the engine a process would talk to, recognises what kind of engine it
// is, finds our own container when we run in one, and lists the other
// containers that mount the same data read-write.
//
// The package states facts and how sure it is; it never judges. It sends
// only GET requests (a request hook refuses every other method before it
// leaves the process), so it works through a socket proxy such as
// tecnativa/docker-socket-proxy with POST=0 that allows GET on /_ping,
// /version, /info, /containers and /volumes (and, on a Swarm manager,
// /services, /tasks and /nodes: SERVICES=1 TASKS=1 NODES=1). The requests
// are, in order:
//
//	GET /_ping                        API version negotiation (the client's HEAD /_ping is refused locally)
//	GET /v<api>/version               engine version and components
//	GET /v<api>/info                  engine name, operating system, security options
//	GET /v<api>/containers/<id>/json  our own container, or the one asked for
//	GET /v<api>/volumes               every volume: its mountpoint (a host path under it is that volume), a local volume that binds a host directory (driver_opts o: bind, device); denied: compared by name only
//	GET /v<api>/containers/json       all=1 (stopped containers too: future writers), once per call
//	GET /v<api>/services              on a Swarm manager (/info Swarm.ControlAvailable): services whose task template mounts the data
//	GET /v<api>/tasks                 on a Swarm manager: their tasks, with the node each runs on
//	GET /v<api>/nodes                 on a Swarm manager: node hostnames (denied: node IDs only)
//
// Sources: Docker Engine API reference (https://docs.docker.com/reference/api/engine/,
// endpoints ContainerList, ContainerInspect, SystemInfo, SystemVersion,
// SystemPing; on a Swarm manager ServiceList, TaskList, NodeList), and the docker CLI context store layout
// (github.com/docker/cli, cli/context/store: contexts/meta/<sha256(name)>/meta.json).
package docker

import (
	"errors"
	"fmt"
	"time"

	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// Mode says whether the probe runs at all. The package only uses ModeOff
// (Status "off", nothing contacted); "required" is for the caller, which may
// turn any status other than "ran" into a failure.
type Mode string

// Modes accepted by ParseMode.
const (
	ModeAuto     Mode = "auto"
	ModeOff      Mode = "off"
	ModeRequired Mode = "required"
)

// ParseMode parses "auto", "off" or "required"; "" is ModeAuto.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", ModeAuto:
		return ModeAuto, nil
	case ModeOff, ModeRequired:
		return Mode(s), nil
	}
	return "", fmt.Errorf("parse docker mode %q: want auto, off or required", s)
}

// DefaultTimeout is the whole-probe budget when Options.Timeout is zero.
const DefaultTimeout = 2 * time.Second

// Options configure Discover, Probe, WritersOf and InspectContainer. The
// zero value is ready to use.
type Options struct {
	// Mode: ModeOff returns Status "off" without contacting anything.
	// Zero value: ModeAuto.
	Mode Mode
	// Timeout bounds the whole call, dial and every request included: a
	// slow or hung daemon costs at most this long. Zero means
	// DefaultTimeout (2s).
	Timeout time.Duration
	// Host is an explicit engine address ("unix:///path", "tcp://h:p").
	// Empty means discover it as the docker CLI does (see Discover).
	Host string
	// Env looks up environment variables; nil means os.Getenv.
	Env func(string) string
	// ConfigDir is the docker CLI configuration directory. Empty means
	// $DOCKER_CONFIG, else $HOME/.docker.
	ConfigDir string
	// MountTable is this process's mount table (/proc/self/mountinfo),
	// already read by the caller; it must hold at least the mounts at or
	// above each of SelfFiles and of each data path (symlinks resolved).
	// Nil reads it. A saved table from another machine must not be given.
	MountTable *mounts.Table
	// HostPaths says Probe's data paths are already engine-host paths
	// (check --container maps a container's paths to its mount sources):
	// our own container is then not looked for, and every container
	// reaching them is reported. Zero value: paths are this process's.
	HostPaths bool
}

// SelfFiles are the files Docker bind-mounts into every container; the
// root field of their mounts in /proc/self/mountinfo names the container
// (see ContainerIDFromMounts).
var SelfFiles = []string{"/etc/hostname", "/etc/hosts", "/etc/resolv.conf"}

// Endpoint is the engine address a call used and where it came from.
type Endpoint struct {
	Host string `json:"host"`
	// Source is "option" (Options.Host), "DOCKER_HOST", "context NAME"
	// (DOCKER_CONTEXT or config.json currentContext) or SourceDefault.
	Source string `json:"source"`
}

// SourceDefault is Endpoint.Source when nothing configured the address:
// no Options.Host, no DOCKER_HOST, no context other than "default".
const SourceDefault = "default"

// Engine kinds reported in Engine.Kind.
const (
	KindDockerDesktop  = "docker-desktop"
	KindOrbStack       = "orbstack"
	KindColima         = "colima"
	KindLima           = "lima"
	KindRancherDesktop = "rancher-desktop"
	KindPodman         = "podman"
	KindDocker         = "docker" // a Docker Engine not recognised as one of the above, such as native Linux
	KindUnknown        = "unknown"
)

// Engine describes the engine behind an endpoint, from GET /info and
// GET /version. See Recognize for the signals used.
type Engine struct {
	Kind     string `json:"kind"`
	Rootless bool   `json:"rootless,omitempty"`
	// Version is the engine version (/version Version), e.g. "20.10.24+dfsg1".
	Version string `json:"version"`
	// APIVersion is the highest API version the engine speaks (/version
	// ApiVersion), e.g. "1.41"; the client negotiates down to it.
	APIVersion string `json:"api_version"`
	// OS is the engine's OS type, "linux" or "windows" (/info OSType).
	OS              string `json:"os"`
	KernelVersion   string `json:"kernel_version"`
	OperatingSystem string `json:"operating_system"`
	// Name is the engine host's name (/info Name).
	Name string `json:"name"`
	// Platform is /version Platform.Name, e.g. "Docker Desktop 4.37.1 (178610)".
	Platform string `json:"platform,omitempty"`
	// CrossesVM is true when the engine runs in a VM the client's host is
	// not: a host bind mount then crosses a VM boundary (virtiofs, 9p,
	// gRPC FUSE). True for the desktop kinds, and for any Linux engine
	// reached from a non-Linux client.
	CrossesVM bool `json:"bind_mounts_cross_vm"`
}

// Mount types in MountRef.Type (Docker's mount.Type values).
const (
	MountBind   = "bind"
	MountVolume = "volume"
	MountTmpfs  = "tmpfs"
)

// MountRef is one mount of a container as the engine reports it.
type MountRef struct {
	// Type is "bind", "volume", "tmpfs" (or "npipe", "cluster", "image").
	Type string `json:"type"`
	// Name is the volume name (volumes only).
	Name string `json:"name,omitempty"`
	// Source is the path on the engine host: the bind source, or the
	// volume's data directory (/var/lib/docker/volumes/NAME/_data for the
	// local driver). Inside a desktop VM, volume sources are VM paths.
	Source      string `json:"source,omitempty"`
	Destination string `json:"destination"`
	// Driver is the volume driver, "local" by default (volumes only).
	Driver string `json:"driver,omitempty"`
	RW     bool   `json:"rw"`
}

// Container is a container as listed or inspected.
type Container struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Image string `json:"image"`
	// State is "running", "restarting", "paused", "created", "exited", ...
	State string `json:"state"`
	// ComposeProject and ComposeService are the labels
	// com.docker.compose.project and com.docker.compose.service.
	ComposeProject string `json:"compose_project,omitempty"`
	ComposeService string `json:"compose_service,omitempty"`
	// ComposeFiles and ComposeDir are the labels
	// com.docker.compose.project.config_files (comma-separated, paths on
	// the engine host) and com.docker.compose.project.working_dir: what a
	// `docker compose` command for this project needs.
	ComposeFiles []string `json:"compose_files,omitempty"`
	ComposeDir   string   `json:"compose_dir,omitempty"`
	// OneOff is true for label com.docker.compose.oneoff=True: a
	// `docker compose run` container, a transient writer.
	OneOff bool `json:"oneoff,omitempty"`
	// SwarmService and SwarmTask are the labels
	// com.docker.swarm.service.name and com.docker.swarm.task.name of a
	// Swarm task's container (task name SERVICE.SLOT.TASKID).
	SwarmService string     `json:"swarm_service,omitempty"`
	SwarmTask    string     `json:"swarm_task,omitempty"`
	Mounts       []MountRef `json:"mounts"`
	// User is the user the container runs as (Config.User: its --user,
	// or the image's USER; empty: the image's default, root), known only
	// for a container that was inspected (our own).
	User string `json:"user,omitempty"`
	// PID is the container's first process in the engine host's PID
	// namespace (inspect State.Pid), set by List for a live container; 0
	// when unknown or stopped.
	PID int `json:"pid,omitempty"`
	// GroupAdd are the container's supplementary groups
	// (HostConfig.GroupAdd: its --group-add, names or ids), Env its
	// DOCKER_HOST and PREFLIGHT_* variables as NAME=VALUE (Config.Env; no
	// other variable is kept: they may hold secrets), and Network its
	// HostConfig.NetworkMode ("default", "bridge", "host", "none", a
	// network's name, or container:ID). Known only for a container that
	// was inspected (our own); --volumes-from carries none of them.
	GroupAdd []string `json:"group_add,omitempty"`
	// VolumesFrom are the containers whose volumes this one mounts
	// (HostConfig.VolumesFrom: its --volumes-from, names or ids, without
	// a :ro or :rw suffix); known only for an inspected container.
	VolumesFrom []string `json:"volumes_from,omitempty"`
	Env         []string `json:"env,omitempty"`
	Network     string   `json:"network,omitempty"`
}

// Relations in Writer.Relation.
const (
	SameVolume       = "same volume"
	SameBindSource   = "same bind source"
	BindInsideOurs   = "bind inside ours"
	BindContainsOurs = "bind contains ours"
)

// Writer is another container that mounts our data read-write.
type Writer struct {
	Container Container `json:"container"`
	// Mount is the writer's mount that reaches our data.
	Mount MountRef `json:"mount"`
	// Relation is SameVolume, SameBindSource, BindInsideOurs (the writer
	// mounts a directory below our data) or BindContainsOurs (the writer
	// mounts a directory above it).
	Relation string `json:"relation"`
	// Path is the data path (as given to Probe, or the volume or host path
	// given to WritersOf) this writer reaches.
	Path string `json:"path"`
}

// PathSource is where one data path lives, as seen from our own container.
type PathSource struct {
	// Path is the data path as given.
	Path string `json:"path"`
	// Mount is our container's mount holding Path; nil when Path is on the
	// container's own writable layer (or a mount the engine did not make),
	// which no other container can reach.
	Mount *MountRef `json:"mount,omitempty"`
	// HostPath is the engine-host path of Path: the mount source joined with
	// Path below the mount's destination. Empty for tmpfs and for Mount nil.
	HostPath string `json:"host_path,omitempty"`
}

// Result statuses.
const (
	StatusRan         = "ran"         // the engine answered; Writers is its answer
	StatusOff         = "off"         // Options.Mode was ModeOff
	StatusUnreachable = "unreachable" // no answer within Timeout, connection refused, or no socket inside a container or at a configured address
	StatusNoDaemon    = "no-daemon"   // on a host, nothing configured an address and the default socket does not exist: no engine runs there
	StatusDenied      = "denied"      // permission denied on the socket, or HTTP 401/403 from the engine or a proxy
	StatusFailed      = "failed"      // anything else (bad endpoint, unexpected answer)
	// StatusSkipped is set by callers that had no existing data path to
	// ask about, so the engine was not contacted (Probe never returns it).
	StatusSkipped = "skipped"
)

// Result is what Probe and WritersOf found.
type Result struct {
	Status   string   `json:"status"`
	Err      string   `json:"error,omitempty"`
	Endpoint Endpoint `json:"endpoint"`
	Engine   *Engine  `json:"engine,omitempty"`
	// InContainer is true when this process runs in a container: our id
	// was found in mountinfo or cgroup, or $HOSTNAME named a container
	// (only tried when /.dockerenv or /run/.containerenv exists). Those
	// files alone are not enough: hosts built from container images have
	// them too.
	InContainer bool `json:"in_container"`
	// Self is our own container when we run in one and the engine knows it.
	Self *Container `json:"self,omitempty"`
	// SelfHow is how our container id was found: "mountinfo", "cgroup"
	// or "hostname".
	SelfHow string `json:"self_how,omitempty"`
	// SelfID is our container's id as found in our own mount table or
	// cgroup, whether or not the engine answered; empty when not found.
	// Docker's default hostname is its first 12 characters, and docker
	// stop takes it.
	SelfID string `json:"self_id,omitempty"`
	// Paths says where each data path lives (Probe inside a container).
	Paths   []PathSource `json:"paths,omitempty"`
	Writers []Writer     `json:"writers"`
	// Stopped lists, in the same form, the containers that are not running
	// (created, exited, dead) but mount the data read-write: each writes
	// it again once started (docker start, a restart policy, compose up).
	Stopped []Writer `json:"stopped,omitempty"`
	// Swarm is what a Swarm manager says about the services that mount
	// the data; nil when the engine is in no swarm (or no data path
	// reaches a mount).
	Swarm *Swarm `json:"swarm,omitempty"`
	// NoSuchVolume is true when WritersOf was asked about a volume that
	// the engine's volume list (GET /volumes) does not hold.
	NoSuchVolume bool `json:"no_such_volume,omitempty"`
	// Sure is true when the container answer is complete for Endpoint:
	// the engine answered, our own container (if any) was found, and no
	// data path is on a volume whose driver is not "local" (such a volume
	// may be mounted by containers on other hosts). Also true for
	// "no-daemon": nothing configured an address and no engine runs at the
	// default one, so no container runs.
	Sure bool `json:"sure"`
}

// Sentinel errors returned (wrapped) by InspectContainer; test with errors.Is.
var (
	ErrNoDaemon    = errors.New("no docker daemon")
	ErrDenied      = errors.New("permission denied")
	ErrUnreachable = errors.New("docker daemon unreachable")
	ErrNotFound    = errors.New("no such container")
)

// Compose labels (github.com/docker/compose pkg/api/labels.go).
const (
	labelProject    = "com.docker.compose.project"
	labelService    = "com.docker.compose.service"
	labelOneOff     = "com.docker.compose.oneoff"
	labelFiles      = "com.docker.compose.project.config_files"
	labelConfigHash = "com.docker.compose.config-hash"
	labelDir        = "com.docker.compose.project.working_dir"
)

// Swarm task container labels (moby daemon/cluster/executor/container).
const (
	labelSwarmService = "com.docker.swarm.service.name"
	labelSwarmTask    = "com.docker.swarm.task.name"
)
