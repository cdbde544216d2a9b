package convert

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/preflight-sqlite/preflight/internal/dirfd"
	"github.com/preflight-sqlite/preflight/internal/shell"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/probe/activity"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/health"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
	"github.com/preflight-sqlite/preflight/probe/wal"
)

// target is one database of the guard's report with its data directory.
type target struct {
	dir *preflight.DataDir
	db  *preflight.Database
}

func targets(r *preflight.Report) []target {
	var out []target
	for i := range r.DataDirs {
		d := &r.DataDirs[i]
		for j := range d.Databases {
			out = append(out, target{dir: d, db: &d.Databases[j]})
		}
	}
	return out
}

// classOf is the filesystem class deciding WAL safety for t (see
// preflight.WALClass).
func classOf(t target) mounts.Class { return preflight.WALClass(t.dir, t.db) }

// farSideBlind reports whether processes on the other side of filesystems
// of class c are invisible to every probe: cross-vm, network, fuse and
// unknown.
func farSideBlind(c mounts.Class) bool { return preflight.Riskier(c, mounts.ClassEphemeral) }

// walUnsafe reports classes where WAL must not be enabled.
func walUnsafe(c mounts.Class) bool { return preflight.Riskier(c, mounts.ClassEphemeral) }

func runOne(ctx context.Context, rep *preflight.Report, t target, opts Options) Database {
	db := t.db
	class := classOf(t)
	d := Database{Path: db.Path, Class: string(class), Before: string(db.JournalMode)}
	fail := func(err error, hints ...string) Database {
		d.Status, d.Error, d.Hints = StatusFailed, err.Error(), hints
		return d
	}
	switch {
	case preflight.DamagedDB(db):
		d.Status = StatusRefused
		d.Refusals = append(d.Refusals, Refusal{Reason: "db-header-damaged",
			Message: fmt.Sprintf("%s has no valid SQLite header but is a database (see preflight check's db-header-damaged): converting would open it, and SQLite cannot; nothing was changed", db.Path),
			Remedy:  []string{"keep every file: copy the database, -wal, -shm and -journal aside together and restore the database from a backup; delete none of them"}})
		return d
	case db.NotSQLite:
		return fail(fmt.Errorf("%s is not a SQLite database: %s", db.Path, nonEmpty(db.Err, "bad header")), "check the path; nothing was changed")
	case db.New && db.WAL.SizeBytes > sqlitefile.WALHeaderSize:
		d.Status = StatusRefused
		d.Refusals = append(d.Refusals, Refusal{Reason: "wal-without-database",
			Message: fmt.Sprintf("%s is missing or empty but its -wal holds %d bytes of frames: SQLite would see an empty database and delete that -wal, with the data in it; nothing was changed", db.Path, db.WAL.SizeBytes),
			Remedy:  []string{"do not open the database: stop the application, copy the database, -wal and -shm aside, and restore the database file from a backup (see preflight check's wal-without-database)"}})
		return d
	case db.New:
		d.Status = StatusSkipped
		d.Notes = append(d.Notes, "new or empty file: no journal mode to change yet; create it with the journal mode you want")
		return d
	case db.Err != "":
		return fail(errors.New(db.Err), "run preflight as the user that owns the database, or as root")
	case db.JournalMode != sqlitefile.JournalWAL && db.JournalMode != sqlitefile.JournalRollback:
		return fail(fmt.Errorf("%s: header bytes 18/19 name no known journal mode", db.Path), "open it with sqlite3 and run PRAGMA integrity_check; restore from a backup if it fails")
	}

	// A damaged header (a truncated file, a torn page 1) would fail the
	// checkpoint halfway: refuse before the backup and before any open.
	if ps, err := health.CheckHeaderFile(db.Path); err == nil {
		for _, p := range ps {
			// With frames in the -wal, a file shorter than its header says is
			// an interrupted checkpoint, not damage: the pages are in the WAL
			// and the checkpoint redoes them.
			if p.ID == health.ProblemTruncated && db.WAL.Exists && db.WAL.SizeBytes > 0 {
				continue
			}
			if p.ID != health.ProblemReservedBytes {
				return fail(fmt.Errorf("%s: %s (%s)", db.Path, p.Detail, p.ID),
					fmt.Sprintf("nothing was changed; keep a copy and recover what SQLite can read: sqlite3 %s .recover | sqlite3 %s", shell.Quote(db.Path), shell.Quote(db.Path+".recovered")))
			}
		}
	}

	j, err := health.InspectJournal(db.Path)
	if err != nil {
		return fail(fmt.Errorf("inspect %s-journal: %w", db.Path, err))
	}
	if j.Hot {
		return fail(fmt.Errorf("%s has a hot rollback journal (%s, %d bytes): a transaction was interrupted and must be rolled back before anything else", db.Path, j.Path, j.SizeBytes),
			fmt.Sprintf("let SQLite recover it with one normal read-write open, e.g. sqlite3 %s 'PRAGMA quick_check;' (never delete the -journal), then run preflight convert again", shell.Quote(db.Path)))
	}

	walFrames := db.WAL.Exists && db.WAL.SizeBytes > 0
	switch {
	case opts.To == ToDelete && db.JournalMode == sqlitefile.JournalRollback && !walFrames:
		d.Status = StatusAlready
		return d
	case opts.To == ToWAL && db.JournalMode == sqlitefile.JournalWAL:
		d.Status = StatusAlready
		return d
	}

	d.Refusals = guard(rep, t, class, opts, &d)

	if walFrames {
		scan := time.Now()
		wr, err := wal.ValidateFile(db.Path + "-wal")
		d.WALScan = time.Since(scan)
		if err != nil && !errors.Is(err, wal.ErrNotWAL) && !errors.Is(err, wal.ErrTruncatedHeader) {
			return fail(fmt.Errorf("read %s-wal: %w", db.Path, err))
		}
		d.WAL = &wr
		if wr.Discards() {
			msg := fmt.Sprintf("the WAL breaks at frame %d (%s) and %d valid-looking frames (%d committed transactions) follow it: SQLite would keep %d frames (%d transactions) and silently discard the rest on the first open",
				wr.FirstInvalidFrame, wr.InvalidReason, wr.ValidLookingAfter, wr.CommitsAfterBreak, wr.LastCommitFrame, wr.CommittedTxns)
			if opts.AcceptWALLoss {
				d.Notes = append(d.Notes, msg+"; accepted with --accept-wal-loss, the backup keeps the whole WAL")
			} else {
				d.Refusals = append(d.Refusals, Refusal{Reason: "wal-loss", Message: msg + "; nothing was touched",
					Remedy: []string{"keep the database, -wal and -shm together and copy them aside for recovery",
						"to convert anyway, losing those frames (the backup keeps them): " + walLossCommand(db.Path, opts, d.Refusals)}})
			}
		}
	}

	if len(d.Refusals) == 0 && farSideBlind(class) {
		d.Refusals = append(d.Refusals, farSide(ctx, t, class, opts, &d)...)
	}
	if len(d.Refusals) > 0 {
		d.Status = StatusRefused
		return d
	}
	if err := writable(db.Path); err != nil {
		return fail(err, "convert needs write access to the database and its directory (SQLite creates and deletes -journal, -wal and -shm there): run it where the volume is mounted read-write, as its owner or root")
	}
	if opts.DryRun {
		d.Status = StatusWouldConvert
		return d
	}

	if !opts.NoBackup {
		if err := makeBackup(db, opts, &d); err != nil {
			hint := "free space, or pass --backup-dir DIR on a filesystem with room (--no-backup skips it)"
			if !errors.Is(err, ErrNoSpace) {
				hint = "fix the backup location (--backup-dir DIR), or pass --no-backup to skip it"
			}
			return fail(fmt.Errorf("backup: %w; the database was not touched", err), hint)
		}
	}

	ck, v, err := convertDB(ctx, db.Path, opts, &d)
	d.Checkpoint, d.Verified = ck, v
	if err != nil {
		hints, err := conversionFailed(ctx, db.Path, opts, err, &d)
		return fail(err, hints...)
	}
	d.Status = StatusConverted
	d.After = opts.To
	return d
}

// guard turns the report's facts about t into refusals.
func guard(rep *preflight.Report, t target, class mounts.Class, opts Options, d *Database) []Refusal {
	var out []Refusal
	db := t.db
	for _, w := range db.Writers {
		what := w.Name() + " has the database open"
		if len(w.Files) > 0 {
			what += " via " + strings.Join(w.Files, ", ")
		}
		if w.Kind == "process" && len(w.Locks) > 0 {
			var ls []string
			for _, l := range w.Locks {
				ls = append(ls, fmt.Sprintf("%s %s lock on %s", l.Type, l.Name, l.File))
			}
			what += ", holding " + strings.Join(ls, ", ")
		}
		if w.Kind == "container" && w.Relation != "" {
			what += ", " + w.Relation
		}
		if w.Kind == "pod" {
			what = w.Name() + " mounts the database's storage read-write (" + w.Relation + ")"
		}
		out = append(out, Refusal{Reason: "writer", Message: what, Remedy: []string{"stop it first: " + w.Stop()}})
	}
	for _, w := range db.Stopped {
		// Not a writer now, so no refusal; but started during or after the
		// conversion it writes beside the application.
		d.Notes = append(d.Notes, fmt.Sprintf("%s mounts this database read-write (%s, %s): once started it is a second writer; remove it (docker rm %s) or keep it stopped", w.Name(), w.Container.State, w.Relation, shell.Quote(w.Container.Name)))
	}
	for _, u := range db.Unlinked {
		out = append(out, Refusal{Reason: "unlinked-sidecar",
			Message: fmt.Sprintf("process %d (%s) holds %s by %s, no longer the file at that path: its committed work is in that file", u.PID, u.Comm, u.File, u.How),
			Remedy:  []string{fmt.Sprintf("stop process %d cleanly first, then run preflight check again", u.PID)}})
	}
	for _, f := range rep.Findings {
		if f.Path == db.Path && f.ID == "activity-unseen-writer" {
			out = append(out, Refusal{Reason: "unseen-writer", Message: f.Message, Remedy: f.Remedy})
		}
	}
	if ev := litestreamEvidence(db.Path); len(ev) > 0 {
		out = append(out, Refusal{Reason: "litestream",
			Message: "Litestream replicates this database (" + strings.Join(ev, "; ") + "): Litestream needs WAL and switches the database back to WAL mode, and its replication breaks when the WAL is removed under it",
			Remedy:  []string{"stop Litestream and remove this database from its configuration first, or keep WAL and move the data to a local filesystem"}}) //nolint:misspell
	}
	if opts.To == ToWAL && walUnsafe(class) {
		out = append(out, Refusal{Reason: "unsafe-fs",
			Message: fmt.Sprintf("%s is on a %s filesystem, where WAL's shared memory and locks do not work", db.Path, class),
			Remedy:  []string{"keep journal_mode=DELETE here, or move the data to a named volume or a local filesystem first"}})
	}

	out = append(out, sillyRenamed(db, opts, d)...)
	out = append(out, swappable(db.Path, db.Link)...)
	if odd := preflight.IrregularSidecars(db); len(odd) > 0 {
		out = append(out, Refusal{Reason: "sidecar-not-regular",
			Message: fmt.Sprintf("%s: a -wal, -shm or -journal is a symlink or not a regular file (%s): SQLite cannot use it, and reading it could block or read another file; nothing was changed", db.Path, strings.Join(odd, ", ")),
			Remedy:  []string{"see preflight check's sidecar-symlink and sidecar-not-regular findings; convert once the sidecars are regular files or absent"}})
	}

	unverified := unverifiedProbes(rep, db)
	if len(unverified) > 0 {
		msg := "a live-writer probe could not run, so a writer may have been missed: " + strings.Join(unverified, "; ")
		if opts.AllowUnverified {
			why := " (--allow-unverified)"
			if opts.Entrypoint {
				why = " (the --on-unsafe convert policy converts when no writer was seen)"
			}
			d.Notes = append(d.Notes, msg+why)
		} else {
			out = append(out, Refusal{Reason: "unverified", Message: msg,
				Remedy: []string{"give preflight access to what it could not see (the Docker API: DOCKER_HOST or the socket; /proc entries: run as root, though some, such as a sandbox's PID 1, stay unreadable even then)",
					"or, once you have made sure yourself that nothing uses the database: --allow-unverified"}})
		}
	}
	return out
}

// swappable refuses a database reached through a directory or a symlink
// that a user other than root and us can replace (dirfd.Swappable,
// dirfd.UntrustedLink): SQLite would create the -journal, -wal and -shm
// wherever that user points it, and a symlink that user planted in the
// data directory makes this process convert (and back up) a database it
// alone may write. The directory of path, its resolved form (SQLite
// resolves the symlinks of the path it opens), and every symlink on the
// way from link (the path the database was found at, when that is a
// symlink) are checked.
func swappable(path, link string) []Refusal {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	refuse := func(x, why string) []Refusal {
		return []Refusal{{Reason: "swappable-dir",
			Message: fmt.Sprintf("the database is reached through %s, and %s: SQLite opens the database and creates its -journal, -wal and -shm by path, so that user could send them elsewhere while this process writes them; nothing was changed", x, why),
			Remedy:  []string{"convert as the user that owns the data directory (docker exec --user, su-exec, gosu), or move the database directly into the data directory"}}}
	}
	dirs := []string{filepath.Dir(abs)}
	if r, err := filepath.EvalSymlinks(dirs[0]); err == nil && r != dirs[0] {
		dirs = append(dirs, r)
	}
	for _, dir := range dirs {
		if x, why := dirfd.Swappable(dir); x != "" {
			return refuse(x, why)
		}
	}
	if link != "" {
		if x, why := dirfd.UntrustedLink(link); x != "" {
			return refuse(x, why)
		}
	}
	return nil
}

// sillyRenamed names the NFS silly-rename files beside db (check's
// nfs-silly-rename): a refusal, or a note with opts.AllowUnverified. They
// are evidence, not proof: a crashed client leaves them too, and no probe
// here sees the processes of other NFS clients.
func sillyRenamed(db *preflight.Database, opts Options, d *Database) []Refusal {
	if len(db.NFSSillyRenamed) == 0 {
		return nil
	}
	msg := fmt.Sprintf("NFS silly-rename files beside the database (%s): a process on some NFS client may still hold a deleted file of this directory open (an old copy of the database or its -wal) and write to it, or a crashed client left them", strings.Join(db.NFSSillyRenamed, ", "))
	if opts.AllowUnverified {
		why := " (--allow-unverified)"
		if opts.Entrypoint {
			why = " (the --on-unsafe convert policy converts when no writer was seen)"
		}
		d.Notes = append(d.Notes, msg+why)
		return nil
	}
	return []Refusal{{Reason: "nfs-silly-rename", Message: msg,
		Remedy: []string{"on every machine that mounts this export, find the process that holds them (lsof +D " + shell.Quote(filepath.Dir(db.Path)) + ", or fuser on each .nfs file) and stop it",
			"or, once you have made sure that no client holds them (a crashed client's leftovers): --allow-unverified"}}}
}

// unverifiedProbes lists the live-writer probes for db that could not run
// fully. Docker "no-daemon" (no engine on this host) is not one of them.
func unverifiedProbes(rep *preflight.Report, db *preflight.Database) []string {
	var out []string
	p := db.WriterProbes
	if p.Processes != "ran" {
		out = append(out, "processes: "+p.Processes)
	}
	if p.Locks != "ran" {
		out = append(out, "locks: "+p.Locks)
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
		if strings.HasPrefix(b, "pods: ") {
			out = append(out, b) // the Kubernetes API could not be asked fully
		}
		if strings.HasPrefix(b, "processes: ") && p.Processes == "ran" || strings.HasPrefix(b, "locks: ") && p.Locks == "ran" {
			out = append(out, b)
		}
	}
	return out
}

// farSide watches t's files for the quiet period and asks for the
// operator's confirmation: on these filesystems a process on the other
// side (the host behind a VM share, another network client) is invisible to
// every probe.
func farSide(ctx context.Context, t target, class mounts.Class, opts Options, d *Database) []Refusal {
	a, err := activity.Watch(ctx, t.db.Path, opts.Watch)
	if err != nil && ctx.Err() != nil {
		return []Refusal{{Reason: "activity", Message: fmt.Sprintf("interrupted during the %s quiet period: the database files were not watched to the end, so nothing was converted", opts.Watch)}}
	}
	if err != nil {
		return []Refusal{{Reason: "activity", Message: "could not watch the database files: " + err.Error()}}
	}
	d.Watched = a.Interval
	if a.Changed {
		return []Refusal{{Reason: "activity",
			Message: fmt.Sprintf("the database files changed during a %s watch (%s) although no writer was found here: something on the other side of this %s filesystem is using it", opts.Watch, strings.Join(a.What, "; "), class),
			Remedy:  []string{"stop the program that uses it on the host or the other machine, then run convert again"}}}
	}
	statement := fmt.Sprintf("%s is on a %s filesystem: processes on the other side (the host behind a VM share, other network clients) are invisible to every probe. Its files stayed unchanged for %s. Confirm that nothing outside this machine has it open", t.db.Path, class, opts.Watch)
	switch {
	case opts.Entrypoint:
		d.Notes = append(d.Notes, fmt.Sprintf("%s filesystem: files quiet for %s; choosing --on-unsafe convert stands for the operator's confirmation that nothing outside this machine has it open", class, opts.Watch))
		return nil
	case opts.Confirmed:
		d.Notes = append(d.Notes, fmt.Sprintf("%s filesystem: files quiet for %s; the operator confirmed (--yes) that nothing outside this machine has it open", class, opts.Watch))
		return nil
	case opts.DryRun:
		d.Notes = append(d.Notes, fmt.Sprintf("%s filesystem: files quiet for %s; the conversion will ask to confirm that nothing outside this machine has it open (on a terminal, or --yes)", class, opts.Watch))
		return nil
	case opts.Confirm != nil && opts.Confirm(t.db.Path, statement):
		d.Notes = append(d.Notes, fmt.Sprintf("%s filesystem: files quiet for %s; the operator confirmed on the terminal that nothing outside this machine has it open", class, opts.Watch))
		return nil
	}
	return []Refusal{{Reason: "needs-confirmation", Message: statement + " (no terminal to ask, or not confirmed)",
		Remedy: []string{"stop every program that uses it on the other side, then run again with --yes"}}}
}

// recipe returns the commands that convert the refused databases from
// outside this container, when they were refused because of processes in
// the container preflight itself runs in (docker exec into the app's
// container: the application is the writer).
func recipe(rep *preflight.Report, res *Result, opts Options) []string {
	if rep.Docker == nil || !rep.Docker.InContainer {
		return nil
	}
	var paths []string
	for _, d := range res.Databases {
		if d.Status != StatusRefused {
			continue
		}
		for _, r := range d.Refusals {
			if r.Reason == "writer" && strings.HasPrefix(r.Message, "process ") {
				paths = append(paths, shell.Quote(d.Path))
				break
			}
		}
	}
	if len(paths) == 0 {
		return nil
	}
	args := "convert"
	if res.To != ToDelete {
		args += " --to " + res.To
	}
	if s := rep.Docker.Status; s != docker.StatusRan && s != docker.StatusNoDaemon {
		args += " --allow-unverified"
	}
	args += " " + strings.Join(paths, " ")
	prog := shell.Quote(opts.Program)
	self := rep.Docker.Self
	switch {
	case self != nil && self.ComposeService != "" && !self.OneOff:
		svc, dc := self.ComposeService, self.ComposeCommand()
		return []string{
			dc + " stop " + svc,
			fmt.Sprintf("%s run --rm --no-deps --entrypoint %s %s %s", dc, prog, svc, args),
			dc + " start " + svc,
		}
	case self != nil:
		return []string{
			"docker stop " + self.Name,
			fmt.Sprintf("docker run --rm --volumes-from %s --entrypoint %s %s %s", self.Name, prog, self.Image, args),
			"docker start " + self.Name,
		}
	}
	return []string{
		"docker compose stop SERVICE",
		fmt.Sprintf("docker compose run --rm --no-deps --entrypoint %s SERVICE %s", prog, args),
		"docker compose start SERVICE",
	}
}

// writable checks that the database and its directory can be written: on
// a read-only mount or without permission SQLite could not delete -wal.
func writable(path string) error {
	for _, p := range []string{path, filepath.Dir(path)} {
		if err := accessW(p); err != nil {
			if errors.Is(err, errReadOnlyFS) {
				return fmt.Errorf("%s is on a read-only filesystem: %w", p, err)
			}
			return fmt.Errorf("%s is not writable: %w", p, err)
		}
	}
	return nil
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func nonEmptyPrefix(prefix, s, suffix string) string {
	if s == "" {
		return ""
	}
	return prefix + s + suffix
}

// walLossCommand is the convert command that accepts the WAL loss of the
// database at path: opts.Program convert with the flags this run was given
// (--to, --backup-dir, --verify, --watch, --yes) and --allow-unverified when
// this run had it or refused for want of it (refusals: an unverified probe,
// NFS silly-rename files), so that the command does not stop at the next
// refusal.
func walLossCommand(path string, opts Options, refusals []Refusal) string {
	args := []string{shell.Quote(opts.Program), "convert"}
	if opts.To == ToWAL {
		args = append(args, "--to", ToWAL)
	}
	if opts.BackupDir != "" {
		args = append(args, "--backup-dir", shell.Quote(opts.BackupDir))
	}
	if opts.Verify == VerifyFull {
		args = append(args, "--verify", VerifyFull)
	}
	if opts.Watch != DefaultWatch {
		args = append(args, "--watch", opts.Watch.String())
	}
	unverified := opts.AllowUnverified
	for _, r := range refusals {
		if r.Reason == "unverified" || r.Reason == "nfs-silly-rename" {
			unverified = true
		}
	}
	if unverified {
		args = append(args, "--allow-unverified")
	}
	if opts.Confirmed {
		args = append(args, "--yes")
	}
	return strings.Join(append(args, "--accept-wal-loss", shell.Quote(path)), " ")
}

// makeBackup removes the partial backups of db an earlier run left, then
// sets d.Backup: the complete backup an interrupted attempt made
// (opts.ReuseBackup) when it still holds the database's files, else a new
// one.
func makeBackup(db *preflight.Database, opts Options, d *Database) error {
	removed, err := removePartialBackups(db.Path, opts.BackupDir)
	for _, r := range removed {
		d.Notes = append(d.Notes, "removed "+r+", a backup an earlier run began and did not finish")
	}
	if err != nil {
		d.Notes = append(d.Notes, "could not remove a backup an earlier run did not finish: "+err.Error())
	}
	if dir := opts.ReuseBackup[CanonicalPath(db.Path)]; dir != "" {
		b, err := reusableBackup(dir, db.Path)
		if err == nil {
			d.Backup = b
			d.Notes = append(d.Notes, "reused the backup "+dir+" that an interrupted attempt at an earlier start made: it holds the database and its -wal as they are")
			return nil
		}
		d.Notes = append(d.Notes, "made a new backup: the one an interrupted attempt at an earlier start made ("+dir+") is kept, but "+err.Error())
	} else if opts.Entrypoint {
		// A start killed outright (SIGKILL, an OOM kill) after its backup
		// was complete left it unrecorded: adopt it when it holds the data
		// as it is, so restarts do not pile up full copies.
		if dir := newestBackup(db.Path, opts.BackupDir); dir != "" {
			if b, err := reusableBackup(dir, db.Path); err == nil {
				d.Backup = b
				d.Notes = append(d.Notes, "reused the backup "+dir+" that an earlier start made and did not record (it was stopped before it could): it holds the database and its -wal as they are")
				return nil
			}
		}
	}
	var walPages int64
	if d.WAL != nil {
		walPages = int64(d.WAL.DBSizePages)
	}
	b, err := backup(db.Path, opts.BackupDir, opts.Now().UTC(), walPages*int64(db.PageSize), func(done, total int64) {
		if opts.Progress != nil {
			opts.Progress(db.Path, "backup", done, total)
		}
	})
	if err != nil {
		return err
	}
	d.Backup = b
	return nil
}

// conversionFailed is the hints and error of a conversion of path to
// opts.To that failed with err. When ctx was canceled (a signal) it marks
// d Interrupted and says, from the header, whether the journal mode had
// changed before the interruption.
func conversionFailed(ctx context.Context, path string, opts Options, err error, d *Database) ([]string, error) {
	to := opts.To
	hints := []string{}
	if d.Backup != nil {
		hints = append(hints, "the backup of the files as they were is in "+d.Backup.Dir)
	}
	if ctx.Err() != nil {
		d.Interrupted = true
		state := "interrupted; the journal mode could not be read afterwards"
		if h, herr := sqlitefile.Inspect(path); herr == nil {
			if (to == ToDelete) == (h.JournalMode == sqlitefile.JournalRollback) {
				state = "interrupted after the journal mode change: the database is in " + strings.ToUpper(to) + " mode, its verification did not run"
			} else {
				state = "interrupted before the journal mode change: the database is as it was, in its old journal mode, with all its data"
				if opts.Entrypoint && d.Backup != nil {
					hints = append(hints, "the next start converts it and reuses that backup while it holds the data as it is")
				}
			}
		}
		return hints, fmt.Errorf("%w; %s", err, state)
	}
	if readOnlyDatabase(err) {
		hints = append(hints, "the database, its -wal or -shm, or their directory is read-only for this user (a conversion writes all three): run as their owner or root, on a read-write mount")
	}
	if errors.Is(err, ErrLocked) {
		hints = append(hints, "another connection opened the database during the conversion: find it with preflight check "+shell.Quote(path)+", stop it, and run convert again")
	}
	return hints, err
}
