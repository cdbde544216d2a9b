package convert

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/preflight-sqlite/preflight/internal/dirfd"
	"github.com/preflight-sqlite/preflight/internal/shell"
	"github.com/preflight-sqlite/preflight/rules"

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

// convertFacts starts the facts the convert rules judge t by.
func convertFacts(rep *preflight.Report, t target, opts Options) *rules.ConvertFacts {
	return &rules.ConvertFacts{
		Report: rep, Dir: t.dir, DB: t.db, ToWAL: opts.To == ToWAL,
		AllowUnverified: opts.AllowUnverified, Entrypoint: opts.Entrypoint,
		AcceptWALLoss: opts.AcceptWALLoss, Watch: opts.Watch,
		Yes: opts.Confirmed, CanAsk: opts.Confirm != nil && !opts.DryRun,
	}
}

// judged adds the findings of one stage of the convert rules to d: each
// error-level finding is a refusal with its ID as the reason, each other
// one a note. It reports whether any refused.
func judged(fs []preflight.Finding, d *Database) bool {
	refused := false
	for _, f := range fs {
		if f.Level != preflight.LevelError {
			d.Notes = append(d.Notes, f.Message)
			continue
		}
		d.Refusals = append(d.Refusals, Refusal{Reason: string(f.ID), Message: f.Message, Remedy: f.Remedy})
		refused = true
	}
	return refused
}

func runOne(ctx context.Context, rep *preflight.Report, t target, opts Options) Database {
	db := t.db
	d := Database{Path: db.Path, Class: string(classOf(t)), Before: string(db.JournalMode)}
	fail := func(err error, hints ...string) Database {
		d.Status, d.Error, d.Hints = StatusFailed, err.Error(), hints
		return d
	}
	cf := convertFacts(rep, t, opts)
	if rules.NeedsWatch(cf) {
		d.farSide = rules.RecipeConfirmation(cf)
	}
	if judged(rules.Convert(cf, rules.StageOpen), &d) {
		d.Status = StatusRefused
		return d
	}
	if f, ok := failure(rules.Convert(cf, rules.StageRead)); ok {
		return fail(errors.New(f.Message), f.Remedy...)
	}
	if db.New {
		d.Status = StatusSkipped
		d.Notes = append(d.Notes, "new or empty file: no journal mode to change yet; create it with the journal mode you want")
		return d
	}
	if err := readOnDisk(cf); err != nil {
		return fail(err)
	}
	if f, ok := failure(rules.Convert(cf, rules.StageDisk)); ok {
		return fail(errors.New(f.Message), f.Remedy...)
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

	cf.Litestream = litestreamEvidence(db.Path)
	cf.SwappableThrough, cf.SwappableWhy = swappable(db.Path, db.Link)
	if opts.BackupDir != "" && !opts.NoBackup {
		cf.BackupDir = opts.BackupDir
		cf.BackupDirThrough, cf.BackupDirWhy = swappableBackupDir(opts.BackupDir)
	}
	judged(rules.Convert(cf, rules.StageGuard), &d)
	d.writerHere = rules.WriterHere(db)
	if walFrames {
		scan := time.Now()
		wr, err := wal.ValidateFile(db.Path + "-wal")
		d.WALScan = time.Since(scan)
		if err != nil && !errors.Is(err, wal.ErrNotWAL) && !errors.Is(err, wal.ErrTruncatedHeader) {
			return fail(fmt.Errorf("read %s-wal: %w", db.Path, err))
		}
		d.WAL, cf.WAL = &wr, &wr
		cf.AcceptCommand = walLossCommand(db.Path, opts, d.Refusals)
		judged(rules.Convert(cf, rules.StageWAL), &d)
	}
	if len(d.Refusals) == 0 && rules.NeedsWatch(cf) {
		farSide(ctx, cf, opts, &d)
	}
	if len(d.Refusals) > 0 {
		d.Status = StatusRefused
		return d
	}
	return convertChecked(ctx, db, opts, d)
}

// failure is the first finding of a failure stage (rules.ConvertStage
// Fails): why the database cannot be converted at all.
func failure(fs []preflight.Finding) (preflight.Finding, bool) {
	if len(fs) == 0 {
		return preflight.Finding{}, false
	}
	return fs[0], true
}

// readOnDisk reads the database's header and rollback journal into cf
// (rules.StageDisk): a damaged header (a truncated file, a torn page 1)
// would fail the checkpoint halfway, and a hot journal must be rolled back
// first, so either fails the conversion before the backup and before any
// open. The error is the journal's that could not be inspected.
func readOnDisk(cf *rules.ConvertFacts) error {
	if ps, err := health.CheckHeaderFile(cf.DB.Path); err == nil {
		cf.HeaderProblems = ps
	}
	j, err := health.InspectJournal(cf.DB.Path)
	if err != nil {
		return fmt.Errorf("inspect %s-journal: %w", cf.DB.Path, err)
	}
	cf.Journal = &j
	return nil
}

// convertChecked converts db, which the guard let through: the write
// check, the backup, the checkpoints and the mode change, the
// verification.
func convertChecked(ctx context.Context, db *preflight.Database, opts Options, d Database) Database {
	fail := func(err error, hints ...string) Database {
		d.Status, d.Error, d.Hints = StatusFailed, err.Error(), hints
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
		if err := makeBackup(ctx, db, opts, &d); err != nil {
			if ctx.Err() != nil {
				hints, err := conversionFailed(ctx, db.Path, opts, fmt.Errorf("backup: %w", err), &d)
				return fail(err, hints...)
			}
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

// swappable names a directory or symlink through which the database is
// reached that a user other than root and us can replace
// (dirfd.Swappable, dirfd.UntrustedLink), and why; empty when there is
// none (the swappable-dir refusal). SQLite would create the -journal, -wal
// and -shm wherever that user points it, and a symlink that user planted
// in the data directory makes this process convert (and back up) a
// database it alone may write. The directory of path, its resolved form
// (SQLite resolves the symlinks of the path it opens), and every symlink
// on the way from link (the path the database was found at, when that is
// a symlink) are checked.
func swappable(path, link string) (through, why string) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", ""
	}
	dirs := []string{filepath.Dir(abs)}
	if r, err := filepath.EvalSymlinks(dirs[0]); err == nil && r != dirs[0] {
		dirs = append(dirs, r)
	}
	for _, dir := range dirs {
		if x, why := dirfd.Swappable(dir); x != "" {
			return x, why
		}
	}
	if link != "" {
		return dirfd.UntrustedLink(link)
	}
	return "", ""
}

// swappableBackupDir names a symlink or directory through which the
// backup directory dir is reached, or the directory its missing part
// would be created in, that a user other than root and us can replace,
// and why (dirfd.UntrustedLink, dirfd.Swappable, dirfd.SwappableNew);
// empty when there is none (the swappable-dir refusal). The backup is
// written below it: that user could point it at any directory.
func swappableBackupDir(dir string) (through, why string) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir, err.Error()
	}
	if x, why := dirfd.UntrustedLink(abs); x != "" {
		return x, why
	}
	have := abs
	for have != "/" {
		if _, err := os.Stat(have); err == nil {
			break
		}
		have = filepath.Dir(have)
	}
	r, err := filepath.EvalSymlinks(have)
	if err != nil {
		return have, fmt.Sprintf("it cannot be resolved: %v", err)
	}
	if have == abs {
		return dirfd.Swappable(r)
	}
	return dirfd.SwappableNew(r)
}

// farSide watches the database's files for the quiet period and asks for
// the operator's confirmation (the activity and needs-confirmation
// rules): on these filesystems a process on the other side (the host
// behind a VM share, another network client) is invisible to every probe.
func farSide(ctx context.Context, cf *rules.ConvertFacts, opts Options, d *Database) {
	a, err := activity.Watch(ctx, cf.DB.Path, opts.Watch)
	cf.WatchErr, cf.Interrupted = err, err != nil && ctx.Err() != nil
	if err == nil {
		d.Watched = a.Interval
		cf.Changed, cf.What = a.Changed, a.What
	}
	if judged(rules.Convert(cf, rules.StageWatch), d) {
		return
	}
	switch {
	case opts.Entrypoint:
		cf.Confirmation = rules.ConfirmedByPolicy
	case opts.Confirmed:
		cf.Confirmation = rules.ConfirmedByFlag
	case opts.DryRun:
		cf.Confirmation = rules.ConfirmLater
	case opts.Confirm != nil && opts.Confirm(cf.DB.Path, rules.ConfirmStatement(cf)):
		cf.Confirmation = rules.ConfirmedOnTerminal
	}
	judged(rules.Convert(cf, rules.StageConfirm), d)
}

// recipe returns the commands that convert the refused databases from
// outside this container, when they were refused because of processes in
// the container preflight itself runs in (docker exec into the app's
// container: the application is the writer), and what the recipe's --yes
// confirms. The one-off convert runs without a terminal (docker run
// without -it, or from a script), so on a filesystem whose far side no
// probe sees it passes --yes, and the statements it confirms are shown
// before it; the quiet-period watch still runs.
func recipe(rep *preflight.Report, res *Result, opts Options) ([]string, []string, []RecipeTemplate) {
	if rep.Docker == nil || !rep.Docker.InContainer {
		return nil, nil, nil
	}
	var paths, confirms []string
	for _, d := range res.Databases {
		if d.Status == StatusRefused && d.writerHere {
			paths = append(paths, shell.Quote(d.Path))
			if d.farSide != "" {
				confirms = append(confirms, d.farSide)
			}
		}
	}
	if len(paths) == 0 {
		return nil, nil, nil
	}
	args := "convert"
	if res.To != ToDelete {
		args += " --to " + res.To
	}
	if s := rep.Docker.Status; s != docker.StatusRan && s != docker.StatusNoDaemon {
		args += " --allow-unverified"
	}
	if len(confirms) > 0 {
		args += " --yes"
	}
	args += " " + strings.Join(paths, " ")
	prog := shell.Quote(opts.Program)
	self := rep.Docker.Self
	switch {
	case self != nil && self.ComposeService != "" && !self.OneOff:
		svc, dc := self.ComposeServiceArg(), self.ComposeCommand()
		return []string{
			dc + " stop " + svc,
			fmt.Sprintf("%s run --rm --no-deps --entrypoint %s %s %s", dc, prog, svc, args),
			dc + " start " + svc,
		}, confirms, nil
	case self != nil:
		return []string{
			"docker stop " + self.Name,
			fmt.Sprintf("docker run --rm --volumes-from %s%s --entrypoint %s %s %s", self.Name, oneOffFlags(self), prog, self.Image, args),
			"docker start " + self.Name,
		}, confirms, nil
	}
	// The engine did not say which container this is: a template of each
	// shape. The container's id is known from inside (SelfID), and its
	// image from docker inspect on the engine host.
	id := rep.Docker.SelfID
	if len(id) > 12 {
		id = id[:12]
	}
	return nil, confirms, []RecipeTemplate{
		{Note: rules.RecipeComposeTemplate, Lines: []string{
			"docker compose stop SERVICE",
			fmt.Sprintf("docker compose run --rm --no-deps --entrypoint %s SERVICE %s", prog, args),
			"docker compose start SERVICE",
		}},
		{Note: fmt.Sprintf(rules.RecipeContainerTemplate, id), Lines: []string{
			"docker stop " + id,
			fmt.Sprintf("docker run --rm --volumes-from %s --entrypoint %s \"$(docker inspect -f '{{.Config.Image}}' %s)\" %s", id, prog, id, args),
			"docker start " + id,
		}},
	}
}

// oneOffFlags are the docker run flags that give the recipe's one-off
// what --volumes-from does not carry of the application's container self:
// its user (the files it writes keep their owner), its supplementary
// groups (a Docker socket reached through a group), its DOCKER_HOST and
// PREFLIGHT_* variables, and, when DOCKER_HOST names an address on a
// network (a socket proxy), its network mode by name (--network
// container:NAME is refused while self is stopped; the default bridge
// needs no flag).
func oneOffFlags(self *docker.Container) string {
	var b strings.Builder
	if self.User != "" {
		b.WriteString(" --user " + shell.Quote(self.User))
	}
	for _, g := range self.GroupAdd {
		b.WriteString(" --group-add " + shell.Quote(g))
	}
	for _, e := range self.Env {
		b.WriteString(" -e " + shell.Quote(e))
	}
	host, n := self.DockerHost(), self.Network
	if host != "" && !strings.HasPrefix(host, "unix://") && n != "" && n != "default" && n != "bridge" {
		b.WriteString(" --network " + shell.Quote(n))
	}
	return b.String()
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
		if rules.RefusalWants(rules.ID(r.Reason), rules.ActAllowUnverified) {
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
func makeBackup(ctx context.Context, db *preflight.Database, opts Options, d *Database) error {
	removed, left, err := removePartialBackups(db.Path, opts.BackupDir)
	for _, r := range removed {
		d.Notes = append(d.Notes, "removed "+r+", a backup an earlier run began and did not finish")
	}
	for _, l := range left {
		d.Notes = append(d.Notes, "left "+l+" (it is named as a backup an earlier run did not finish, but is not one this user made: whoever owns the data directory may have renamed another directory to that name)")
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
	b, err := backup(ctx, db.Path, opts.BackupDir, opts.Now().UTC(), walPages*int64(db.PageSize), func(done, total int64) {
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
				d.After = to
				state = "interrupted after the journal mode change: the database is in " + strings.ToUpper(to) + " mode, " + verification(d.Verified)
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
