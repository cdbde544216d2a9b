package preflight

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/preflight-sqlite/preflight/internal/shell"

	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/manifest"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// subject is what a rule looks at: a data directory, and one of its
// databases for database rules (nil for directory rules).
type subject struct {
	r   *Report
	opt WriterOptions
	dir *DataDir
	db  *Database
	// cm is the compose service mount for compose rules (nil otherwise).
	cm *compose.Mount
	// km is the workload volume for manifest rules (nil otherwise).
	km *manifest.Mount
	// exported is Options.JournalModeExported.
	exported bool
}

// class is the filesystem class that decides WAL safety for the subject:
// for a database on a single-file bind mount, the worse of the file's and
// the directory's (its -wal and -shm live in the directory).
func (s subject) class() mounts.Class {
	c := mounts.ClassUnknown
	if s.dir.Mount != nil {
		c = s.dir.Mount.Class
	}
	if s.db != nil && s.db.Mount != nil && riskier(s.db.Mount.Class, c) {
		c = s.db.Mount.Class
	}
	if k, ok := kubeClass(s); ok && riskier(k, c) {
		c = k // the PV or StorageClass says riskier than the mount table
	}
	return c
}

// mount is the mount that decided class().
func (s subject) mount() *mounts.Mount {
	if s.db != nil && s.db.Mount != nil && (s.dir.Mount == nil || riskier(s.db.Mount.Class, s.dir.Mount.Class)) {
		return s.db.Mount
	}
	return s.dir.Mount
}

func (s subject) path() string {
	switch {
	case s.cm != nil:
		return s.cm.Key()
	case s.km != nil:
		return s.r.Manifests.Workloads[s.km.Workload].Key()
	case s.db != nil:
		return s.db.Path
	case s.dir != nil:
		return s.dir.Path
	}
	return ""
}

// Rule describes one finding: its stable ID, default level and meaning.
type Rule struct {
	ID    string `json:"id"`
	Level Level  `json:"level"`
	Doc   string `json:"doc"`
}

type rule struct {
	Rule
	// onDB selects database rules (evaluated per database) over directory
	// rules (evaluated once per data directory); onReport rules are
	// evaluated once per report, with dir and db nil; onCompose rules once
	// per compose service mount (Report.Compose.Mounts), with cm set;
	// onManifest rules once per workload volume of Report.Manifests, with
	// km set.
	onDB, onReport, onCompose, onManifest bool
	// match returns the message and the level (zero: the rule's level) when
	// the rule applies.
	match func(s subject) (msg string, lvl Level, ok bool)
	// remedy lists the fixes.
	remedy func(s subject) []string
}

// unsafeForWAL reports whether WAL's shared-memory and locking needs are not
// met on filesystems of class c.
func unsafeForWAL(c mounts.Class) bool {
	return c == mounts.ClassCrossVM || c == mounts.ClassNetwork || c == mounts.ClassFUSE
}

// riskier orders classes for WAL: cross-vm, network, fuse, unknown,
// sandbox, ephemeral, local.
func riskier(a, b mounts.Class) bool { return classRisk(a) > classRisk(b) }

// Riskier reports whether filesystem class a is less safe for WAL than b,
// in the order cross-vm, network, fuse, unknown, sandbox, ephemeral, local.
func Riskier(a, b mounts.Class) bool { return riskier(a, b) }

// WALClass is the filesystem class that decides WAL safety for db in d:
// the riskier of the directory's mount and the database's own (a
// single-file bind mount, or a symlink to another filesystem); unknown
// when the directory could not be classified.
func WALClass(d *DataDir, db *Database) mounts.Class { return subject{dir: d, db: db}.class() }

func classRisk(c mounts.Class) int {
	switch c {
	case mounts.ClassCrossVM:
		return 6
	case mounts.ClassNetwork:
		return 5
	case mounts.ClassFUSE:
		return 4
	case mounts.ClassUnknown:
		return 3
	case mounts.ClassSandbox:
		return 2
	case mounts.ClassEphemeral:
		return 1
	case mounts.ClassLocal:
		return 0
	}
	return classRisk(mounts.ClassUnknown) // a class this table does not know is not safe
}

func walUnsafeRemedy(s subject) []string {
	p := s.path()
	conv := fmt.Sprintf("Stop every process that uses %s (every container and host program), then convert it offline to the rollback journal with preflight convert %s (it checks for writers, backs up, checkpoints and verifies; in the entrypoint: preflight run --on-unsafe convert), and pin the application's journal mode to DELETE (preflight run exports PREFLIGHT_JOURNAL_MODE=delete, and --export-env NAME for the application's own setting).", p, shell.Quote(p))
	if pool, ok := unraidPoolRemedy(s); ok {
		return []string{pool, "Or, on the user share: " + conv}
	}
	out := []string{conv, "Or move the data to a named volume or a native Linux filesystem inside the VM (compose: replace the bind mount with a named volume), where WAL is safe."}
	if m := s.mount(); m != nil && locksStayLocal(m) {
		out = append(out, "Even after a conversion to DELETE (which needs no -shm), the locks do not reach the other side: "+lowerFirst(bothSidesRemedy(m)))
	}
	return out
}

// newDBMessage says what happens to a new database on an unsafe
// filesystem, at warn unless the application is told the journal mode
// (Options.JournalModeExported).
func newDBMessage(s subject) (string, Level) {
	if s.exported {
		return "the application is told journal_mode=delete (--export-env): it must create its databases in that mode", LevelInfo
	}
	return "most applications create a new database in their own default journal mode, often WAL, whatever PREFLIGHT_JOURNAL_MODE says, and fail later with \"disk I/O error\" or a corrupt database", ""
}

func newDBRemedy(s subject) []string {
	out := []string{"Tell the application the journal mode: preflight run --export-env NAME (PREFLIGHT_EXPORT_ENV) sets NAME, the application's own journal-mode setting, to delete here; or set journal_mode=DELETE in its database URL or configuration before its first start."}
	if s.exported {
		// --export-env is given: what is left is to make sure it reaches
		// the application.
		out = []string{"Make sure the variable --export-env sets is the one the application reads for its journal mode (its documentation names it), or set journal_mode=DELETE in its database URL or configuration before its first start."}
	}
	if pool, ok := unraidPoolRemedy(s); ok {
		return append(out, "Or: "+pool)
	}
	return append(out, "Or move the data to a named volume or a local path, where WAL is safe.")
}

func walOn(class mounts.Class, what string) func(s subject) (string, Level, bool) {
	return func(s subject) (string, Level, bool) {
		if s.db.JournalMode != sqlitefile.JournalWAL || s.class() != class {
			return "", "", false
		}
		m := s.mount()
		lvl := Level("")
		if class == mounts.ClassFUSE && !m.KnownLosses {
			lvl = LevelWarn
		}
		reason := m.Reason
		if k, ok := kubeReason(s); ok {
			reason = k // the PV, not the mount table, made it this class
		}
		return fmt.Sprintf("%s is in WAL mode on %s (%s); WAL needs POSIX locks and a shared-memory index (-shm) that every process sees, so two writers can interleave WAL frames and the database later fails with \"database disk image is malformed\"",
			filepath.Base(s.db.Path), what, reason), lvl, true
	}
}

// rules is the one rules table: every finding preflight makes comes from here.
var rules = []rule{
	{
		Rule: Rule{"data-dir-missing", LevelError, "a configured data directory or database path does not exist"},
		match: func(s subject) (string, Level, bool) {
			if s.dir.Exists || s.dir.saved || s.dir.StatError != "" {
				return "", "", false
			}
			return fmt.Sprintf("%s does not exist", s.dir.Path), "", true
		},
		remedy: func(s subject) []string {
			dir := s.dir.Path
			if sqlitefile.LooksLikeDatabase(dir) {
				dir = filepath.Dir(dir)
			}
			return []string{
				fmt.Sprintf("Create %s, or mount the data volume there (docker run -v NAME:%s), or fix the configured path (--data-dir, PREFLIGHT_DATA_DIR).", dir, dir),
				fmt.Sprintf("In the image, make %s exist and belong to the user the application runs as, or SQLite fails with \"unable to open database file\" (error 14, which some drivers print as \"out of memory (14)\"): RUN mkdir -p %s && chown APPUSER %s (a FROM scratch image has no mkdir: COPY --chown=UID:GID an empty directory to %s), and VOLUME %s, so that a named volume mounted there starts with that owner; a bind-mounted host directory keeps its host owner (chown it on the host).", dir, dir, dir, dir, dir),
			}
		},
	},
	{
		Rule: Rule{"data-dir-unreadable", LevelError, "a configured path exists but cannot be examined, or a data directory cannot be listed (permission denied, a symlink loop): nothing is known about it"},
		match: func(s subject) (string, Level, bool) {
			if s.dir.StatError == "" {
				return "", "", false
			}
			return fmt.Sprintf("cannot examine %s: %s", s.dir.Path, s.dir.StatError), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Run preflight as the user that owns the data (or as root), or fix the path."}
		},
	},
	{
		Rule: Rule{"fs-unresponsive", LevelError, "a data directory did not answer a stat and a directory read in time (--fs-timeout): a stuck FUSE daemon, a dead NFS server or VM share"},
		match: func(s subject) (string, Level, bool) {
			if s.dir.Unresponsive == "" {
				return "", "", false
			}
			return s.dir.Unresponsive + "; nothing else was checked there, and the application would hang on it too", "", true
		},
		remedy: func(s subject) []string {
			return []string{"Find what serves this path (preflight mounts " + shell.Quote(s.dir.Path) + ") and restart it: the FUSE daemon, the NFS server, Docker Desktop's file sharing."}
		},
	},
	{
		Rule: Rule{"scan-depth-limit", LevelInfo, "directories at the --max-depth limit were not searched for databases: warn on an unsafe filesystem, where a WAL database there would go unseen"},
		match: func(s subject) (string, Level, bool) {
			if s.dir.NotSearched == 0 {
				return "", "", false
			}
			lvl := Level("")
			if s.dir.Mount == nil || unsafeForWAL(s.dir.Mount.Class) || s.dir.Mount.Class == mounts.ClassUnknown {
				lvl = LevelWarn
			}
			return fmt.Sprintf("%s under %s %s deeper than --max-depth and %s not searched for databases", count(s.dir.NotSearched, "directory", "directories"), s.dir.Path, plural(s.dir.NotSearched, "is", "are"), plural(s.dir.NotSearched, "was", "were")), lvl, true
		},
		remedy: func(s subject) []string {
			return []string{"Raise --max-depth, or give the directory that holds the databases as the data directory."}
		},
	},
	{
		Rule: Rule{"scan-sniff-limit", LevelWarn, "the budget for reading the headers of files without a database name (--sniff-max, --sniff-time) ran out: a database with another name among the rest would go unseen"},
		match: func(s subject) (string, Level, bool) {
			if s.dir.NotSniffed == 0 {
				return "", "", false
			}
			return fmt.Sprintf("%s under %s without a database name %s not opened to look for a SQLite header (--sniff-max or --sniff-time reached); every *.db, *.sqlite, *.sqlite3 and *.db3 there was checked", count(s.dir.NotSniffed, "file", "files"), s.dir.Path, plural(s.dir.NotSniffed, "was", "were")), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Give each database a .db, .sqlite, .sqlite3 or .db3 name, give the directory that holds the databases as the data directory (not a parent with a large cache), or raise --sniff-max and --sniff-time."}
		},
	},
	{
		Rule: Rule{"unknown-fs", LevelWarn, "the data directory's filesystem could not be classified, or the mount table could not be read"},
		match: func(s subject) (string, Level, bool) {
			if s.dir.Mount == nil {
				return fmt.Sprintf("cannot tell which filesystem holds %s: %s", s.dir.Path, s.dir.MountError), "", true
			}
			if s.dir.Mount.Class != mounts.ClassUnknown {
				return "", "", false
			}
			return fmt.Sprintf("%s is on an unrecognised filesystem (%s); preflight cannot tell whether WAL is safe there", s.dir.Path, s.dir.Mount.Reason), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Use journal_mode=DELETE unless you know this filesystem gives every process coherent POSIX locks and shared mmap (preflight run exports PREFLIGHT_JOURNAL_MODE=delete here).", "Run preflight mounts to see the mount table entry and report the fstype."}
		},
	},
	{
		Rule: Rule{"fs-type-mismatch", LevelWarn, "the mount table and statfs(2) disagree about a filesystem under the data directory (the table says ext4, the superblock magic says NFS): the riskier of the two decides"},
		match: func(s subject) (string, Level, bool) {
			bad := statfsDisagreements(s.dir)
			if len(bad) == 0 {
				return "", "", false
			}
			var what []string
			for _, m := range bad {
				what = append(what, fmt.Sprintf("%s: the mount table says %s, statfs(2) says %s", m.Mountpoint, nonEmpty(m.FSType, "nothing readable"), m.Statfs))
			}
			return fmt.Sprintf("under %s the two witnesses of the filesystem disagree (%s); preflight judges by the riskier class (%s)", s.dir.Path, strings.Join(what, "; "), bad[0].Class), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Run preflight mounts " + shell.Quote(s.dir.Path) + " and stat -f " + shell.Quote(s.dir.Path) + " and report both: a mount table that does not match the kernel (a stale copy, a mount namespace seen from outside) cannot be trusted to call this path safe."}
		},
	},
	{
		Rule: Rule{"ephemeral-data-dir", LevelWarn, "the data directory is in the container's writable layer or in memory: its data is lost when the container is removed"},
		match: func(s subject) (string, Level, bool) {
			if s.dir.Mount == nil || s.dir.Mount.Class != mounts.ClassEphemeral {
				return "", "", false
			}
			if s.dir.dbFile && len(s.dir.Databases) == 1 && s.dir.Databases[0].SingleFileMount {
				return "", "", false // the file is a mount of its own: single-file-bind says what is lost
			}
			when := "when the container is removed (docker rm, compose down, a recreate on upgrade)"
			if s.dir.Mount.FSType == "tmpfs" || s.dir.Mount.FSType == "ramfs" {
				when = "when the container stops or restarts"
			}
			return fmt.Sprintf("%s is not on a persistent volume: its data is lost %s (%s)", s.dir.Path, when, s.dir.Mount.Reason), "", true
		},
		remedy: func(s subject) []string {
			return []string{fmt.Sprintf("Mount a named volume at %s: docker run -v APP-data:%s ..., or in compose: volumes: [\"app-data:%s\"] with a top-level volumes: {app-data: {}}.", s.dir.Path, s.dir.Path, s.dir.Path)}
		},
	},
	{
		Rule: Rule{"unsafe-fs-not-inspected", LevelWarn, "the path is on a filesystem unsafe for WAL, and its databases could not be inspected (path not on this machine)"},
		match: func(s subject) (string, Level, bool) {
			if s.dir.Inspected || s.dir.Mount == nil || !unsafeForWAL(s.dir.Mount.Class) {
				return "", "", false
			}
			return fmt.Sprintf("%s is on a %s filesystem (%s); its databases were not inspected, and any database there in WAL mode is at risk", s.dir.Path, s.dir.Mount.Class, s.dir.Mount.Reason), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Run preflight check inside the container that uses this path to read each database's journal mode.", "Use journal_mode=DELETE for every database here, or move the data to a named volume."}
		},
	},
	{
		Rule: Rule{"new-db-on-unsafe-fs", LevelWarn, "no database yet (or a new, empty one) on a filesystem unsafe for WAL: the application creates it in its own default mode, often WAL (info when run --export-env tells it the mode)"},
		match: func(s subject) (string, Level, bool) {
			if !s.dir.Inspected || s.dir.Mount == nil || !unsafeForWAL(s.class()) {
				return "", "", false
			}
			if s.db == nil && len(s.dir.Databases) == 0 && s.dir.NotSearched == 0 && s.dir.Duplicates == 0 {
				msg, lvl := newDBMessage(s)
				return fmt.Sprintf("%s holds no database yet and is on a %s filesystem (%s); %s", s.dir.Path, s.dir.Mount.Class, s.dir.Mount.Reason, msg), lvl, true
			}
			return "", "", false
		},
		remedy: newDBRemedy,
	},
	{
		Rule: Rule{"wal-without-database", LevelError, "the database file is empty or missing but its -wal holds frames: SQLite sees an empty database and deletes that -wal at the next open, with the data in it"}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			if !s.db.New || s.db.WAL.SizeBytes <= sqlitefile.WALHeaderSize {
				return "", "", false
			}
			return fmt.Sprintf("%s is missing or empty but its -wal holds %d bytes of frames: the data is in the WAL, and the next open (the application's, or sqlite3's) sees an empty database and deletes the -wal", filepath.Base(s.db.Path), s.db.WAL.SizeBytes), "", true
		},
		remedy: func(s subject) []string {
			q := shell.Quote(s.db.Path)
			return []string{
				"Do not start the application or open the database. Copy the files aside first: cp -a " + q + "* SAFE_DIR/ (the database, -wal and -shm).",
				"Then restore the database file from a backup (the -wal's frames hold the pages written since the last checkpoint, not necessarily the whole database); how the file was emptied (a copy that skipped it, a truncation, a full disk) is worth finding out before the next start.",
			}
		},
	},
	{
		Rule: Rule{"new-db-on-unsafe-fs", LevelWarn, ""}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			if !s.db.New || s.db.WAL.SizeBytes > sqlitefile.WALHeaderSize || !unsafeForWAL(s.class()) {
				return "", "", false
			}
			msg, lvl := newDBMessage(s)
			return fmt.Sprintf("%s is new (empty) and is on a %s filesystem (%s); %s", filepath.Base(s.db.Path), s.class(), s.mount().Reason, msg), lvl, true
		},
		remedy: newDBRemedy,
	},
	{
		Rule: Rule{"wal-on-cross-vm", LevelError, "a WAL database on a bind mount that crosses a VM boundary (Docker Desktop, OrbStack, Podman machine, Colima, Lima, WSL2 drives)"}, onDB: true,
		match:  walOn(mounts.ClassCrossVM, "a bind mount that crosses a VM boundary"),
		remedy: walUnsafeRemedy,
	},
	{
		Rule: Rule{"wal-on-network-fs", LevelError, "a WAL database on a network or distributed filesystem (NFS, SMB/CIFS, CephFS, sshfs, object stores)"}, onDB: true,
		match:  walOn(mounts.ClassNetwork, "a network filesystem"),
		remedy: walUnsafeRemedy,
	},
	{
		Rule: Rule{"wal-on-fuse", LevelError, "a WAL database on a FUSE filesystem: error for Unraid user shares (fuse.shfs) and mergerfs, warn for other FUSE"}, onDB: true,
		match:  walOn(mounts.ClassFUSE, "a FUSE filesystem"),
		remedy: walUnsafeRemedy,
	},
	{
		Rule: Rule{"wal-on-sandbox-fs", LevelWarn, "a WAL database on a gVisor sandbox's gofer mount (shown as 9p): coherent among the processes inside this sandbox, not with the host or another sandbox that opens the same files"}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			if s.db.JournalMode != sqlitefile.JournalWAL || s.class() != mounts.ClassSandbox {
				return "", "", false
			}
			return fmt.Sprintf("%s is in WAL mode on a gVisor sandbox's mount (%s); WAL is safe among the processes inside this sandbox, which share its kernel, but a process on the host or in another sandbox (a second pod or container on the same volume, a backup job on the node) sees neither their locks nor their -shm index, and writers on both sides can interleave WAL frames",
				filepath.Base(s.db.Path), s.mount().Reason), "", true
		},
		remedy: func(s subject) []string {
			return []string{
				"Keep every process that opens " + s.db.Path + " inside this one sandbox: one pod or container per volume (ReadWriteOnce), and nothing on the host or in another sandbox opening it while the application runs.",
				"To copy or back it up from outside, stop the application first, or use sqlite3's .backup from inside the sandbox.",
			}
		},
	},
	{
		Rule: Rule{"wal-reenabled", LevelError, "a database preflight converted to DELETE at an earlier start is in WAL mode again: the application turns WAL on when it opens the database"}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			if s.db.JournalMode != sqlitefile.JournalWAL || !slices.Contains(s.opt.Converted, s.db.canonical()) {
				return "", "", false
			}
			return fmt.Sprintf("%s was converted to journal_mode=DELETE at an earlier start and is in WAL mode again: the application sets journal_mode=WAL when it opens it (WAL is persistent once set), so every start undoes the conversion", filepath.Base(s.db.Path)), "", true
		},
		remedy: func(s subject) []string {
			return []string{
				"Pin the application's journal mode to DELETE: have it follow PREFLIGHT_JOURNAL_MODE (preflight run sets it to delete here), or pass --export-env NAME (PREFLIGHT_EXPORT_ENV) to set the application's own variable, or change the journal_mode in its database URL or configuration.",
				"Or move the data to a named volume or a native Linux filesystem, where WAL is safe.",
			}
		},
	},
	{
		Rule: Rule{"single-file-bind", LevelWarn, "a database file is bind-mounted on its own: its -wal, -shm and -journal are created on the directory's filesystem, not beside the file (error in WAL mode)"}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			if !s.db.SingleFileMount || s.dir.Mount == nil {
				return "", "", false
			}
			lvl, lost := Level(""), ""
			if s.db.JournalMode == sqlitefile.JournalWAL {
				lvl, lost = LevelError, "; in WAL mode committed transactions wait in the -wal, which stays behind"
			}
			return fmt.Sprintf("%s is a single-file mount (%s) while its directory is on %s (%s): the -wal, -shm and -journal files do not travel with the database%s", s.db.Path, s.db.Mount.FSType, s.dir.Mount.Mountpoint, s.dir.Mount.FSType, lost), lvl, true
		},
		remedy: func(s subject) []string {
			return []string{fmt.Sprintf("Mount the directory that holds the database (for example -v APP-data:%s), not the file.", filepath.Dir(s.db.Path))}
		},
	},
	{
		Rule: Rule{"sidecar-symlink", LevelError, "a -wal, -shm or -journal beside a database is a symlink: SQLite refuses to open the database, or writes its journal somewhere else"}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			if len(s.db.SidecarLinks) == 0 {
				return "", "", false
			}
			return fmt.Sprintf("%s: %s; SQLite keeps these files beside the database and does not follow such links (the application fails with \"unable to open database file\"), and the journal would live on another filesystem", s.db.Path, strings.Join(s.db.SidecarLinks, ", ")), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Stop the application, move the linked file's content back beside the database under its own name only if it holds committed transactions (a -wal does; keep a copy of everything first), and remove the link; move the whole data directory instead if it must live elsewhere."}
		},
	},
	{
		Rule: Rule{"sidecar-not-regular", LevelError, "a -wal, -shm or -journal beside a database is not a regular file (a FIFO, a socket, a device, a directory): SQLite cannot open the database, and a program that opens a FIFO waits forever"}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			odd := irregularSidecars(&s.db.Database)
			if len(odd) == 0 {
				return "", "", false
			}
			return fmt.Sprintf("%s: %s; the application fails to open the database or hangs opening it, and nothing here reads these files", s.db.Path, strings.Join(odd, ", ")), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Stop the application and remove what is in the way (rm " + shell.Quote(s.db.Path) + "-wal etc. only once you know it is not a real -wal: a regular -wal holds committed transactions); find who put it there, since SQLite never makes one."}
		},
	},
	damagedDBRule,
	{
		Rule: Rule{"not-sqlite", LevelWarn, "a file given as a database, or named like one, holds another program's format (text, bbolt, Berkeley DB, DuckDB, H2), or, given by path, bytes of no known format"}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			if !s.db.NotSQLite || DamagedDB(s.db) {
				return "", "", false
			}
			why := "its header does not start with \"SQLite format 3\""
			if s.db.Err != "" {
				why = s.db.Err
			}
			if s.db.Format.Other() {
				why = fmt.Sprintf("its first bytes are %s, not a SQLite header", s.db.Format)
			}
			return fmt.Sprintf("%s is not a SQLite database: %s", s.db.Path, why), "", true
		},
		remedy: func(s subject) []string {
			return []string{"If this file belongs to another program, ignore it: --ignore not-sqlite. If it should be a SQLite database, its header is overwritten: keep a copy of it and everything beside it, and restore it from a backup."}
		},
	},
	{
		Rule: Rule{"db-unreadable", LevelWarn, "a database or sidecar could not be read, so its journal mode is unknown"}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			if s.db.NotSQLite || s.db.Err == "" {
				return "", "", false
			}
			return fmt.Sprintf("cannot read %s: %s; its journal mode is unknown", s.db.Path, s.db.Err), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Run preflight as the user that owns the data (or as root) so it can read the database header."}
		},
	},
	{
		Rule: Rule{"journal-mode-unknown", LevelWarn, "a database header names neither the rollback journal nor WAL (bytes 18 and 19)"}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			if s.db.Header == nil || s.db.JournalMode != sqlitefile.JournalUnknown {
				return "", "", false
			}
			return fmt.Sprintf("%s has file format bytes %d/%d: neither rollback (1) nor WAL (2)", s.db.Path, s.db.Header.WriteVersion, s.db.Header.ReadVersion), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Open it with sqlite3 and run PRAGMA integrity_check; restore from a backup if it fails."}
		},
	},
	{
		Rule: Rule{"scan-incomplete", LevelWarn, "part of a data directory below its top could not be read, so some databases may not have been checked"},
		match: func(s subject) (string, Level, bool) {
			if len(s.dir.Errors) == 0 {
				return "", "", false
			}
			return fmt.Sprintf("%s under %s could not be read (first: %s); databases there were not checked", count(len(s.dir.Errors), "entry", "entries"), s.dir.Path, s.dir.Errors[0]), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Run preflight as the user that owns the data (or as root)."}
		},
	},
}

// writerRules are the live-writer findings; appended to rules in init, last,
// so the table reads in order of what a user meets first.
var writerRules = []rule{
	{
		Rule: Rule{"wal-sidecar-unlinked", LevelError, "a process holds a -wal or -shm that is no longer the file at that path (deleted or replaced): its writes go where other connections never look"}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			if len(s.db.Unlinked) == 0 {
				return "", "", false
			}
			var who []string
			for _, u := range s.db.Unlinked {
				who = append(who, fmt.Sprintf("process %d (%s) holds %s by %s, now %q", u.PID, u.Comm, u.File, u.How, u.Link))
			}
			return fmt.Sprintf("%s: %s; that process writes to a file other connections of %s never see", filepath.Base(s.db.Path), strings.Join(who, "; "), filepath.Base(s.db.Path)), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Stop the process that holds the replaced file before anything else writes the database (its committed transactions are in the file it holds), then check the database: preflight check --deep (or sqlite3 DB 'PRAGMA integrity_check'). Never delete or replace -wal or -shm of a database in use."}
		},
	},
	{
		Rule: Rule{"live-writer-process", LevelInfo, "a process on this kernel has the database, its -wal or its -shm open"}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			var who []string
			for _, w := range s.db.Writers {
				if w.Kind == "process" {
					who = append(who, fmt.Sprintf("%s via %s", w.Name(), strings.Join(w.Files, ", ")))
				}
			}
			if len(who) == 0 {
				return "", "", false
			}
			return fmt.Sprintf("%s is open in %s", filepath.Base(s.db.Path), strings.Join(who, "; ")), "", true
		},
		remedy: stopWriters("process"),
	},
	{
		Rule: Rule{"live-writer-lock", LevelInfo, "a POSIX lock on the database or its -shm is held by a process this scan could not name (another container on the same kernel shows as a holder outside this PID namespace)"}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			var who []string
			for _, w := range s.db.Writers {
				if w.Kind == "lock" {
					who = append(who, w.Name())
				}
			}
			if len(who) == 0 {
				return "", "", false
			}
			return fmt.Sprintf("%s is locked by %s", filepath.Base(s.db.Path), strings.Join(who, "; ")), "", true
		},
		remedy: stopWriters("lock"),
	},
	{
		Rule: Rule{"live-writer-container", LevelInfo, "another container mounts this database's data read-write (Docker Engine API)"}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			var who []string
			for _, w := range s.db.Writers {
				if w.Kind == "container" {
					who = append(who, fmt.Sprintf("%s, %s", w.Name(), w.Relation))
				}
			}
			if len(who) == 0 {
				return "", "", false
			}
			return fmt.Sprintf("%s is reachable read-write from %s", filepath.Base(s.db.Path), strings.Join(who, "; ")), "", true
		},
		remedy: stopWriters("container"),
	},
	{
		Rule: Rule{"stopped-container-writer", LevelInfo, "a stopped container (created, exited) mounts this database's data read-write: started again, it is a second writer (Docker Engine API)"}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			var who []string
			for _, w := range s.db.Stopped {
				who = append(who, fmt.Sprintf("%s, %s, %s", w.Name(), w.Container.State, w.Relation))
			}
			if len(who) == 0 {
				return "", "", false
			}
			return fmt.Sprintf("%s is reachable read-write from stopped %s: once started it writes too", filepath.Base(s.db.Path), strings.Join(who, "; ")), "", true
		},
		remedy: func(s subject) []string {
			var out []string
			for _, w := range s.db.Stopped {
				out = append(out, "Remove it if it is not needed (docker rm "+shell.Quote(w.Container.Name)+"), or mount the data read-only in it, before it starts beside the application.")
			}
			return out
		},
	},
	{
		Rule: Rule{"multiple-writers", LevelWarn, "more than one writer besides the application: error for WAL on a cross-vm, network or fuse filesystem (corruption is happening now), warn elsewhere (the pattern behind \"database is locked\")"}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			in := s.r.Docker != nil && s.r.Docker.InContainer
			n := writerCount(s.db, in) + remoteWriters(s) // Swarm tasks on other nodes (rules_swarm.go)
			threshold := 2
			if s.opt.Starting {
				threshold = 1
			}
			if n < threshold {
				return "", "", false
			}
			lvl := LevelWarn
			what := "concurrent writers: expect \"database is locked\" errors"
			if s.db.JournalMode == sqlitefile.JournalWAL && unsafeForWAL(s.class()) {
				lvl = LevelError
				what = fmt.Sprintf("WAL on a %s filesystem with several writers: their WAL frames can interleave now", s.class())
			}
			besides := ""
			if s.opt.Starting {
				besides = " before the application has started"
			}
			writers := "writers"
			if n == 1 {
				writers = "writer"
			}
			return fmt.Sprintf("%s has %d %s%s (%s)", filepath.Base(s.db.Path), n, writers, besides, what), lvl, true
		},
		remedy: func(s subject) []string {
			return append(stopWriters("")(s), "Give each database one writing container or service; share data through the application, not the file.")
		},
	},
	{
		Rule: Rule{"activity-unseen-writer", LevelError, "the database's files changed during the watch while no probe found a writer: a writer elsewhere (a host behind a VM share, another NFS client)"}, onDB: true,
		match: func(s subject) (string, Level, bool) {
			if s.db.Activity == nil || !s.db.Activity.Changed || len(s.db.Writers) > 0 {
				return "", "", false
			}
			return fmt.Sprintf("%s changed during a %s watch (%s) but no process, lock or container on this side has it open: a writer no probe can name is using it", filepath.Base(s.db.Path), s.db.Activity.Interval.Round(time.Millisecond), strings.Join(s.db.Activity.What, "; ")), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Find and stop the program that uses this database on the other side of the share (the macOS or Windows host, another machine mounting the same export); it must not be opened from two machines."}
		},
	},
	{
		Rule: Rule{"docker-unreachable", LevelInfo, "the Docker Engine API did not answer (or not completely), so other containers could not be checked: reported when a database exists (error with --docker required, always)"}, onReport: true,
		match: func(s subject) (string, Level, bool) {
			d := s.r.Docker
			if d == nil {
				return "", "", false
			}
			required := s.opt.Docker.Mode == docker.ModeRequired
			switch d.Status {
			case docker.StatusUnreachable, docker.StatusDenied, docker.StatusFailed:
			case docker.StatusNoDaemon:
				if !required {
					return "", "", false
				}
			default:
				return "", "", false
			}
			lvl := Level("")
			if required {
				lvl = LevelError
			} else if !anyDatabase(s.r) {
				return "", "", false // no database another container could be writing
			}
			return fmt.Sprintf("other containers not checked: Docker %s (%s)", d.Status, nonEmpty(d.Err, "no detail")), lvl, true
		},
		remedy: func(s subject) []string {
			return []string{"Give preflight GET access to the Docker API (see README), or pass --docker off."}
		},
	},
	{
		Rule: Rule{"mount-table-skipped-lines", LevelWarn, "lines of a --mountinfo file fit no known format and were skipped"}, onReport: true,
		match: func(s subject) (string, Level, bool) {
			if s.r.MountTable.Skipped == 0 {
				return "", "", false
			}
			return fmt.Sprintf("%s of %s %s no mount table format and %s skipped", count(s.r.MountTable.Skipped, "line", "lines"), s.r.MountTable.Source, plural(s.r.MountTable.Skipped, "fits", "fit"), plural(s.r.MountTable.Skipped, "was", "were")), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Paste the table as printed by cat /proc/self/mountinfo, cat /proc/mounts, mount or findmnt, without other output."}
		},
	},
}

// init completes the one rules table, in this written order: the path
// rules above, the health rules (health.go), the share rules
// (rules_share.go), the writer rules, the Swarm rules (rules_swarm.go), the
// Kubernetes rules (rules_kube.go).
func init() {
	rules = slices.Concat(rules, healthRules, shareRules, writerRules, swarmRules, kubeRules)
}

// anyDatabase reports whether a data directory holds a database that
// exists (not new, not a file that is not SQLite).
func anyDatabase(r *Report) bool {
	for _, d := range r.DataDirs {
		for _, db := range d.Databases {
			if !db.New && !db.NotSQLite {
				return true
			}
		}
	}
	return false
}

// stopWriters lists the command that stops each writer of kind (all kinds
// for "").
func stopWriters(kind string) func(s subject) []string {
	return func(s subject) []string {
		var out []string
		seen := map[string]bool{}
		for _, w := range s.db.Writers {
			if kind != "" && w.Kind != kind {
				continue
			}
			if cmd := w.Stop(); !seen[cmd] {
				seen[cmd] = true
				out = append(out, "Stop it before converting or moving the database: "+cmd)
			}
		}
		return out
	}
}

// Rules lists every finding ID with its default level and meaning, in the
// order the rules table holds them. An ID appears once.
func Rules() []Rule {
	var out []Rule
	seen := map[string]bool{}
	for _, r := range rules {
		if seen[r.ID] {
			continue
		}
		seen[r.ID] = true
		out = append(out, r.Rule)
	}
	return out
}

// evaluate runs every rule over the report, in table order.
func evaluate(r *Report, opts Options) []Finding {
	var out []Finding
	base := subject{r: r, opt: opts.Writers, exported: opts.JournalModeExported}
	for _, rl := range rules {
		if rl.onReport {
			out = appendMatch(out, rl, base)
		}
	}
	for i := range r.DataDirs {
		d := &r.DataDirs[i]
		for _, rl := range rules {
			switch {
			case rl.onReport, rl.onCompose, rl.onManifest:
			case !rl.onDB:
				s := base
				s.dir = d
				out = appendMatch(out, rl, s)
			default:
				for j := range d.Databases {
					s := base
					s.dir, s.db = d, &d.Databases[j]
					out = appendMatch(out, rl, s)
				}
			}
		}
	}
	if r.Compose != nil {
		for i := range r.Compose.Mounts {
			for _, rl := range rules {
				if rl.onCompose {
					s := base
					s.cm = &r.Compose.Mounts[i]
					out = appendMatch(out, rl, s)
				}
			}
		}
	}
	if r.Manifests != nil {
		out = append(out, evaluateManifests(r, base)...)
	}
	return out
}

func appendMatch(out []Finding, r rule, s subject) []Finding {
	msg, lvl, ok := r.match(s)
	if !ok {
		return out
	}
	if lvl == "" {
		lvl = r.Level
	}
	return append(out, Finding{ID: r.ID, Level: lvl, Path: s.path(), Message: msg, Remedy: r.remedy(s)})
}

// canonical is a database path absolute with symlinks resolved, the form
// WriterOptions.Converted holds (see convert.CanonicalPath).
func (db *Database) canonical() string {
	// resolved was found within the bounded discovery: no filesystem call
	// here, which could hang on a share that stopped answering since.
	if db.resolved != "" {
		return db.resolved
	}
	if a, err := filepath.Abs(db.Path); err == nil {
		return a
	}
	return filepath.Clean(db.Path)
}

// irregularSidecars lists db's -wal, -shm and -journal that exist but are
// not regular files, as "NAME-wal (fifo)".
func irregularSidecars(db *sqlitefile.Database) []string {
	var out []string
	for _, x := range []struct {
		sfx string
		s   sqlitefile.Sidecar
	}{{"-wal", db.WAL}, {"-shm", db.SHM}, {"-journal", db.Journal}} {
		if x.s.Type != "" {
			out = append(out, fmt.Sprintf("%s%s (%s)", filepath.Base(db.Path), x.sfx, x.s.Type))
		}
	}
	return out
}

// IrregularSidecars reports the sidecars of db that are symlinks or not
// regular files (the sidecar-symlink and sidecar-not-regular findings),
// described for a message; nil when there are none.
func IrregularSidecars(db *Database) []string {
	return append(irregularSidecars(&db.Database), db.SidecarLinks...)
}
