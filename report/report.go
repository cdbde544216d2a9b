// Package report holds the one document every judging command produces:
// the facts the probes found (data directories, databases, writers, probe
// statuses) and the findings the rules table (package rules) made of them.
// Its JSON shape is schema preflight/v1 and does not change within it.
package report

import (
	"encoding/json"

	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/manifest"
	"github.com/preflight-sqlite/preflight/probe/activity"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/health"
	"github.com/preflight-sqlite/preflight/probe/kube"
	"github.com/preflight-sqlite/preflight/probe/locks"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/probe/procfs"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
	"github.com/preflight-sqlite/preflight/probe/wal"
)

// Schema names the version of the JSON report. It changes only when a field
// is removed or changes meaning; new fields may appear within a version.
const Schema = "preflight/v1"

// Level is the severity of a finding.
type Level string

// Levels, in increasing severity.
const (
	LevelInfo  Level = "info"
	LevelWarn  Level = "warn"
	LevelError Level = "error"
)

// Rank orders levels: info 0, warn 1, error 2.
func (l Level) Rank() int {
	switch l {
	case LevelWarn:
		return 1
	case LevelError:
		return 2
	}
	return 0
}

// Verdict is the overall judgement of a report.
type Verdict string

// Verdicts: ok (no warning or error), warn (warnings only), unsafe (at least
// one error-level finding).
const (
	VerdictOK     Verdict = "ok"
	VerdictWarn   Verdict = "warn"
	VerdictUnsafe Verdict = "unsafe"
)

// ID is a finding's stable, kebab-case identifier (usable with --ignore).
// Every ID is a constant of package rules, documented on the docs site's
// findings pages; the JSON and text forms are the bare string.
type ID string

// Finding is one judgement made by a rule.
type Finding struct {
	// ID is stable and kebab-case (see rules.Table); usable with --ignore.
	ID ID `json:"id"`
	// Level is the rule's level, or info when the finding is ignored.
	Level Level `json:"level"`
	// Path is the data directory or database the finding is about.
	Path    string `json:"path"`
	Message string `json:"message"`
	// Remedy lists the fixes, each a sentence or a command.
	Remedy []string `json:"remedy,omitempty"`
	// Ignored is set when --ignore demoted the finding to info.
	Ignored bool `json:"ignored,omitempty"`
	// Patch is the JSON merge patch that fixes a kube finding (preflight
	// kube), when one does.
	Patch *KubePatch `json:"patch,omitempty"`
	// At is the place in the manifests a kube finding is about when it
	// is one line rather than an object (duplicate-manifest-key: the key
	// kept); nil otherwise.
	At *manifest.Location `json:"at,omitempty"`
}

// MountTable says where the mount table came from.
type MountTable struct {
	// Source is the file read: /proc/self/mountinfo or the --mountinfo file.
	Source string `json:"source"`
	// Format is the detected format (mountinfo, proc-mounts, mount, findmnt).
	Format mounts.Format `json:"format,omitempty"`
	// Mounts is the number of mount entries read.
	Mounts int `json:"mounts"`
	// Skipped counts lines that fit no format.
	Skipped int `json:"skipped_lines,omitempty"`
	// Error is set when the table could not be read; every path is then
	// classified unknown.
	Error string `json:"error,omitempty"`
	// Saved is true for a --mountinfo table: paths were classified without
	// touching the local filesystem.
	Saved bool `json:"saved,omitempty"`
}

// Database is a database found in a data directory.
type Database struct {
	sqlitefile.Database
	// Link is the path the database was found at when that is a symlink;
	// Path is then the real file, beside which SQLite keeps its -wal, -shm
	// and -journal.
	Link string `json:"link,omitempty"`
	// Mount is set only when the database file sits on another mount than
	// its directory (a single-file bind mount): its -wal and -shm are created
	// in the directory, on the other filesystem.
	Mount *mounts.Mount `json:"mount,omitempty"`
	// Writers lists the processes, lock holders and containers that have
	// the database open (live-writer probes); empty when none was seen.
	Writers []Writer `json:"writers"`
	// Stopped lists the containers (Kind "container") that are not running
	// (created, exited, dead) but mount the database's data read-write:
	// each is a writer again once started. Not counted in Writers.
	Stopped []Writer `json:"stopped_containers,omitempty"`
	// WriterProbes says which live-writer probes ran and whether "no
	// writer found" is sure.
	WriterProbes WriterProbes `json:"writer_probes"`
	// Unlinked lists -wal or -shm files a process holds that are no longer
	// the file at that path.
	Unlinked []procfs.Unlinked `json:"unlinked_sidecars,omitempty"`
	// Activity is the result of the --watch file watch, when it ran.
	Activity *activity.Result `json:"activity,omitempty"`
	// LockHolders lists who holds SQLite's locks on the database and its
	// -shm and what each lock means; empty when none (an idle
	// rollback-mode connection holds none).
	LockHolders []LockHolder `json:"lock_holders,omitempty"`
	// LockWatch is how long each writer-excluding lock was held during
	// --watch, when it ran.
	LockWatch *locks.Watched `json:"lock_watch,omitempty"`
	// SidecarLinks lists -wal, -shm or -journal files that are symlinks
	// ("app.db-wal -> /elsewhere/x").
	SidecarLinks []string `json:"sidecar_links,omitempty"`
	// NFSSillyRenamed lists, by base name and sorted, the NFS silly-rename
	// files (".nfs" and hex digits, sqlitefile.IsNFSSillyRename) in the
	// directory that holds the database's -wal: files an NFS client
	// deleted while one of its processes still had them open, or that a
	// crashed client left behind. Empty when the directory could not be read.
	NFSSillyRenamed []string `json:"nfs_silly_renamed,omitempty"`
	// SingleFileMount is true when the database file is itself a
	// mountpoint (a single-file bind mount).
	SingleFileMount bool `json:"single_file_mount,omitempty"`
	// SidecarMounts holds, by suffix ("-wal", "-shm", "-journal"), each
	// sidecar that is a mount of its own (a file bind-mounted over it),
	// classified; Mount is the riskiest of these when it is riskier than
	// the directory's.
	SidecarMounts map[string]*mounts.Mount `json:"sidecar_mounts,omitempty"`
	// HeaderProblems lists problems of the parsed header (page size, size
	// against the file, encoding, reserved bytes).
	HeaderProblems []health.Problem `json:"header_problems,omitempty"`
	// Health is what --deep found; nil without --deep.
	Health *Health `json:"health,omitempty"`
	// DamagedWAL is the frame chain of the -wal beside a damaged database
	// (see DamagedDB), read in every check: what the -wal holds may be all
	// that is left. Nil for any other database, and when the -wal holds no
	// frame or could not be read (DamagedWALErr says why).
	DamagedWAL *wal.Report `json:"damaged_db_wal,omitempty"`
	// DamagedWALErr is why the -wal of a damaged database could not be read
	// as a WAL, e.g. "validate /data/app.db-wal: not a WAL file: magic
	// 0x00000000"; empty otherwise.
	DamagedWALErr string `json:"damaged_db_wal_error,omitempty"`

	// ResolvedPath is the database path with symlinks resolved: where
	// SQLite creates its -wal and -shm. Not in the JSON.
	ResolvedPath string `json:"-"`
}

// DataDir is one checked path: a data directory or a database file.
type DataDir struct {
	// Path as given, or with --container the host path it maps to.
	Path string `json:"path"`
	// ContainerPath is the path inside the --container the report is for.
	ContainerPath string `json:"container_path,omitempty"`
	// Resolved is Path made absolute with symlinks resolved (nearest
	// existing ancestor for a path that does not exist yet).
	Resolved string `json:"resolved,omitempty"`
	// Mount is the mount that holds Resolved, classified; nil when the mount
	// table could not be read (see MountError).
	Mount      *mounts.Mount `json:"mount,omitempty"`
	MountError string        `json:"mount_error,omitempty"`
	// Exists is false for a path missing on this machine.
	Exists bool `json:"exists"`
	// Inspected is true when the databases in Path were looked for.
	Inspected bool       `json:"inspected"`
	Databases []Database `json:"databases"`
	// Duplicates counts databases found here that were already reported
	// under an earlier path (same device and inode).
	Duplicates int `json:"duplicates,omitempty"`
	// Errors lists files or directories that could not be read.
	Errors []string `json:"errors,omitempty"`

	// StatError is why the path could not be examined when it is not
	// simply missing (permission denied, a symlink loop), or why a directory
	// could not be listed; nothing under it was read.
	StatError string `json:"stat_error,omitempty"`
	// Unresponsive is set when the path did not answer a stat and a
	// directory read in time (a stuck FUSE daemon or NFS server); nothing
	// else was read from it.
	Unresponsive string `json:"unresponsive,omitempty"`
	// NotInspected says why preflight audit could not read this mount of
	// a container from where it ran (no host path here, the container's
	// process not visible); "" when it was read or the path is not a
	// container's.
	NotInspected string `json:"not_inspected,omitempty"`
	// NotSearched counts directories at the --max-depth limit whose
	// contents were not searched for databases.
	NotSearched int `json:"dirs_not_searched,omitempty"`
	// NotSniffed counts files without a database name whose header was not
	// read because the sniffing budget (--sniff-max, --sniff-time) ran out.
	NotSniffed int `json:"files_not_sniffed,omitempty"`
	// FSProbe is the --probe-fs result.
	FSProbe *health.FSResult `json:"fs_probe,omitempty"`

	// Saved is set when the mount table is a saved one (--mountinfo): a path
	// missing here is on the machine the table came from, not missing. Not
	// in the JSON.
	Saved bool `json:"-"`
	// DBFile is set when Path names a database file, not a directory. Not in
	// the JSON.
	DBFile bool `json:"-"`
}

// Report is the one document every judging command produces.
type Report struct {
	Schema  string  `json:"schema"`
	Verdict Verdict `json:"verdict"`
	// JournalMode is the journal mode recommended for every database in the
	// checked paths: "delete" when any of them is on a cross-vm, network,
	// fuse or unknown filesystem, else "wal". Exported to the application as
	// PREFLIGHT_JOURNAL_MODE by `preflight run`.
	JournalMode string `json:"recommended_journal_mode"`
	// FSClass is the least safe class among the checked paths. Exported as
	// PREFLIGHT_FS_CLASS.
	FSClass mounts.Class `json:"fs_class"`
	// Probes names each probe ("mounts", "sqlitefile", "processes",
	// "locks", "docker", "activity", "integrity", "fs", "compose") and how
	// it went.
	Probes     map[string]ProbeStatus `json:"probes"`
	MountTable MountTable             `json:"mount_table"`
	// Engine is the container engine recognised through the Docker API
	// (Docker Desktop, OrbStack, Colima, ...); nil when it did not answer.
	Engine *docker.Engine `json:"engine,omitempty"`
	// Docker is the Docker probe's result: endpoint, status, our own
	// container, where each data path lives.
	Docker *docker.Result `json:"docker,omitempty"`
	// Kube is the Kubernetes probe's result: our pod, the storage behind
	// each data path, other pods mounting it; nil outside a cluster.
	Kube *kube.Result `json:"kube,omitempty"`
	// Container is the --container whose paths were checked.
	Container *docker.Container `json:"container,omitempty"`
	DataDirs  []DataDir         `json:"data_dirs"`
	// Compose is the compose analysis (preflight compose): every service
	// mount, whether it holds SQLite data and why, and the proposed
	// rewrites. Nil for other commands.
	Compose *compose.Analysis `json:"compose,omitempty"`
	// Manifests is the manifest analysis (preflight kube): every
	// workload, claim and workload volume, and which hold SQLite data.
	// Nil for other commands.
	Manifests *manifest.Analysis `json:"manifests,omitempty"`
	Findings  []Finding          `json:"findings"`
	// Patches are the kube findings' patches merged, one per object
	// (rules.MergePatches): the one command that fixes every finding on
	// it; the findings that are not ignored only. Absent when no finding
	// has a patch.
	Patches []KubePatch `json:"patches,omitempty"`
}

// Worst returns the highest level among the report's findings (info when
// there are none).
func (r *Report) Worst() Level {
	worst := LevelInfo
	for _, f := range r.Findings {
		if f.Level.Rank() > worst.Rank() {
			worst = f.Level
		}
	}
	return worst
}

// VerdictOf is the verdict of a report whose worst finding is at level l.
func VerdictOf(l Level) Verdict {
	switch l {
	case LevelError:
		return VerdictUnsafe
	case LevelWarn:
		return VerdictWarn
	}
	return VerdictOK
}

// KubePatch is a JSON merge patch (RFC 7386) that fixes a finding on one
// object of the input.
type KubePatch struct {
	Kind      string            `json:"kind"`
	Name      string            `json:"name"`
	Namespace string            `json:"namespace,omitempty"`
	At        manifest.Location `json:"at"`
	// Merge is the patch document.
	Merge json.RawMessage `json:"merge"`
	// Live is set when the API server accepts the patch on the existing
	// object (kubectl patch KIND NAME); a claim's access modes cannot
	// change once it exists, so that patch is for the manifest.
	Live bool `json:"live"`
	// Command applies it: kubectl patch KIND NAME --type merge -p PATCH,
	// or for a manifest file that holds only that object kubectl patch
	// --local -f FILE ... -o yaml; empty when neither applies.
	Command string `json:"command,omitempty"`
	// Fixes are the findings a merged patch (Report.Patches) fixes, in
	// the order they were found; empty on a finding's own patch.
	Fixes []ID `json:"fixes,omitempty"`
}
