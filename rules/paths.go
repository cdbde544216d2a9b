package rules

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/preflight-sqlite/preflight/internal/shell"

	"github.com/preflight-sqlite/preflight/policy"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

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

// walOnClass gives each class policy calls unsafe for WAL (policy.WALUnsafe)
// that has a wal-on-* finding of its own its ID and what the message calls
// the filesystem; every other such class gets WALOnUnsafeFS, so a class
// added to the policy as unsafe is never silently safe for WAL.
var walOnClass = map[mounts.Class]struct {
	id   ID
	what string
}{
	mounts.ClassCrossVM: {WALOnCrossVM, "a bind mount that crosses a VM boundary"},
	mounts.ClassNetwork: {WALOnNetworkFS, "a network filesystem"},
	mounts.ClassFUSE:    {WALOnFuse, "a FUSE filesystem"},
}

// walOn matches a WAL database on a filesystem policy calls unsafe for
// WAL whose finding is id (walOnClass).
func walOn(id ID) func(s subject) (string, Level, bool) {
	return func(s subject) (string, Level, bool) {
		class := s.class()
		if s.db.JournalMode != sqlitefile.JournalWAL || !policy.WALUnsafe(class) {
			return "", "", false
		}
		own, ok := walOnClass[class]
		if !ok {
			own.id, own.what = WALOnUnsafeFS, fmt.Sprintf("a %s filesystem, where WAL is known not to work", class)
		}
		if own.id != id {
			return "", "", false
		}
		m := s.mount()
		lvl, reason := Level(""), "class "+string(class)
		if m != nil {
			reason = m.Reason
			if class == mounts.ClassFUSE && !m.KnownLosses {
				lvl = LevelWarn
			}
		}
		if k, ok := kubeReason(s); ok {
			reason = k // the PV, not the mount table, made it this class
		}
		return fmt.Sprintf("%s is in WAL mode on %s (%s); WAL needs POSIX locks and a shared-memory index (-shm) that every process sees, so two writers can interleave WAL frames and the database later fails with \"database disk image is malformed\"",
			filepath.Base(s.db.Path), own.what, reason), lvl, true
	}
}

// pathRules judge paths, filesystems and database files (table.go).
var pathRules = []rule{
	{
		Rule: Rule{DataDirMissing, LevelError, "a configured data directory or database path does not exist"},
		match: func(s subject) (string, Level, bool) {
			if s.dir.Exists || s.dir.Saved || s.dir.StatError != "" {
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
		Rule: Rule{DataDirUnreadable, LevelError, "a configured path exists but cannot be examined, or a data directory cannot be listed (permission denied, a symlink loop): nothing is known about it"},
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
		Rule: Rule{FSUnresponsive, LevelError, "a data directory did not answer a stat and a directory read in time (--fs-timeout): a stuck FUSE daemon, a dead NFS server or VM share"},
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
		Rule: Rule{ScanDepthLimit, LevelInfo, "directories at the --max-depth limit were not searched for databases: warn on an unsafe filesystem, where a WAL database there would go unseen"},
		match: func(s subject) (string, Level, bool) {
			if s.dir.NotSearched == 0 {
				return "", "", false
			}
			lvl := Level("")
			if s.dir.Mount == nil || policy.PreferDelete(s.dir.Mount.Class) {
				lvl = LevelWarn
			}
			return fmt.Sprintf("%s under %s %s deeper than --max-depth and %s not searched for databases", count(s.dir.NotSearched, "directory", "directories"), s.dir.Path, plural(s.dir.NotSearched, "is", "are"), plural(s.dir.NotSearched, "was", "were")), lvl, true
		},
		remedy: func(s subject) []string {
			return []string{"Raise --max-depth, or give the directory that holds the databases as the data directory."}
		},
	},
	{
		Rule: Rule{ScanSniffLimit, LevelWarn, "the budget for reading the headers of files without a database name (--sniff-max, --sniff-time) ran out: a database with another name among the rest would go unseen"},
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
		Rule: Rule{UnknownFS, LevelWarn, "the data directory's filesystem could not be classified, or the mount table could not be read"},
		match: func(s subject) (string, Level, bool) {
			if s.dir.Mount == nil {
				return fmt.Sprintf("cannot tell which filesystem holds %s: %s", s.dir.Path, s.dir.MountError), "", true
			}
			if policy.Of(s.dir.Mount.Class).WAL != policy.WALUnsure || s.dir.NotInspected != "" { // unknown, or a class policy has no entry for; an audit mount not read: mount-not-inspected
				return "", "", false
			}
			return fmt.Sprintf("%s is on an unrecognised filesystem (%s); preflight cannot tell whether WAL is safe there", s.dir.Path, s.dir.Mount.Reason), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Use journal_mode=DELETE unless you know this filesystem gives every process coherent POSIX locks and shared mmap (preflight run exports PREFLIGHT_JOURNAL_MODE=delete here).", "Run preflight mounts to see the mount table entry and report the fstype."}
		},
	},
	{
		Rule: Rule{FSTypeMismatch, LevelWarn, "the mount table and statfs(2) disagree about a filesystem under the data directory (the table says ext4, the superblock magic says NFS): the riskier of the two decides"},
		match: func(s subject) (string, Level, bool) {
			bad := s.dir.StatfsDisagreements()
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
		Rule: Rule{EphemeralDataDir, LevelWarn, "the data directory is in the container's writable layer or in memory: its data is lost when the container is removed"},
		match: func(s subject) (string, Level, bool) {
			if s.dir.Mount == nil || !policy.Ephemeral(s.dir.Mount.Class) {
				return "", "", false
			}
			if s.dir.NotInspected != "" && s.dir.Path == "/" {
				// A container's whole root, listed because it could not
				// be read: whether it keeps data is unknown
				// (mount-not-inspected says so).
				return "", "", false
			}
			if s.dir.DBFile && len(s.dir.Databases) == 1 && s.dir.Databases[0].SingleFileMount {
				return "", "", false // the file is a mount of its own: single-file-bind says what is lost
			}
			when := "when the container is removed (docker rm, compose down, a recreate on upgrade)"
			if s.dir.Mount.FSType == "tmpfs" || s.dir.Mount.FSType == "ramfs" {
				when = "when the container stops or restarts"
			}
			return fmt.Sprintf("%s is not on a persistent volume: its data is lost %s (%s)", s.dir.Path, when, s.dir.Mount.Reason), "", true
		},
		remedy: func(s subject) []string {
			v := volumeName(s.dir.Path)
			return []string{fmt.Sprintf("Mount a named volume at %s: docker run -v %s:%s ..., or in compose: volumes: [\"%s:%s\"] with a top-level volumes: {%s: {}}.", s.dir.Path, v, s.dir.Path, v, s.dir.Path, v)}
		},
	},
	{
		Rule: Rule{UnsafeFSNotInspected, LevelWarn, "the path is on a filesystem unsafe for WAL, and its databases could not be inspected (path not on this machine)"},
		match: func(s subject) (string, Level, bool) {
			if s.dir.Inspected || s.dir.Mount == nil || !policy.WALUnsafe(s.dir.Mount.Class) {
				return "", "", false
			}
			return fmt.Sprintf("%s is on a %s filesystem (%s); its databases were not inspected, and any database there in WAL mode is at risk", s.dir.Path, s.dir.Mount.Class, s.dir.Mount.Reason), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Run preflight check inside the container that uses this path to read each database's journal mode.", "Use journal_mode=DELETE for every database here, or move the data to a named volume."}
		},
	},
	{
		Rule: Rule{MountNotInspected, LevelWarn, "preflight audit could not read a writable mount of a container from where it ran: whether it holds SQLite data, and in which journal mode, is unknown"},
		match: func(s subject) (string, Level, bool) {
			if s.dir.NotInspected == "" || s.dir.Mount != nil && policy.WALUnsafe(s.dir.Mount.Class) {
				return "", "", false // unsafe-fs-not-inspected says more
			}
			return fmt.Sprintf("%s was not inspected: %s", s.dir.Path, s.dir.NotInspected), "", true
		},
		remedy: func(s subject) []string {
			if svcs := specServices(s, true); len(svcs) > 0 {
				return []string{fmt.Sprintf("Run preflight audit on a node running a task of service %s: docker service ps %s lists them.", svcs[0].Name, shell.Quote(svcs[0].Name))}
			}
			return []string{"Run the audit where it can read every container: as root on the engine host (sudo preflight audit), or as a container in the host's PID namespace: docker run --rm --pid host --user 0 --cap-add SYS_PTRACE -v /var/run/docker.sock:/var/run/docker.sock:ro ghcr.io/preflight-sqlite/preflight audit"}
		},
	},
	{
		Rule: Rule{NewDBOnUnsafeFS, LevelWarn, "no database yet (or a new, empty one) on a filesystem unsafe for WAL: the application creates it in its own default mode, often WAL (info when run --export-env tells it the mode)"},
		match: func(s subject) (string, Level, bool) {
			if !s.dir.Inspected || s.dir.Mount == nil || !policy.WALUnsafe(s.class()) {
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
		Rule: Rule{WALWithoutDatabase, LevelError, "the database file is empty or missing but its -wal holds frames: SQLite sees an empty database and deletes that -wal at the next open, with the data in it"}, scope: ScopeDatabase, action: ActRefuseStart,
		startRefusal: "opening the database would delete its -wal and the data in it",
		match: func(s subject) (string, Level, bool) {
			if !walWithoutDatabase(s.db) {
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
		Rule: Rule{NewDBOnUnsafeFS, LevelWarn, ""}, scope: ScopeDatabase,
		match: func(s subject) (string, Level, bool) {
			if !s.db.New || s.db.WAL.SizeBytes > sqlitefile.WALHeaderSize || !policy.WALUnsafe(s.class()) {
				return "", "", false
			}
			msg, lvl := newDBMessage(s)
			return fmt.Sprintf("%s is new (empty) and is on a %s filesystem (%s); %s", filepath.Base(s.db.Path), s.class(), s.mount().Reason, msg), lvl, true
		},
		remedy: newDBRemedy,
	},
	{
		Rule: Rule{WALOnCrossVM, LevelError, "a WAL database on a bind mount that crosses a VM boundary (Docker Desktop, OrbStack, Podman machine, Colima, Lima, WSL2 drives)"}, scope: ScopeDatabase, action: ActConvert,
		match:  walOn(WALOnCrossVM),
		remedy: walUnsafeRemedy,
	},
	{
		Rule: Rule{WALOnNetworkFS, LevelError, "a WAL database on a network or distributed filesystem (NFS, SMB/CIFS, CephFS, sshfs, object stores)"}, scope: ScopeDatabase, action: ActConvert,
		match:  walOn(WALOnNetworkFS),
		remedy: walUnsafeRemedy,
	},
	{
		Rule: Rule{WALOnFuse, LevelError, "a WAL database on a FUSE filesystem: error for Unraid user shares (fuse.shfs) and mergerfs, warn for other FUSE"}, scope: ScopeDatabase, action: ActConvert,
		match:  walOn(WALOnFuse),
		remedy: walUnsafeRemedy,
	},
	{
		Rule: Rule{WALOnUnsafeFS, LevelError, "a WAL database on a filesystem of another class that the policy calls unsafe for WAL (one without a wal-on-* finding of its own)"}, scope: ScopeDatabase, action: ActConvert,
		match:  walOn(WALOnUnsafeFS),
		remedy: walUnsafeRemedy,
	},
	{
		Rule: Rule{WALOnSandboxFS, LevelWarn, "a WAL database on a gVisor sandbox's gofer mount (shown as 9p): coherent among the processes inside this sandbox, not with the host or another sandbox that opens the same files"}, scope: ScopeDatabase,
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
		Rule: Rule{WALReenabled, LevelError, "a database preflight converted to DELETE at an earlier start is in WAL mode again: the application turns WAL on when it opens the database"}, scope: ScopeDatabase,
		match: func(s subject) (string, Level, bool) {
			if s.db.JournalMode != sqlitefile.JournalWAL || !slices.Contains(s.opt.Converted, s.db.Canonical()) {
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
		Rule: Rule{SingleFileBind, LevelWarn, "a database file is bind-mounted on its own: its -wal, -shm and -journal are created on the directory's filesystem, not beside the file (error in WAL mode)"}, scope: ScopeDatabase,
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
			return []string{fmt.Sprintf("Mount the directory that holds the database (for example -v %s:%s), not the file.", volumeName(filepath.Dir(s.db.Path)), filepath.Dir(s.db.Path))}
		},
	},
	{
		Rule: Rule{SidecarSymlink, LevelError, "a -wal, -shm or -journal beside a database is a symlink: SQLite refuses to open the database, or writes its journal somewhere else"}, scope: ScopeDatabase,
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
		Rule: Rule{SidecarNotRegular, LevelError, "a -wal, -shm or -journal beside a database is not a regular file (a FIFO, a socket, a device, a directory): SQLite cannot open the database, and a program that opens a FIFO waits forever"}, scope: ScopeDatabase,
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
		Rule: Rule{NotSQLite, LevelWarn, "a file given as a database, or named like one, holds another program's format (text, bbolt, Berkeley DB, DuckDB, H2), or, given by path, bytes of no known format"}, scope: ScopeDatabase,
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
		Rule: Rule{DBUnreadable, LevelWarn, "a database or sidecar could not be read, so its journal mode is unknown"}, scope: ScopeDatabase,
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
		Rule: Rule{JournalModeUnknown, LevelWarn, "a database header names neither the rollback journal nor WAL (bytes 18 and 19)"}, scope: ScopeDatabase,
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
		Rule: Rule{ScanIncomplete, LevelWarn, "part of a data directory below its top could not be read, so some databases may not have been checked"},
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

// walWithoutDatabase reports a database file that is missing or empty while
// its -wal holds frames (wal-without-database).
func walWithoutDatabase(db *Database) bool {
	return db.New && db.WAL.SizeBytes > sqlitefile.WALHeaderSize
}

// volumeName is the named volume a remedy proposes for directory dir:
// "app-" and its last element in the characters a volume name may hold
// (app-config for /config, app-data for /data and for /).
func volumeName(dir string) string {
	base := strings.ToLower(filepath.Base(filepath.Clean(dir)))
	base = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-' {
			return r
		}
		return '-'
	}, base)
	if strings.Trim(base, "-._") == "" {
		base = "data"
	}
	return "app-" + base
}
