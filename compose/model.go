package compose

// The facts Analyze states and Plan proposes, with no dependency on
// compose-go or a YAML library: the nocompose build (the image's binary)
// links these types, through the root package's Report, and none of the
// loader, the YAML node trees or the diff.

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// Confidence says how sure the analysis is that a mount holds SQLite data,
// highest first.
type Confidence string

// Confidences, highest first.
const (
	// Declared: --data-dir, the io.preflight.data-dir label, or the
	// service runs preflight run --data-dir (or sets PREFLIGHT_DATA_DIR).
	Declared Confidence = "declared"
	// Found: the bind source on disk holds SQLite files (header magic).
	Found Confidence = "found"
	// Catalogued: the image is in the catalogue of applications that keep
	// SQLite in a known directory.
	Catalogued Confidence = "catalogue"
	// Possible: a well-known data target (/data, /config, /var/lib/*,
	// /app/data, *.db, *.sqlite).
	Possible Confidence = "possible"
)

func (c Confidence) rank() int {
	switch c {
	case Declared:
		return 4
	case Found:
		return 3
	case Catalogued:
		return 2
	case Possible:
		return 1
	}
	return 0
}

// Rules that find data directories, in Mount.Rule.
const (
	RuleFlag         = "data-dir-flag"
	RuleLabel        = "label"
	RulePreflightRun = "preflight-run"
	RuleSQLiteFiles  = "sqlite-files"
	RuleCatalogue    = "catalogue"
	RuleWellKnown    = "well-known"
)

// LabelDataDir is the service label naming data directories
// (comma-separated container paths).
const LabelDataDir = "io.preflight.data-dir"

// Mount types in Mount.Type besides Compose's (bind, volume, tmpfs, npipe,
// cluster, image): TypeNone is a data directory on no mount at all.
const TypeNone = "none"

// Platform says whether host bind mounts cross a VM boundary.
type Platform struct {
	// Kind is "desktop" (the engine runs in a VM: Docker Desktop, OrbStack,
	// Colima, Lima, Rancher Desktop, a Podman machine), "linux" (a native
	// engine: binds are host directories) or "unknown" (either).
	Kind string `json:"kind"`
	// How is how Kind was decided: "engine" (Docker API), "flag"
	// (--platform), or "none".
	How string `json:"how"`
	// Engine is the engine kind when the Docker API answered.
	Engine string `json:"engine,omitempty"`
}

// Platform kinds.
const (
	PlatformDesktop = "desktop"
	PlatformLinux   = "linux"
	PlatformUnknown = "unknown"
)

// Volume is a top-level named volume as the project defines it.
type Volume struct {
	// Key is the name in the compose file; Name what the engine calls it
	// (project_key unless name: or external).
	Key        string            `json:"key"`
	Name       string            `json:"name"`
	Driver     string            `json:"driver,omitempty"`
	DriverOpts map[string]string `json:"driver_opts,omitempty"`
	External   bool              `json:"external,omitempty"`
	// NetworkFS is the driver_opts type when it is a network filesystem
	// (nfs, nfs4, cifs, smb3), or the driver when it is not "local".
	NetworkFS string `json:"network_fs,omitempty"`
	// BindDevice is the host path of a local volume with driver_opts
	// o: bind and device: PATH (a bind mount in disguise).
	BindDevice string `json:"bind_device,omitempty"`
}

// AppRef names the catalogue entry that matched a service's image.
type AppRef struct {
	Name string `json:"name"`
	Docs string `json:"docs,omitempty"`
	// Source is where the application says its SQLite files live.
	Source string `json:"source,omitempty"`
	Note   string `json:"note,omitempty"`
	// Match is how the image matched: "image" (one of the entry's
	// images) or "name" (the application's name is a path segment of the
	// image's repository: another publisher's image).
	Match string `json:"match,omitempty"`
	// OtherEngine is the environment setting that moves the application to
	// another database engine (NAME=value), when set.
	OtherEngine string `json:"other_engine,omitempty"`
	// MovedBy is the setting that moved the data directory, when set.
	MovedBy string `json:"moved_by,omitempty"`
}

// Location is where a mount is declared.
type Location struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
	// Service is the service that declares it in File (an extends base
	// can be another service).
	Service string `json:"service"`
	// Syntax is "short" or "long".
	Syntax string `json:"syntax"`
	// Aliased is set when the entry is reached through a YAML alias or
	// merge key.
	Aliased bool `json:"aliased,omitempty"`
}

// LiveMount is a mount of a running container of the service.
type LiveMount struct {
	Container string `json:"container"`
	Type      string `json:"type"`
	// Source is the host path (bind) or the volume name (volume).
	Source string `json:"source"`
	RW     bool   `json:"rw"`
}

// Mount is one service × mount, or a data directory on no mount.
type Mount struct {
	Service string `json:"service"`
	Image   string `json:"image,omitempty"`
	// Type is bind, volume, tmpfs (npipe, cluster, image), or none.
	Type string `json:"type"`
	// Source is the host path of a bind (absolute), the volume key of a
	// volume, "" otherwise.
	Source string `json:"source,omitempty"`
	// RawSource is the source as written, before interpolation
	// (${DATA_DIR:-./data}); Default is the default such a variable names.
	RawSource string `json:"raw_source,omitempty"`
	Default   string `json:"default,omitempty"`
	Target    string `json:"target"`
	ReadWrite bool   `json:"read_write"`
	// DataDir says the mount holds SQLite data; Confidence and Rule say
	// how sure and which rule found it, DataPath the data directory it
	// holds (Target or a directory below it).
	DataDir    bool       `json:"data_dir"`
	Confidence Confidence `json:"confidence,omitempty"`
	Rule       string     `json:"rule,omitempty"`
	DataPath   string     `json:"data_path,omitempty"`
	Why        string     `json:"why,omitempty"`
	App        *AppRef    `json:"app,omitempty"`
	// NotData says why a mount that looked like data is not judged as a
	// data directory (read-only, nested logs or media, another engine).
	NotData string `json:"not_data,omitempty"`
	// Databases are SQLite files found under a bind source.
	Databases []string `json:"databases,omitempty"`
	// HostFS is the host filesystem of a bind source (or a volume's bind
	// device), classified from this machine's mount table.
	HostFS *mounts.Mount `json:"host_fs,omitempty"`
	// HostFSError says why HostFS is missing: the source did not answer
	// within Options.FSTimeout, the mount table could not be read, the
	// path could not be resolved.
	HostFSError string  `json:"host_fs_error,omitempty"`
	Volume      *Volume `json:"volume,omitempty"`
	// SharedWith lists the other service mounts (SERVICE:TARGET) that
	// mount the same volume or bind source read-write.
	SharedWith []string `json:"shared_with,omitempty"`
	// Deploy is the service's deploy: section (deploy.go); nil without one.
	Deploy *Deploy `json:"deploy,omitempty"`
	// Declared is where the mount is written; nil for TypeNone or when it
	// could not be found.
	Declared *Location `json:"declared,omitempty"`
	// Live lists the mounts of the service's running containers at Target
	// (--live), and LiveWriters other running containers that mount the
	// same source read-write.
	Live        []LiveMount `json:"live,omitempty"`
	LiveWriters []string    `json:"live_writers,omitempty"`
	// Via is the mount (SERVICE:TARGET) whose data directory this mount's
	// bind source holds, when that is how it was found (bySource).
	Via string `json:"via,omitempty"`
	// SourceMissing says the bind source does not exist on this machine
	// (it is created empty when the service starts).
	SourceMissing bool `json:"source_missing,omitempty"`
	// Findings are the IDs of the findings made about this mount (set by
	// the caller that judges it).
	Findings []string `json:"findings,omitempty"`

	// known: the service's image is in the catalogue (its data
	// directories, or that it keeps no SQLite, are known).
	known bool
}

// NotJudged is a mount whose content is unknown, so no rule could judge
// it: a read-write bind whose source was not read (absent on this machine,
// not answering, files from another machine) of services whose images are
// not in the catalogue.
type NotJudged struct {
	// Mount is SERVICE:TARGET; Source the host path.
	Mount  string `json:"mount"`
	Source string `json:"source"`
	// Why is why its content is unknown.
	Why string `json:"why"`
}

// Key returns SERVICE:TARGET.
func (m *Mount) Key() string { return m.Service + ":" + m.Target }

// Analysis is what Analyze found: the facts the compose rules judge.
type Analysis struct {
	Project    string   `json:"project"`
	WorkingDir string   `json:"working_dir"`
	Files      []string `json:"files"`
	Profiles   []string `json:"profiles,omitempty"`
	Platform   Platform `json:"platform"`
	// HostMounts says where host filesystems were classified from, or why
	// not.
	HostMounts string  `json:"host_mounts"`
	Mounts     []Mount `json:"mounts"`
	// NotJudged lists the mounts no rule could judge (their content is
	// unknown); never empty when a verdict of ok would hide them.
	NotJudged []NotJudged `json:"not_judged"`
	// Warnings are what Compose's loader warned about (an unset
	// variable, an obsolete version: key), in its words.
	Warnings []string `json:"warnings,omitempty"`
	// Live is the engine's answer for --live.
	Live *docker.ProjectResult `json:"live,omitempty"`
	// Rewrites are the proposed named-volume rewrites (Plan).
	Rewrites []Rewrite `json:"rewrites,omitempty"`
	// Written are the rewrites compose --write made; the rest of the
	// analysis is then the project as written.
	Written []Rewrite `json:"written,omitempty"`

	loaded  *Loaded
	locator *locator
	// answered caches fsbound.Responsive per bind source.
	answered map[string]error
	// ctx is Analyze's: when it ends, bind sources not yet asked are not
	// waited for.
	ctx context.Context
}

// Options configure Analyze.
type Options struct {
	// DataDirs are --data-dir values: TARGET (every service mounting it)
	// or SERVICE:TARGET.
	DataDirs []string
	// Catalogue is the app catalogue; nil means Builtin().
	Catalogue *Catalogue
	// Platform is --platform: "desktop", "linux" or "" (ask Engine).
	Platform string
	// Engine is the engine recognised through the Docker API, or nil.
	Engine *docker.Engine
	// HostMounts is the host mount table for classifying bind sources;
	// nil reads /proc/self/mountinfo. HostMountsErr, when set, says the
	// table could not be read.
	HostMounts    *mounts.Table
	HostMountsErr error
	// NoDisk skips reading bind sources (rule 4, host filesystems): for
	// files from another machine and for tests.
	NoDisk bool
	// FSTimeout bounds how long a bind source may take to answer a stat
	// and a directory read (a stuck FUSE daemon, a dead NFS server); one
	// that does not is left unread, with Mount.HostFSError saying so. Zero
	// means 5 s.
	FSTimeout time.Duration
	// Live is the engine's list of the project's containers (--live).
	Live *docker.ProjectResult
}

// Rewrite is one proposed change: a bind mount of a data directory
// becomes a named volume.
type Rewrite struct {
	Service string `json:"service"`
	Target  string `json:"target"`
	// File and Line are where the mount is declared; Syntax is short or
	// long.
	File   string `json:"file"`
	Line   int    `json:"line"`
	Syntax string `json:"syntax,omitempty"`
	// From is the source as written (./data, ${DATA_DIR:-./data});
	// Default is such a variable's default; HostPath the resolved host
	// directory holding the data now.
	From     string `json:"from"`
	Default  string `json:"default,omitempty"`
	HostPath string `json:"host_path"`
	// Volume is the named volume's key in the compose file; VolumeName
	// the name the engine gives it (PROJECT_KEY); VolumeFile the file
	// whose top-level volumes: gets the entry.
	Volume     string `json:"volume"`
	VolumeName string `json:"volume_name"`
	VolumeFile string `json:"volume_file"`
	// Findings are the finding IDs that made the mount risky.
	Findings []string `json:"findings"`
	// Migrate are the commands, in order, that move the existing data
	// into the volume once.
	Migrate []string `json:"migrate,omitempty"`
	// MigrateNeedsImage is set, and Migrate empty, when the migration
	// runs preflight from an image (the service's own image does not run
	// it) and PlanOptions.MigrateImage was empty: no command is printed
	// that could not run as printed.
	MigrateNeedsImage bool `json:"migrate_needs_image,omitempty"`
	// SameAs is set when an earlier rewrite already moves this host
	// directory into the same volume (its migration covers this one).
	SameAs string `json:"same_as,omitempty"`
	// Refused says why the file is not edited automatically (the
	// suggestion stands; edit by hand).
	Refused string `json:"refused,omitempty"`
	// Note says what to know before migrating: the host directory does
	// not exist on this machine (nothing to move here).
	Note string `json:"note,omitempty"`
	// LeftBehind lists the mounts (SERVICE:TARGET SOURCE) of a directory
	// inside HostPath or containing it that this rewrite does not move:
	// after it they read or write the old directory, not the volume.
	LeftBehind []string `json:"left_behind,omitempty"`
}

// FileEdit is one file before and after the rewrite.
type FileEdit struct {
	File   string `json:"file"`
	Before []byte `json:"-"`
	After  []byte `json:"-"`
	// Backup is where the original was saved by a write (FILE.bak, or
	// FILE.bak.N when that existed); empty before.
	Backup string `json:"backup,omitempty"`
}

// Changed reports whether the edit changes the file.
func (e FileEdit) Changed() bool { return !bytes.Equal(e.Before, e.After) }

// PlanOptions configure Plan.
type PlanOptions struct {
	// ComposeArgs are the docker compose global flags that select this
	// project (-f, -p, --profile, --env-file), already shell-quoted, for
	// the printed commands.
	ComposeArgs string
	// MigrateImage is the image holding preflight for the one-shot
	// migration container when the service's own image does not run
	// preflight. It has no default: without it, a migration that needs
	// it has no commands and Rewrite.MigrateNeedsImage set.
	MigrateImage string
}

// ErrNoMigrateImage is the error of a command that must print every
// migration (compose --write) when a rewrite has MigrateNeedsImage: a
// migration needs an image with preflight (the service's own image does
// not run it) and PlanOptions.MigrateImage is empty.
var ErrNoMigrateImage = errors.New("no image with preflight for the migration command")

// Deploy modes and update orders in Deploy (the Compose specification's
// deploy section, https://github.com/compose-spec/compose-spec/blob/main/deploy.md).
const (
	DeployReplicated = "replicated"
	DeployGlobal     = "global"
	OrderStopFirst   = "stop-first"
	OrderStartFirst  = "start-first"
)

// Deploy is what a service's deploy: section (and scale:) says about how
// many of its containers run at once: the keys docker stack deploy honours
// on Swarm, and docker compose up for replicas.
type Deploy struct {
	// Mode is DeployReplicated (the default) or DeployGlobal (one task on
	// every node of the swarm).
	Mode string `json:"mode"`
	// Replicas is deploy.replicas (or scale:), 1 when neither is set.
	Replicas int `json:"replicas"`
	// ReplicasKey is the key Replicas was read from: "deploy.replicas",
	// "scale", or "" when neither is set.
	ReplicasKey string `json:"replicas_key,omitempty"`
	// UpdateOrder and RollbackOrder are update_config.order and
	// rollback_config.order: OrderStopFirst (the default) or
	// OrderStartFirst (the new container starts before the old one stops).
	UpdateOrder   string `json:"update_order"`
	RollbackOrder string `json:"rollback_order"`
}
