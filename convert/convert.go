// Package convert changes the journal mode of SQLite databases offline:
// WAL to the rollback journal (DELETE) for databases on filesystems where WAL
// is unsafe, and back. It follows the safe conversion sequence of
// docs/architecture.md ("convert"):
//
//  1. Guard: preflight.Check runs every live-writer probe with the caller's
//     options, so the guard and `preflight check` never disagree. A writer
//     seen, Litestream, a wal-sidecar-unlinked or activity-unseen-writer
//     finding, or (without AllowUnverified) a probe that could not run is a
//     refusal. On cross-vm, network, fuse and unknown filesystems the files
//     are also watched for a quiet period and the operator must confirm.
//  2. WAL integrity (probe/wal): valid-looking frames after a broken one are
//     committed work SQLite would silently discard: a refusal unless
//     AcceptWALLoss.
//  3. Backup of the database, -wal and -shm (unless NoBackup), after a free
//     space check, with every file and directory fsynced.
//  4. Conversion on one connection: PRAGMA wal_checkpoint(FULL),
//     wal_checkpoint(TRUNCATE), journal_mode=DELETE
//     (https://sqlite.org/wal.html, https://sqlite.org/pragma.html). While
//     the FULL checkpoint runs, a second, read-only connection counts every
//     table's rows in one read transaction; it is closed before TRUNCATE
//     and the mode change, which fail while any other connection exists.
//     Where SQLite cannot map the -shm (a filesystem without shared mmap),
//     the connection is opened again with locking_mode=EXCLUSIVE, which
//     keeps the WAL index in heap memory, and counts the rows itself.
//  5. Verification: quick_check (or integrity_check) and every table's row
//     count, on two read-only connections side by side, each count equal
//     to the count before; after closing: header bytes 18/19
//     (https://sqlite.org/fileformat2.html#database_header) and no -wal or
//     -shm left. A check that needs a function, collation or module only
//     the application defines is "not run", with the reason.
//
// Every raw read of the database files (header, WAL scan, lock probes,
// activity, backup copy) finishes and closes its descriptor before the one
// SQLite connection opens: closing a descriptor drops every POSIX lock the
// process holds on that file (https://sqlite.org/howtocorrupt.html#posix_close_bug).
//
// The package never prints, prompts or exits: Run returns a Result, and
// Options.Confirm and Options.Progress are the caller's hooks.
package convert

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/probe/wal"
	"github.com/preflight-sqlite/preflight/report"
	"github.com/preflight-sqlite/preflight/rules"
)

// Schema names the version of the JSON Result.
const Schema = "preflight-convert/v1"

// Journal modes a database can be converted to.
const (
	ToDelete = "delete"
	ToWAL    = "wal"
)

// DefaultWatch is the quiet period required on filesystems where no probe
// sees the other side.
const DefaultWatch = 2 * time.Second

// Verify levels.
const (
	VerifyQuick = "quick" // PRAGMA quick_check: O(N)
	VerifyFull  = "full"  // PRAGMA integrity_check: O(N log N), also indexes
)

// Options configure Run.
type Options struct {
	// Check holds the options of the guard's preflight.Check (Docker mode
	// and timeout, max depth, mount table). Check.Paths is replaced by
	// Paths; Check.Writers.Watch is ignored (see Watch).
	Check preflight.Options
	// Paths are database files or data directories (every database in
	// them). Required.
	Paths []string
	// To is the target journal mode, ToDelete (default) or ToWAL.
	To string
	// DryRun runs the guard and the WAL check and reports what would be
	// done, changing nothing.
	DryRun bool
	// BackupDir is where backups go: DIR/<name>.preflight-backup-<UTC
	// timestamp>/. Empty: beside each database.
	BackupDir string
	// NoBackup skips the backup.
	NoBackup bool
	// ReuseBackup maps a database (CanonicalPath) to the complete backup
	// an interrupted attempt made of it: Run uses that backup instead of
	// making a new one when it holds the database and its -wal as they
	// are now, byte for byte (Policy fills it from the state file).
	ReuseBackup map[string]string
	// Verify is VerifyQuick (default) or VerifyFull.
	Verify string
	// AllowUnverified proceeds when a live-writer probe could not run (no
	// Docker API inside a container, a daemon that did not answer). A writer
	// that was seen is never overridden.
	AllowUnverified bool
	// AcceptWALLoss proceeds, after the backup, when valid-looking frames
	// follow a broken one in the WAL (SQLite discards them).
	AcceptWALLoss bool
	// Watch is the quiet period required on cross-vm, network, fuse and
	// unknown filesystems; 0 means DefaultWatch.
	Watch time.Duration
	// Entrypoint says Run is the entrypoint's --on-unsafe convert policy
	// (Policy sets it): notes name that choice instead of convert's flags.
	Entrypoint bool
	// Confirmed is the operator's statement that nothing outside this
	// machine has the database open (--yes, or choosing the entrypoint's
	// convert policy). Without it Confirm is asked.
	Confirmed bool
	// Confirm, when Confirmed is false and a database is on a filesystem
	// whose other side no probe sees, is called with the database path and
	// the statement to confirm; false (or a nil Confirm) refuses.
	Confirm func(path, statement string) bool
	// Program is the command that runs preflight, used in the recipes the
	// refusals print (e.g. /preflight in a scratch image). Empty: preflight.
	Program string
	// Progress, when set, is called as work proceeds: stage is "backup",
	// "checkpoint", "convert" or "verify"; done and total are bytes for the
	// backup and 0 otherwise.
	Progress func(path, stage string, done, total int64)
	// Now returns the current time (tests); nil is time.Now.
	Now func() time.Time
}

// Status of one database.
const (
	StatusConverted    = "converted"     // converted and verified
	StatusAlready      = "already"       // already in the target mode: nothing done
	StatusWouldConvert = "would-convert" // dry run: the guard passed
	StatusRefused      = "refused"       // the guard refused: untouched
	StatusFailed       = "failed"        // an error: the database is as it was, or see Error
	StatusSkipped      = "skipped"       // new (empty) file: nothing to convert
)

// Result is what Run did, database by database.
type Result struct {
	Schema string `json:"schema"`
	// To is the target journal mode.
	To     string `json:"to"`
	DryRun bool   `json:"dry_run,omitempty"`
	// Probes is the guard report's probe summary (processes, locks, docker,
	// activity).
	Probes    map[string]report.ProbeStatus `json:"probes"`
	Databases []Database                    `json:"databases"`
	// Problems lists paths that could not be looked at: missing,
	// unreadable, or on a filesystem that does not answer. Nothing there
	// was converted, and the CLI does not call that success.
	Problems []string `json:"problems,omitempty"`
	// Notes are about the whole run, said once: after a conversion to
	// DELETE outside the entrypoint, that an application that sets WAL
	// itself turns it on again (rules.ReenableNote).
	Notes []string `json:"notes,omitempty"`
	// Recipe, set when a database was refused because of writers inside
	// the container preflight runs in, lists the commands that convert it
	// safely from outside (stop, one-off run, start).
	Recipe []string `json:"recipe,omitempty"`
	// RecipeConfirms, when the recipe's convert passes --yes (a database
	// on a cross-vm, network or fuse filesystem), is what that --yes
	// confirms, one statement per such database: shown to the person
	// before the recipe, which runs without a terminal.
	RecipeConfirms []string `json:"recipe_confirms,omitempty"`
	// RecipeTemplates, set instead of Recipe when the engine could not
	// be asked which container preflight runs in, are the recipe for a
	// compose service and for a plain container, each a template to
	// complete as its Note says.
	RecipeTemplates []RecipeTemplate `json:"recipe_templates,omitempty"`
}

// RecipeTemplate is one shape of the outside recipe, with placeholders.
type RecipeTemplate struct {
	// Note says what the template is for and what to fill in.
	Note  string   `json:"note"`
	Lines []string `json:"lines"`
}

// Database is the outcome for one database.
type Database struct {
	Path string `json:"path"`
	// Class is the filesystem class of the database's directory.
	Class string `json:"fs_class"`
	// Before is the journal mode the header showed before: "wal" or
	// "rollback"; After is the mode afterwards ("delete", "wal"), empty
	// when nothing was changed.
	Before string `json:"before"`
	After  string `json:"after,omitempty"`
	Status string `json:"status"`
	// Refusals say why the guard refused, each with the fixes.
	Refusals []Refusal `json:"refusals,omitempty"`
	// Error is why the conversion failed (StatusFailed).
	Error string `json:"error,omitempty"`
	// Interrupted says the conversion failed because the context was
	// canceled (a signal: docker stop during the start); Error then says
	// whether the journal mode had changed and, when it had (After is then
	// set), whether its verification finished (Verified.Interrupted).
	Interrupted bool `json:"interrupted,omitempty"`
	// Hints follow Error: what to do about it.
	Hints []string `json:"hints,omitempty"`
	// Notes are facts the operator should know that did not stop the
	// conversion (probes that could not run under AllowUnverified, WAL
	// frames accepted as lost).
	Notes []string `json:"notes,omitempty"`
	// WAL is the WAL frame-chain validation, when a -wal existed;
	// WALScan how long it took.
	WAL     *wal.Report   `json:"wal,omitempty"`
	WALScan time.Duration `json:"wal_scan_ns,omitempty"`
	// Quiet is the activity watch result on filesystems that needed it.
	Watched time.Duration `json:"watched_ns,omitempty"`
	// Backup is the backup made; nil with NoBackup or before one was made.
	Backup *Backup `json:"backup,omitempty"`
	// Checkpoint is the FULL checkpoint's result: frames in the log and
	// frames checkpointed.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	// Conversion is the time from opening the connection to the journal
	// mode change: WAL recovery, the checkpoints with the row counts
	// before, the mode change (the part sqlite3 would do too).
	Conversion time.Duration `json:"conversion_ns,omitempty"`
	// Verified says what was checked after the conversion.
	Verified *Verified `json:"verified,omitempty"`
	// Duration is the wall time spent on this database.
	Duration time.Duration `json:"duration_ns"`
	// writerHere says the guard's writers include a process of this PID
	// namespace (rules.WriterHere): the recipe converts from outside.
	writerHere bool
	// farSide is rules.RecipeConfirmation for a database on a filesystem
	// whose far side no probe sees; empty elsewhere.
	farSide string
}

// Refusal is one reason the guard refused a database.
type Refusal struct {
	// Reason is stable: writer, writer-task (a Swarm task on another
	// node), unlinked-sidecar, unseen-writer, unverified, litestream, wal-loss, needs-confirmation, unsafe-fs,
	// activity, reenabled (the entrypoint policy does not convert a
	// database again that the application switched back to WAL),
	// failed-before (nor one whose attempt at an earlier start failed
	// while its backup is still there), wal-without-database, db-header-damaged.
	Reason  string   `json:"reason"`
	Message string   `json:"message"`
	Remedy  []string `json:"remedy,omitempty"`
}

// Checkpoint is a PRAGMA wal_checkpoint result row.
type Checkpoint struct {
	Busy         int `json:"busy"`
	Log          int `json:"log_frames"`
	Checkpointed int `json:"checkpointed_frames"`
}

// TableCount is one table's row count before and after.
type TableCount struct {
	Table  string `json:"table"`
	Before int64  `json:"before"`
	After  int64  `json:"after"`
}

// Verified lists the checks made after a conversion; each passed, or the
// database is StatusFailed.
type Verified struct {
	// JournalMode is PRAGMA journal_mode read back on the connection.
	JournalMode string `json:"journal_mode"`
	// WriteVersion and ReadVersion are header bytes 18 and 19 after the
	// connection closed: 1 for rollback, 2 for WAL.
	WriteVersion int `json:"write_version"`
	ReadVersion  int `json:"read_version"`
	// SidecarsGone is true when neither -wal nor -shm exists afterwards
	// (DELETE only).
	SidecarsGone bool `json:"sidecars_gone"`
	// Check is "quick_check" or "integrity_check"; CheckResult its answer.
	Check       string `json:"check"`
	CheckResult string `json:"check_result"`
	// Tables are the row counts read in one read transaction before the
	// conversion and again after it.
	Tables []TableCount `json:"tables"`
	// Duration is the time the verification took.
	Duration time.Duration `json:"duration_ns"`
	// Interrupted says the context ended (a signal) during the
	// verification: the checks above did not all run, and the database
	// is in the new journal mode (the change came before).
	Interrupted bool `json:"interrupted,omitempty"`
}

// Failed reports whether any database was refused or failed.
func (r *Result) Failed() bool { return r.Refused() || r.Errored() }

// Refused reports whether the guard refused any database.
func (r *Result) Refused() bool {
	for _, d := range r.Databases {
		if d.Status == StatusRefused {
			return true
		}
	}
	return false
}

// Errored reports whether any database failed.
func (r *Result) Errored() bool {
	for _, d := range r.Databases {
		if d.Status == StatusFailed {
			return true
		}
	}
	return false
}

// ErrNoPaths is returned by Run when Options.Paths is empty.
var ErrNoPaths = errors.New("no database or data directory given")

// ErrBadOptions wraps option combinations Run rejects.
var ErrBadOptions = errors.New("invalid options")

// Run guards, backs up, converts and verifies every database in
// opts.Paths, one after the other. It returns an error only when it could
// not start (bad options, the guard's check failed or was cut short by
// ctx), or, with the Result so far, when ctx ended between two databases;
// the outcome of each database, refusals, failures and interruptions
// included, is in the Result.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if len(opts.Paths) == 0 {
		return nil, ErrNoPaths
	}
	if opts.To == "" {
		opts.To = ToDelete
	}
	if opts.To != ToDelete && opts.To != ToWAL {
		return nil, fmt.Errorf("%w: journal mode %q: want delete or wal", ErrBadOptions, opts.To)
	}
	if opts.Verify == "" {
		opts.Verify = VerifyQuick
	}
	if opts.Verify != VerifyQuick && opts.Verify != VerifyFull {
		return nil, fmt.Errorf("%w: verify %q: want quick or full", ErrBadOptions, opts.Verify)
	}
	if opts.NoBackup && opts.BackupDir != "" {
		return nil, fmt.Errorf("%w: a backup directory with no backup", ErrBadOptions)
	}
	if opts.NoBackup && opts.AcceptWALLoss {
		return nil, fmt.Errorf("%w: accepting WAL loss needs the backup (the discarded frames survive only there)", ErrBadOptions)
	}
	if opts.Watch <= 0 {
		opts.Watch = DefaultWatch
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Program == "" {
		opts.Program = "preflight"
	}

	copts := opts.Check
	copts.Paths = opts.Paths
	copts.Writers.Watch = 0
	copts.Writers.Starting = false
	rep, err := preflight.Check(ctx, copts)
	if err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	if ctx.Err() != nil {
		// A check cut short may have found only some databases, or none:
		// it is no guard.
		return nil, fmt.Errorf("guard: interrupted: %w", context.Cause(ctx))
	}
	res := &Result{Schema: Schema, To: opts.To, DryRun: opts.DryRun, Probes: rep.Probes, Databases: []Database{}}
	for _, d := range rep.DataDirs {
		switch {
		case d.Unresponsive != "":
			res.Problems = append(res.Problems, d.Unresponsive)
		case d.StatError != "":
			res.Problems = append(res.Problems, fmt.Sprintf("cannot examine %s: %s", d.Path, d.StatError))
		case !d.Exists:
			res.Problems = append(res.Problems, fmt.Sprintf("%s does not exist", d.Path))
		}
	}
	for _, t := range targets(rep) {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		start := time.Now()
		d := runOne(ctx, rep, t, opts)
		d.Duration = time.Since(start)
		res.Databases = append(res.Databases, d)
	}
	for _, d := range res.Databases {
		if d.Watched > 0 {
			probes := map[string]report.ProbeStatus{}
			for k, v := range res.Probes {
				probes[k] = v
			}
			probes["activity"] = report.ProbeRan // the quiet-period watch of a database behind a share
			res.Probes = probes
			break
		}
	}
	res.Recipe, res.RecipeConfirms, res.RecipeTemplates = recipe(rep, res, opts)
	if !opts.Entrypoint && res.To == ToDelete && slices.ContainsFunc(res.Databases, func(d Database) bool { return d.Status == StatusConverted }) {
		res.Notes = append(res.Notes, rules.ReenableNote)
	}
	return res, nil
}
