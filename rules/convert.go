package rules

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/preflight-sqlite/preflight/internal/shell"

	"github.com/preflight-sqlite/preflight/policy"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/health"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
	"github.com/preflight-sqlite/preflight/probe/wal"
	"github.com/preflight-sqlite/preflight/report"
)

// ConvertStage says when during a conversion convert rules are evaluated:
// each stage needs facts the one before does not (the -wal's frame chain,
// the quiet-period watch).
type ConvertStage int

// Convert stages, in the order convert reaches them.
const (
	// StagePrior: the entrypoint's policy, from the data directory's state
	// file, before anything else (reenabled, failed-before).
	StagePrior ConvertStage = iota
	// StageOpen: before anything but the check has read the database
	// (db-header-damaged, wal-without-database).
	StageOpen
	// StageRead: a failure stage (Fails): the check could not read the
	// database as SQLite (not-sqlite, db-unreadable, journal-mode-unknown);
	// a new or empty database is skipped after it.
	StageRead
	// StageDisk: a failure stage (Fails): convert's own read of the
	// header and the rollback journal (HeaderProblems, Journal) found
	// damage or a hot journal (db-header-damaged, hot-journal).
	StageDisk
	// StageGuard: after the header and journal checks, from the check's
	// report and convert's own looks (writers, probes, sidecars, paths,
	// Litestream).
	StageGuard
	// StageWAL: after the -wal's frame chain was read (wal-loss).
	StageWAL
	// StageWatch: after the quiet-period watch of a database behind a
	// share (activity).
	StageWatch
	// StageConfirm: the operator's confirmation that nothing beyond the
	// share uses the database (needs-confirmation).
	StageConfirm
)

// Fails reports whether the findings of stage are failures rather than
// refusals: convert cannot convert the database at all (its status is
// failed, the first finding's message its error and the remedy its
// hints), whatever the operator allows.
func (stage ConvertStage) Fails() bool { return stage == StageRead || stage == StageDisk }

// Confirmation is how the operator confirmed that nothing on the far side
// of a share has the database open.
type Confirmation int

// Confirmations.
const (
	// NotConfirmed: no terminal to ask, or the operator said no.
	NotConfirmed Confirmation = iota
	// ConfirmedByPolicy: choosing --on-unsafe convert stands for it.
	ConfirmedByPolicy
	// ConfirmedByFlag: --yes.
	ConfirmedByFlag
	// ConfirmLater: a dry run; the conversion will ask.
	ConfirmLater
	// ConfirmedOnTerminal: the operator answered yes on the terminal.
	ConfirmedOnTerminal
)

// PriorFailure is the latest attempt at an earlier start to convert a
// database, as its state file recorded it, when it failed after making its
// backup and that backup is still there.
type PriorFailure struct {
	At     time.Time
	Backup string
	Err    string
}

// ConvertFacts are what convert knows about one database it is about to
// change: the check's report and what convert looked at itself. Each
// stage reads only the fields it names.
type ConvertFacts struct {
	// ReenabledWAL: an earlier start converted the database to DELETE and
	// it is in WAL mode again; Failed: the latest attempt failed
	// (StagePrior).
	ReenabledWAL bool
	Failed       *PriorFailure
	Report       *Report
	Dir          *DataDir
	DB           *Database
	// ToWAL is a conversion to WAL (--to wal); else to DELETE.
	ToWAL bool
	// AllowUnverified is --allow-unverified; Entrypoint is the
	// entrypoint's --on-unsafe convert policy.
	AllowUnverified, Entrypoint bool
	// Yes is --yes, and CanAsk that a terminal can confirm: with neither
	// (and not Entrypoint), a database behind a share will also be
	// refused at StageConfirm, so earlier refusals name --yes too.
	Yes, CanAsk bool
	// HeaderProblems are the problems of the header convert read from the
	// disk itself (health.CheckHeaderFile; nil when it could not), and
	// Journal its look at the rollback journal (StageDisk).
	HeaderProblems []health.Problem
	Journal        *health.Journal
	// Litestream lists the signs that Litestream replicates the database
	// (StageGuard).
	Litestream []string
	// SwappableThrough and SwappableWhy name a directory or symlink on the
	// way to the database that another user can replace, and why
	// (dirfd.Swappable, dirfd.UntrustedLink); empty when there is none
	// (StageGuard).
	SwappableThrough, SwappableWhy string
	// BackupDir is --backup-dir (empty: beside the database, or
	// --no-backup); BackupDirThrough and BackupDirWhy name a symlink or
	// directory on its way, or the directory its missing part would be
	// created in, that another user can replace, and why (StageGuard).
	BackupDir, BackupDirThrough, BackupDirWhy string
	// WAL is the -wal's frame chain (StageWAL); AcceptWALLoss is
	// --accept-wal-loss, and AcceptCommand the command that converts
	// accepting the loss.
	WAL           *wal.Report
	AcceptWALLoss bool
	AcceptCommand string
	// Watch is the quiet period; WatchErr why the watch failed, and
	// Interrupted that a signal cut it short; Changed and What say
	// whether and how the files changed (StageWatch).
	Watch       time.Duration
	WatchErr    error
	Interrupted bool
	Changed     bool
	What        []string
	// Confirmation is how the operator confirmed (StageConfirm).
	Confirmation Confirmation
}

// class is the filesystem class deciding WAL safety for the database.
func (f *ConvertFacts) class() mounts.Class { return WALClass(f.Dir, f.DB) }

// ConfirmStatement is what the operator is asked to confirm for a database
// on a filesystem whose far side no probe sees.
func ConfirmStatement(f *ConvertFacts) string {
	return fmt.Sprintf("%s is on a %s filesystem: processes on the other side (the host behind a VM share, other network clients) are invisible to every probe. Its files stayed unchanged for %s. Confirm that nothing outside this machine has it open", f.DB.Path, f.class(), f.Watch)
}

// RecipeConfirmation is what the --yes of convert's outside recipe
// confirms for a database on a filesystem whose far side no probe sees;
// the CLI prints it above the recipe, so the person has read it before
// the one-off convert runs (which still watches the quiet period).
func RecipeConfirmation(f *ConvertFacts) string {
	return fmt.Sprintf("%s is on a %s filesystem, whose other side (the host behind a VM share, other network clients) no probe sees: the --yes below confirms that nothing there has it open, so stop any such program first", f.DB.Path, f.class())
}

// RecipeComposeTemplate and RecipeContainerTemplate (of the container's
// id) say what to fill in of convert's outside recipe when the engine
// could not be asked which container preflight runs in: one template for
// a compose service, one for a plain container.
const (
	RecipeComposeTemplate   = "a template, if the container is a compose service: replace SERVICE with the compose service and run it in the project directory"
	RecipeContainerTemplate = "a template, if it is a plain container: %s is this container's id (its default hostname); add the container's --user, --group-add and -e DOCKER_HOST if it was run with them"
)

// recipeApp says how stopped container c is the application whose data
// this convert runs on as the outside recipe's one-off: the container our
// own one's --volumes-from names, or a container of the compose service
// our one-off compose run belongs to; empty when it is neither.
func recipeApp(r *Report, c *docker.Container) string {
	if r.Docker == nil || r.Docker.Self == nil || c == nil {
		return ""
	}
	self := r.Docker.Self
	for _, v := range self.VolumesFrom {
		if v == c.Name || (len(v) >= 12 && strings.HasPrefix(c.ID, v)) {
			return "this container's --volumes-from names it"
		}
	}
	if self.OneOff && self.ComposeService != "" && !c.OneOff && c.ComposeProject == self.ComposeProject && c.ComposeService == self.ComposeService {
		return "this one-off compose run is of its service"
	}
	return ""
}

// ReenableNote is said once after convert changed a database to DELETE:
// an application that sets WAL itself turns it on again (check's
// wal-reenabled).
const ReenableNote = "an application that sets journal_mode=WAL itself turns WAL on again at its next start (wal-reenabled): have it follow PREFLIGHT_JOURNAL_MODE (preflight run sets it), or set its own journal mode setting to DELETE"

// NeedsWatch reports whether the database must stay quiet for the watch
// and be confirmed before convert changes it: processes beyond its
// filesystem are invisible to every probe (policy.FarSideBlind).
func NeedsWatch(f *ConvertFacts) bool { return policy.FarSideBlind(f.class()) }

// Convert evaluates the convert rules of stage over f, in table order:
// each error-level finding is a refusal (its ID the refusal's reason),
// each info-level one a note; nil when none applies.
func Convert(f *ConvertFacts, stage ConvertStage) []Finding {
	var out []Finding
	s := subject{r: f.Report, dir: f.Dir, db: f.DB, cv: f}
	for _, rl := range table {
		if rl.scope != ScopeConvert || rl.stage != stage {
			continue
		}
		for _, m := range rl.each(s) {
			lvl := m.lvl
			if lvl == "" {
				lvl = rl.Level
			}
			out = append(out, Finding{ID: rl.ID, Level: lvl, Path: f.DB.Path, Message: m.msg, Remedy: m.remedy})
		}
	}
	return out
}

// found is one match of a convert rule: a refusal (error) or a note (info).
type found struct {
	msg    string
	lvl    Level
	remedy []string
}

func refusal(msg string, remedy ...string) []found {
	return []found{{msg: msg, remedy: remedy}}
}

func note(msg string) []found { return []found{{msg: msg, lvl: LevelInfo}} }

// unverifiedWhy is the note suffix for a refusal --allow-unverified (or the
// entrypoint policy) turned into a note.
func unverifiedWhy(f *ConvertFacts) string {
	if f.Entrypoint {
		return " (the --on-unsafe convert policy converts when no writer was seen)"
	}
	return " (--allow-unverified)"
}

// convertRules are convert's refusals and notes (table.go); Refusals
// lists them. Their IDs are the refusals' JSON reasons.
var convertRules = []rule{
	{
		Rule: Rule{Reenabled, LevelError, "entrypoint: a database converted at an earlier start is in WAL mode again (check's wal-reenabled): not converted again"}, scope: ScopeConvert, stage: StagePrior,
		each: func(s subject) []found {
			if !s.cv.ReenabledWAL {
				return nil
			}
			return refusal("converted at an earlier start and in WAL mode again: the application re-enables WAL when it opens the database, so converting again would not last",
				"Pin the application's journal mode to DELETE (PREFLIGHT_JOURNAL_MODE, --export-env), or move the data to a named volume.")
		},
	},
	{
		Rule: Rule{FailedBefore, LevelError, "entrypoint: the attempt at an earlier start failed after its backup, which is still there: not tried again"}, scope: ScopeConvert, stage: StagePrior,
		each: func(s subject) []found {
			p := s.cv.Failed
			if p == nil {
				return nil
			}
			return refusal(fmt.Sprintf("the conversion at an earlier start (%s) failed after backing the database up to %s: %s; not tried again, so that each start does not add another full backup",
				p.At.Format(time.RFC3339), p.Backup, p.Err),
				"Fix what the error names and convert by hand (preflight convert), or remove "+p.Backup+" to let the next start try again.")
		},
	},
	{
		Rule: Rule{DBHeaderDamaged, LevelError, "the database has no valid SQLite header (check's db-header-damaged): converting would open it, and SQLite cannot"}, scope: ScopeConvert, stage: StageOpen,
		each: func(s subject) []found {
			if !DamagedDB(s.db) {
				return nil
			}
			return refusal(fmt.Sprintf("%s has no valid SQLite header but is a database (see preflight check's db-header-damaged): converting would open it, and SQLite cannot; nothing was changed", s.db.Path),
				"keep every file: copy the database, -wal, -shm and -journal aside together and restore the database from a backup; delete none of them")
		},
	},
	{
		Rule: Rule{WALWithoutDatabase, LevelError, "the database file is missing or empty but its -wal holds frames (check's wal-without-database)"}, scope: ScopeConvert, stage: StageOpen,
		each: func(s subject) []found {
			if !walWithoutDatabase(s.db) {
				return nil
			}
			return refusal(fmt.Sprintf("%s is missing or empty but its -wal holds %d bytes of frames: SQLite would see an empty database and delete that -wal, with the data in it; nothing was changed", s.db.Path, s.db.WAL.SizeBytes),
				"do not open the database: stop the application, copy the database, -wal and -shm aside, and restore the database file from a backup (see preflight check's wal-without-database)")
		},
	},
	{
		Rule: Rule{NotSQLite, LevelError, "the file is not a SQLite database: convert fails"}, scope: ScopeConvert, stage: StageRead,
		each: func(s subject) []found {
			if !s.db.NotSQLite {
				return nil
			}
			return refusal(fmt.Sprintf("%s is not a SQLite database: %s", s.db.Path, nonEmpty(s.db.Err, "bad header")), "check the path; nothing was changed")
		},
	},
	{
		Rule: Rule{DBUnreadable, LevelError, "the database could not be read: convert fails"}, scope: ScopeConvert, stage: StageRead,
		each: func(s subject) []found {
			if s.db.NotSQLite || s.db.New || s.db.Err == "" {
				return nil
			}
			return refusal(s.db.Err, "run preflight as the user that owns the database, or as root")
		},
	},
	{
		Rule: Rule{JournalModeUnknown, LevelError, "the header names no known journal mode: convert fails"}, scope: ScopeConvert, stage: StageRead,
		each: func(s subject) []found {
			if s.db.NotSQLite || s.db.New || s.db.Err != "" || s.db.JournalMode == sqlitefile.JournalWAL || s.db.JournalMode == sqlitefile.JournalRollback {
				return nil
			}
			return refusal(fmt.Sprintf("%s: header bytes 18/19 name no known journal mode", s.db.Path), "open it with sqlite3 and run PRAGMA integrity_check; restore from a backup if it fails")
		},
	},
	{
		Rule: Rule{DBHeaderDamaged, LevelError, "convert's own read of the header found damage: the checkpoint would fail halfway, so convert fails before the backup and before any open"}, scope: ScopeConvert, stage: StageDisk,
		each: func(s subject) []found {
			// With frames in the -wal, a file shorter than its header says
			// is an interrupted checkpoint, not damage (WALAware).
			for _, p := range WALAware(s.db, s.cv.HeaderProblems) {
				if HeaderDamaged(p) {
					return refusal(fmt.Sprintf("%s: %s (%s)", s.db.Path, p.Detail, p.ID),
						"nothing was changed; keep a copy and recover what can be read into a new file: "+RecoverCommand(s.db.Path))
				}
			}
			return nil
		},
	},
	{
		Rule: Rule{HotJournal, LevelError, "a hot rollback journal must be rolled back before anything else: convert fails"}, scope: ScopeConvert, stage: StageDisk,
		each: func(s subject) []found {
			j := s.cv.Journal
			if j == nil || !j.Hot {
				return nil
			}
			return refusal(fmt.Sprintf("%s has a hot rollback journal (%s, %d bytes): a transaction was interrupted and must be rolled back before anything else", s.db.Path, j.Path, j.SizeBytes),
				fmt.Sprintf("let SQLite recover it with one normal read-write open, e.g. sqlite3 %s 'PRAGMA quick_check;' (never delete the -journal), then run preflight convert again", shell.Quote(s.db.Path)))
		},
	},
	{
		Rule: Rule{Writer, LevelError, "a process, lock holder or container has the database, -wal or -shm open (check's live-writer-*)"}, scope: ScopeConvert, stage: StageGuard,
		each: func(s subject) []found {
			var out []found
			for _, w := range s.db.Writers {
				what := w.Name() + " has the database open"
				if len(w.Files) > 0 {
					what += " via " + strings.Join(w.Files, ", ")
				}
				if w.Kind == report.WriterProcess && len(w.Locks) > 0 {
					what += ", holding " + report.LockNames(w.Locks)
				}
				if w.Kind == report.WriterContainer && w.Relation != "" {
					what += ", " + w.Relation
				}
				if w.Kind == report.WriterPod {
					what = w.Name() + " mounts the database's storage read-write (" + w.Relation + ")"
				}
				stop := "stop it first (the container or host program that has it open)"
				if cmd := w.Stop(); cmd != "" {
					stop = "stop it" + w.StopNote() + " first: " + cmd
				}
				out = append(out, found{msg: what, remedy: []string{stop}})
			}
			return out
		},
	},
	{
		Rule: Rule{StoppedContainerWriter, LevelInfo, "a stopped container mounts the database read-write: a note, since once started it is a second writer"}, scope: ScopeConvert, stage: StageGuard,
		each: func(s subject) []found {
			var out []found
			for _, w := range s.db.Stopped {
				if how := recipeApp(s.r, w.Container); how != "" {
					out = append(out, note(fmt.Sprintf("%s mounts this database read-write (%s, %s): it is the application this one-off runs for (%s); start it again once this is done (the recipe's next line)", w.Name(), w.Container.State, w.Relation, how))...)
					continue
				}
				out = append(out, note(fmt.Sprintf("%s mounts this database read-write (%s, %s): once started it is a second writer; remove it (docker rm %s) or keep it stopped", w.Name(), w.Container.State, w.Relation, shell.Quote(w.Container.Name)))...)
			}
			return out
		},
	},
	{
		Rule: Rule{UnlinkedSidecar, LevelError, "a process holds a -wal or -shm that is no longer the file at that path (check's wal-sidecar-unlinked)"}, scope: ScopeConvert, stage: StageGuard,
		each: func(s subject) []found {
			var out []found
			for _, u := range s.db.Unlinked {
				out = append(out, found{msg: fmt.Sprintf("process %d (%s) holds %s by %s, no longer the file at that path: its committed work is in that file", u.PID, u.Comm, u.File, u.How),
					remedy: []string{fmt.Sprintf("stop process %d cleanly first, then run preflight check again", u.PID)}})
			}
			return out
		},
	},
	{
		Rule: Rule{UnseenWriter, LevelError, "the database's files changed during the check's --watch while no probe found a writer (check's activity-unseen-writer)"}, scope: ScopeConvert, stage: StageGuard,
		each: func(s subject) []found {
			var out []found
			for _, f := range s.r.Findings {
				if f.Path == s.db.Path && f.ID == ActivityUnseenWriter {
					out = append(out, found{msg: f.Message, remedy: f.Remedy})
				}
			}
			return out
		},
	},
	{
		Rule: Rule{WriterTask, LevelError, "a Swarm task on another node writes the database's data (check's live-writer-task)"}, scope: ScopeConvert, stage: StageGuard,
		each: func(s subject) []found { return reported(s, LiveWriterTask, LevelError) },
	},
	{
		Rule: Rule{ReplicasOnSQLiteVolume, LevelInfo, "a note: a Swarm service that mounts the database runs more than one task (check's replicas-on-sqlite-volume)"}, scope: ScopeConvert, stage: StageGuard,
		each: func(s subject) []found { return reported(s, ReplicasOnSQLiteVolume, LevelInfo) },
	},
	{
		Rule: Rule{StartFirstOnSQLiteVolume, LevelInfo, "a note: a Swarm service that mounts the database updates start-first (check's start-first-on-sqlite-volume)"}, scope: ScopeConvert, stage: StageGuard,
		each: func(s subject) []found { return reported(s, StartFirstOnSQLiteVolume, LevelInfo) },
	},
	{
		Rule: Rule{Litestream, LevelError, "Litestream replicates the database: it needs WAL and switches the database back"}, scope: ScopeConvert, stage: StageGuard,
		each: func(s subject) []found {
			if len(s.cv.Litestream) == 0 {
				return nil
			}
			return refusal("Litestream replicates this database ("+strings.Join(s.cv.Litestream, "; ")+"): Litestream needs WAL and switches the database back to WAL mode, and its replication breaks when the WAL is removed under it",
				"stop Litestream and remove this database from its configuration first, or keep WAL and move the data to a local filesystem") //nolint:misspell
		},
	},
	{
		Rule: Rule{UnsafeFS, LevelError, "convert --to wal on a filesystem where WAL is not known to work (cross-vm, network, fuse, unknown, sandbox)"}, scope: ScopeConvert, stage: StageGuard,
		each: func(s subject) []found {
			c := s.cv.class()
			if !s.cv.ToWAL || policy.Of(c).WAL == policy.WALWorks {
				return nil
			}
			return refusal(fmt.Sprintf("%s is on a %s filesystem, where WAL's shared memory and locks do not work", s.db.Path, c),
				"keep journal_mode=DELETE here, or move the data to a named volume or a local filesystem first")
		},
	},
	{
		Rule: Rule{NFSSillyRename, LevelError, "NFS silly-rename files beside the database (check's nfs-silly-rename): a note with --allow-unverified"}, scope: ScopeConvert, stage: StageGuard, action: ActAllowUnverified,
		each: func(s subject) []found {
			if len(s.db.NFSSillyRenamed) == 0 {
				return nil
			}
			msg := fmt.Sprintf("NFS silly-rename files beside the database (%s): a process on some NFS client may still hold a deleted file of this directory open (an old copy of the database or its -wal) and write to it, or a crashed client left them", strings.Join(s.db.NFSSillyRenamed, ", "))
			if s.cv.AllowUnverified {
				return note(msg + unverifiedWhy(s.cv))
			}
			return refusal(msg, "on every machine that mounts this export, find the process that holds them (lsof +D "+shell.Quote(filepath.Dir(s.db.Path))+", or fuser on each .nfs file) and stop it",
				"or, once you have made sure that no client holds them (a crashed client's leftovers): --allow-unverified")
		},
	},
	{
		Rule: Rule{SwappableDir, LevelError, "the database or the --backup-dir is reached through a directory or symlink that another user can replace"}, scope: ScopeConvert, stage: StageGuard,
		each: func(s subject) []found {
			var out []found
			if s.cv.SwappableThrough != "" {
				out = append(out, refusal(fmt.Sprintf("the database is reached through %s, and %s: SQLite opens the database and creates its -journal, -wal and -shm by path, so that user could send them elsewhere while this process writes them; nothing was changed", s.cv.SwappableThrough, s.cv.SwappableWhy),
					"convert as the user that owns the data directory (docker exec --user, su-exec, gosu), or move the database directly into the data directory")...)
			}
			if s.cv.BackupDirThrough != "" {
				out = append(out, refusal(fmt.Sprintf("the backup directory %s is reached through %s, and %s: that user could send the backup (a copy of the database, the bytes that user wrote) into any directory this process may write; nothing was changed", s.cv.BackupDir, s.cv.BackupDirThrough, s.cv.BackupDirWhy),
					"pass a --backup-dir that only root or this user can change (outside the data directory), or leave --backup-dir out to back up beside the database")...)
			}
			return out
		},
	},
	{
		Rule: Rule{SidecarNotRegular, LevelError, "a -wal, -shm or -journal is a symlink or not a regular file (check's sidecar-symlink, sidecar-not-regular)"}, scope: ScopeConvert, stage: StageGuard,
		each: func(s subject) []found {
			odd := s.db.OddSidecars()
			if len(odd) == 0 {
				return nil
			}
			return refusal(fmt.Sprintf("%s: a -wal, -shm or -journal is a symlink or not a regular file (%s): SQLite cannot use it, and reading it could block or read another file; nothing was changed", s.db.Path, strings.Join(odd, ", ")),
				"see preflight check's sidecar-symlink and sidecar-not-regular findings; convert once the sidecars are regular files or absent")
		},
	},
	{
		Rule: Rule{Unverified, LevelError, "a live-writer probe could not run fully, so a writer may have been missed: a note with --allow-unverified and in the entrypoint"}, scope: ScopeConvert, stage: StageGuard, action: ActAllowUnverified,
		each: func(s subject) []found {
			un := unverifiedProbes(s.r, s.db)
			if len(un) == 0 {
				return nil
			}
			msg := "a live-writer probe could not run, so a writer may have been missed: " + strings.Join(un, "; ")
			if s.cv.AllowUnverified {
				return note(msg + unverifiedWhy(s.cv))
			}
			allow := "or, once you have made sure yourself that nothing uses the database: --allow-unverified"
			if NeedsWatch(s.cv) && !s.cv.Entrypoint && !s.cv.Yes && !s.cv.CanAsk {
				// The confirmation stage comes later: name both at once.
				allow = "or, once you have made sure yourself that nothing uses the database, here or on the other side of this " + string(s.cv.class()) + " filesystem: --allow-unverified --yes (convert asks for --yes there too)"
			}
			return refusal(msg, "give preflight access to what it could not see (the Docker API: DOCKER_HOST or the socket; /proc entries: run as root, though some, such as a sandbox's PID 1, stay unreadable even then)",
				allow)
		},
	},
	{
		Rule: Rule{WALLoss, LevelError, "valid-looking frames follow a break in the -wal: SQLite would discard them on the first open (check's wal-invalid-frames); a note with --accept-wal-loss"}, scope: ScopeConvert, stage: StageWAL,
		each: func(s subject) []found {
			wr := s.cv.WAL
			if wr == nil || !wr.Discards() {
				return nil
			}
			msg := fmt.Sprintf("the WAL breaks at frame %d (%s) and %d valid-looking frames (%d committed transactions) follow it: SQLite would keep %d frames (%d transactions) and silently discard the rest on the first open",
				wr.FirstInvalidFrame, wr.InvalidReason, wr.ValidLookingAfter, wr.CommitsAfterBreak, wr.LastCommitFrame, wr.CommittedTxns)
			if s.cv.AcceptWALLoss {
				return note(msg + "; accepted with --accept-wal-loss, the backup keeps the whole WAL")
			}
			return refusal(msg+"; nothing was touched", "keep the database, -wal and -shm together and copy them aside for recovery",
				"to convert anyway, losing those frames (the backup keeps them): "+s.cv.AcceptCommand)
		},
	},
	{
		Rule: Rule{Activity, LevelError, "on a filesystem whose far side no probe sees, the database's files changed during the quiet period (--watch), or could not be watched"}, scope: ScopeConvert, stage: StageWatch,
		each: func(s subject) []found {
			f := s.cv
			switch {
			case f.WatchErr != nil && f.Interrupted:
				return refusal(fmt.Sprintf("interrupted during the %s quiet period: the database files were not watched to the end, so nothing was converted", f.Watch))
			case f.WatchErr != nil:
				return refusal("could not watch the database files: " + f.WatchErr.Error())
			case f.Changed:
				return refusal(fmt.Sprintf("the database files changed during a %s watch (%s) although no writer was found here: something on the other side of this %s filesystem is using it", f.Watch, strings.Join(f.What, "; "), f.class()),
					"stop the program that uses it on the host or the other machine, then run convert again")
			}
			return nil
		},
	},
	{
		Rule: Rule{NeedsConfirmation, LevelError, "on a filesystem whose far side no probe sees, the operator did not confirm that nothing there has the database open (no terminal, or no --yes)"}, scope: ScopeConvert, stage: StageConfirm,
		each: func(s subject) []found {
			f := s.cv
			c := f.class()
			switch f.Confirmation {
			case ConfirmedByPolicy:
				return note(fmt.Sprintf("%s filesystem: files quiet for %s; choosing --on-unsafe convert stands for the operator's confirmation that nothing outside this machine has it open", c, f.Watch))
			case ConfirmedByFlag:
				return note(fmt.Sprintf("%s filesystem: files quiet for %s; the operator confirmed (--yes) that nothing outside this machine has it open", c, f.Watch))
			case ConfirmLater:
				return note(fmt.Sprintf("%s filesystem: files quiet for %s; the conversion will ask to confirm that nothing outside this machine has it open (on a terminal, or --yes)", c, f.Watch))
			case ConfirmedOnTerminal:
				return note(fmt.Sprintf("%s filesystem: files quiet for %s; the operator confirmed on the terminal that nothing outside this machine has it open", c, f.Watch))
			}
			return refusal(ConfirmStatement(f)+" (no terminal to ask, or not confirmed)", "stop every program that uses it on the other side, then run again with --yes")
		},
	},
}

// reported turns the check's findings id about the database into
// refusals (error: the finding's message and remedy) or notes (info: the
// message and the remedy in one line): tasks on other nodes write beside
// the application now, more tasks or a start-first update later.
func reported(s subject, id ID, lvl Level) []found {
	var out []found
	for _, f := range s.r.Findings {
		if f.Path != s.db.Path || f.ID != id {
			continue
		}
		if lvl == LevelInfo {
			out = append(out, note(f.Message+"; "+strings.Join(f.Remedy, " "))...)
			continue
		}
		out = append(out, found{msg: f.Message, remedy: f.Remedy})
	}
	return out
}

// Refusals lists convert's refusal reasons with their meaning, in table
// order; an ID appears once.
func Refusals() []Rule {
	var out []Rule
	seen := map[ID]bool{}
	for _, r := range table {
		if r.scope == ScopeConvert && !r.stage.Fails() && !seen[r.ID] {
			seen[r.ID] = true
			out = append(out, r.Rule)
		}
	}
	return out
}

// refusalByID is the convert rule of each refusal reason.
var refusalByID = func() map[ID]*rule {
	m := map[ID]*rule{}
	for i := range table {
		if r := &table[i]; r.scope == ScopeConvert && !r.stage.Fails() && m[r.ID] == nil {
			m[r.ID] = r
		}
	}
	return m
}()

// RefusalWants reports whether the rule of refusal reason asks for action
// a (ActAllowUnverified).
func RefusalWants(reason ID, a Action) bool {
	r := refusalByID[reason]
	return r != nil && r.action == a
}

// WriterHere reports whether a writer of db is a process of this PID
// namespace (a process, or a lock holder with a PID here): when preflight
// runs in the application's container that is the application, and
// converting from outside the container, with it stopped, lifts the
// writer refusal (convert's recipe).
func WriterHere(db *Database) bool {
	for _, w := range db.Writers {
		if w.Kind == report.WriterProcess || w.Kind == report.WriterLock && w.PID > 0 {
			return true
		}
	}
	return false
}

// unverifiedProbes lists the live-writer probes for db that could not run
// fully. Docker "no-daemon" (no engine on this host) is not one of them.
func unverifiedProbes(rep *Report, db *Database) []string {
	var out []string
	p := db.WriterProbes
	if p.Processes != report.ProbeRan {
		out = append(out, "processes: "+string(p.Processes))
	}
	if p.Locks != report.ProbeRan {
		out = append(out, "locks: "+string(p.Locks))
	}
	switch {
	case rep.Docker == nil:
		out = append(out, "containers: not probed")
	case rep.Docker.Status == docker.StatusNoDaemon:
	case rep.Docker.Status != docker.StatusRan:
		out = append(out, "containers: Docker "+rep.Docker.Status+nonEmptyPrefix(" (", rep.Docker.Err, ")"))
	case !rep.Docker.Sure:
		out = append(out, "containers: "+nonEmpty(rep.Docker.Err, "the engine's answer may be incomplete"))
	}
	for _, b := range p.Blind {
		if strings.HasPrefix(b, "processes: ") && p.Processes == report.ProbeRan || strings.HasPrefix(b, "locks: ") && p.Locks == report.ProbeRan {
			out = append(out, b)
		}
		if strings.HasPrefix(b, "pods: ") {
			out = append(out, b) // the Kubernetes API could not be asked fully
		}
	}
	return out
}

func nonEmptyPrefix(prefix, s, suffix string) string {
	if s == "" {
		return ""
	}
	return prefix + s + suffix
}
