// Package preflight checks that the SQLite databases in a data directory are
// safe where they are: it classifies the filesystem that holds each data
// directory (probe/mounts), reads each database's journal mode from its
// header (probe/sqlitefile), runs the live-writer and health probes, and
// turns those facts into findings through the one rules table (package
// rules). Check (CheckCompose for compose projects, Audit for every
// container of a Docker engine) is the only entry point; the CLI in
// cmd/preflight renders its Report.
package preflight

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/preflight-sqlite/preflight/internal/fsbound"
	"github.com/preflight-sqlite/preflight/internal/rawfile"
	"github.com/preflight-sqlite/preflight/policy"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/kube"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
	"github.com/preflight-sqlite/preflight/report"
	"github.com/preflight-sqlite/preflight/rules"
)

// ErrNoPaths is returned by Check when Options.Paths is empty.
var ErrNoPaths = errors.New("no data directory given")

// ErrRelativePath is returned by Check when a path is relative and the mount
// table is a saved one: there is no working directory to resolve it against.
var ErrRelativePath = errors.New("path must be absolute with a saved mount table")

// Options configure Check.
type Options struct {
	// Paths are data directories or database files. Required.
	Paths []string
	// MountTable is a saved mount table (--mountinfo). When set, paths are
	// classified from it without touching the local filesystem (no symlink
	// resolution); databases are still inspected where the path exists on
	// this machine. Nil reads /proc/self/mountinfo.
	MountTable *mounts.Table
	// MountTableSource names where MountTable came from, for the report.
	MountTableSource string
	// MaxDepth bounds database discovery below each data directory
	// (sqlitefile.DiscoverOptions); 0 means the default, 2.
	MaxDepth int
	// SniffMax and SniffTime bound, per data directory, how many files
	// without a database name are opened to look for the SQLite header, and
	// for how long from the start of its search they are looked at
	// (sqlitefile.DiscoverOptions); 0 means the
	// defaults, 2,000 files and 1 s; negative means no limit. Files named
	// *.db, *.sqlite, *.sqlite3, *.db3 are always inspected.
	SniffMax  int
	SniffTime time.Duration
	// Ignore lists finding IDs to demote to info.
	Ignore []string
	// Writers configures the live-writer probes.
	Writers WriterOptions
	// InspectSaved inspects the databases at the paths on this machine even
	// with a saved MountTable. Off by default: a saved table's paths belong
	// to the machine it came from, and a local directory of the same name
	// says nothing about them. Tests set it to judge real databases
	// against captured tables.
	InspectSaved bool
	// Health configures the --deep database health checks.
	Health HealthOptions
	// FSTimeout bounds how long a data directory may take to answer a
	// first stat and directory read; a path that does not answer (a stuck
	// FUSE daemon, a dead NFS server) is reported and not probed further.
	// Zero means 5 s.
	FSTimeout time.Duration
	// Locks says the report answers preflight locks: the rules' advice is
	// then about the lock holders (rules.Input.Locks).
	Locks bool
	// JournalModeExported says the application is told the journal mode to
	// use through a setting of its own (preflight run --export-env NAME):
	// a new database on an unsafe filesystem is then created in that mode,
	// and new-db-on-unsafe-fs is info instead of a warning.
	JournalModeExported bool
	// Container, when set, names a container: Paths are paths inside it,
	// mapped to this host through its mounts (docker inspect) and checked
	// here. Needs the Docker Engine API.
	Container string

	// oneFilesystem keeps discovery on each path's own filesystem
	// (sqlitefile.DiscoverOptions.OneFilesystem): audit's walk of a
	// container's root, whose /proc, /sys and /dev are not data.
	oneFilesystem bool
}

// Check classifies each path's filesystem, inspects its databases and
// applies the rules. It never writes to, creates, or locks anything in the
// data directories (except Health.ProbeFS, which creates and removes one
// temporary file). It returns ErrNoPaths or ErrRelativePath for bad
// options; problems with the paths themselves (missing, unreadable, not
// SQLite, unresponsive) are findings, not errors.
func Check(ctx context.Context, opts Options) (*Report, error) {
	if len(opts.Paths) == 0 {
		return nil, ErrNoPaths
	}
	saved := opts.MountTable != nil
	if saved {
		for _, p := range opts.Paths {
			if !filepath.IsAbs(p) {
				return nil, fmt.Errorf("check %s: %w", p, ErrRelativePath)
			}
		}
	}
	r := &Report{Schema: Schema, Probes: map[string]report.ProbeStatus{}}
	var inContainer []containerPath
	if opts.Container != "" {
		paths, cps, err := inspectContainer(ctx, r, opts)
		if err != nil {
			return nil, err
		}
		opts.Paths, inContainer = paths, cps
		// The Docker probe gets the host paths the container's mounts map
		// to: whose view to take is said, not our own container's.
		opts.Writers.Docker.HostPaths = true
		opts.Writers.Kube.Mode = kube.ModeOff // host paths: no pod's volumeMounts hold them
	}
	holding, under, err := discoverAll(ctx, r, opts, inContainer)
	if err != nil {
		return nil, err
	}
	if t := classifyAll(r, opts, holding, under); t != nil {
		// One read serves the Docker and Kubernetes probes too.
		opts.Writers.Docker.MountTable, opts.Writers.Kube.MountTable = t, t
	}

	// Phase 3: live writers (raw reads first), health, the rules.
	if opts.Writers.ProcTimeout <= 0 {
		opts.Writers.ProcTimeout = opts.FSTimeout
	}
	probeWriters(ctx, r, opts.Writers)
	checkHealth(ctx, r, opts.Health)
	readDamagedWALs(ctx, r, opts.FSTimeout)
	if opts.Health.ProbeFS {
		probeFilesystems(r)
	}
	r.Findings = judge(r, rules.Input{
		Starting: opts.Writers.Starting, Converted: opts.Writers.Converted,
		DockerRequired:      opts.Writers.Docker.Mode == docker.ModeRequired,
		KubeRequired:        opts.Writers.Kube.Mode == kube.ModeRequired,
		JournalModeExported: opts.JournalModeExported,
		BusyTimeout:         opts.Writers.BusyTimeout,
		Locks:               opts.Locks,
	}, opts.Ignore)
	r.Verdict = report.VerdictOf(r.Worst())
	r.JournalMode, r.FSClass = rules.JournalMode(r)
	return r, nil
}

// discoverAll is phase 1 of Check: everything that reads this machine's
// files, path by path, each guarded by the responsiveness check. It adds
// a DataDir to r per path and returns the paths whose mounts the mount
// table must hold (holding) or whose submounts it must keep (under); the
// error is ctx's.
func discoverAll(ctx context.Context, r *Report, opts Options, inContainer []containerPath) (holding, under []string, err error) {
	saved := opts.MountTable != nil
	seen := map[[2]uint64]bool{}
	for i, p := range opts.Paths {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		var d DataDir
		switch {
		case inContainer != nil && inContainer[i].local == "":
			d = DataDir{Path: p, Mount: inContainer[i].mount, Databases: []Database{}, Saved: true}
		case inContainer != nil:
			d = discoverBounded(ctx, inContainer[i].local, false, opts)
			d.ContainerPath = p
		default:
			d = discoverBounded(ctx, p, saved, opts)
		}
		dedupe(&d, seen)
		h, u := lookups(&d)
		holding, under = append(holding, h...), append(under, u...)
		r.DataDirs = append(r.DataDirs, d)
	}
	return holding, under, nil
}

// classifyAll is phase 2 of Check: the mount table (opts.MountTable, or
// the lines of /proc/self/mountinfo that can hold the paths holding and
// under, and docker.SelfFiles), then the classification of every
// directory and database. It returns the table it read from
// /proc/self/mountinfo, for the Docker and Kubernetes probes; nil for a
// saved table or when it could not be read.
func classifyAll(r *Report, opts Options, holding, under []string) *mounts.Table {
	table := opts.MountTable
	var read *mounts.Table
	r.MountTable = MountTable{Source: opts.MountTableSource, Saved: table != nil}
	if table == nil {
		r.MountTable.Source = "/proc/self/mountinfo"
		// One read serves the Docker probe too: it finds our container
		// from the mounts of SelfFiles.
		t, err := mounts.ReadSelfFor(append(holding, docker.SelfFiles...), under)
		if err != nil {
			r.MountTable.Error = err.Error()
		} else {
			table, read = t, t
		}
	}
	if table != nil {
		r.MountTable.Format = table.Format
		r.MountTable.Mounts = len(table.Mounts)
		r.MountTable.Skipped = table.Skipped
		r.Probes["mounts"] = report.ProbeRan
	} else {
		r.Probes["mounts"] = report.ProbeFailed
	}
	r.Probes["sqlitefile"] = report.ProbeRan
	for i := range r.DataDirs {
		d := &r.DataDirs[i]
		if d.Mount == nil {
			classify(d, table, r.MountTable.Error)
		}
	}
	return read
}

// listable reports why the directory dir cannot be listed (open, or read
// its first entry), nil when it can; an empty directory is listable.
func listable(dir string) error {
	f, err := rawfile.OpenDir(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Readdirnames(1); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// discoverBounded runs discoverPath for as long as the filesystem keeps
// answering: a symlink into, or a mount below the data directory on, a
// filesystem that stops answering must not hang the check, but a slow one
// that answers every call (a big tree on a VM share) is walked to the end.
// When no call returns within twice opts.FSTimeout the path is reported
// unresponsive, and nothing else is read from it.
func discoverBounded(ctx context.Context, p string, saved bool, opts Options) DataDir {
	timeout := opts.FSTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	if d, ok := fsbound.WhileAnswering(ctx, 2*timeout, func(pr *fsbound.Progress) DataDir {
		return discoverPath(ctx, p, saved, opts, pr.Tick)
	}); ok {
		return d
	}
	return DataDir{Path: p, Exists: true, Databases: []Database{}, Resolved: filepath.Clean(p),
		Unresponsive: fmt.Sprintf("looking for databases under %s stopped: no filesystem call there answered within %s (a symlink or a mount below it does not answer)", p, 2*timeout)}
}

// dedupe drops databases already reported under an earlier path (same
// device and inode), counting them in Duplicates, and records the rest.
func dedupe(d *DataDir, seen map[[2]uint64]bool) {
	kept := d.Databases[:0]
	for _, db := range d.Databases {
		key := [2]uint64{db.Dev, db.Ino}
		if db.Ino != 0 {
			if seen[key] {
				d.Duplicates++
				continue
			}
			seen[key] = true
		}
		kept = append(kept, db)
	}
	d.Databases = kept
}

// discoverPath builds the DataDir for one configured path: resolves it,
// stats it and finds its databases, without the mount table. With saved set
// the path belongs to the machine a saved mount table came from and nothing
// here is read (unless opts.InspectSaved). tick is called after each
// filesystem call that answered.
func discoverPath(ctx context.Context, p string, saved bool, opts Options, tick func()) DataDir {
	d := DataDir{Path: p, Saved: saved, Databases: []Database{}, Resolved: filepath.Clean(p)}
	if saved && !opts.InspectSaved {
		return d
	}
	timeout := opts.FSTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	if err := fsbound.Responsive(ctx, p, timeout); err != nil {
		d.Unresponsive = err.Error()
		d.Exists = true // it is there, it does not answer
		return d
	}
	if !saved {
		res, err := mounts.ResolvePath(p)
		if err != nil {
			d.MountError = err.Error()
		} else {
			d.Resolved = res
		}
	}
	fi, statErr := os.Stat(p)
	d.Exists = statErr == nil
	if statErr != nil && !errors.Is(statErr, fs.ErrNotExist) {
		d.StatError = statErr.Error()
	}
	newDB := false
	if errors.Is(statErr, fs.ErrNotExist) && sqlitefile.LooksLikeDatabase(p) {
		// A database that does not exist yet, in a directory that does:
		// the application creates it on first start.
		if pfi, err := os.Stat(filepath.Dir(p)); err == nil && pfi.IsDir() {
			d.Exists, newDB, d.DBFile = true, true, true
		}
	}
	if !d.Exists {
		return d
	}
	if fi != nil && fi.IsDir() {
		if err := listable(p); err != nil {
			// The directory itself cannot be listed: nothing under it is
			// known (data-dir-unreadable), not merely part of it
			// (scan-incomplete).
			d.StatError = "cannot list the directory: " + err.Error()
			return d
		}
	}
	d.Inspected = true
	d.DBFile = d.DBFile || !fi.IsDir()
	if newDB {
		db, err := sqlitefile.Inspect(p)
		if err != nil {
			d.Errors = append(d.Errors, err.Error())
		}
		d.Databases = append(d.Databases, Database{Database: db, Writers: []Writer{}, ResolvedPath: filepath.Join(filepath.Dir(d.Resolved), filepath.Base(p))})
		findSillyRenamed(&d)
		return d
	}
	searchDatabases(&d, p, opts, tick)
	findSillyRenamed(&d)
	return d
}

// searchDatabases finds the databases under p, the existing path of d
// (sqlitefile.Discover within opts' bounds), and adds each database once.
func searchDatabases(d *DataDir, p string, opts Options, tick func()) {
	// A path with ".." is walked from its resolved form: after a symlink
	// the kernel's ".." is not the textual one.
	walk := p
	if strings.Contains(p, "..") && d.Resolved != "" {
		walk = d.Resolved
	}
	res, err := sqlitefile.Discover([]string{walk}, sqlitefile.DiscoverOptions{MaxDepth: opts.MaxDepth,
		SniffMax: opts.SniffMax, SniffTime: opts.SniffTime, Progress: tick, OneFilesystem: opts.oneFilesystem})
	if err != nil {
		d.Errors = append(d.Errors, err.Error())
		return
	}
	d.Errors = append(d.Errors, res.Errors...)
	d.NotSearched = res.NotSearched
	d.NotSniffed = res.NotSniffed
	local := map[[2]uint64]bool{} // a database reached twice within this path
	for _, db := range res.Databases {
		tick()
		key := [2]uint64{db.Dev, db.Ino}
		if db.Ino != 0 {
			if local[key] {
				continue
			}
			local[key] = true
		}
		d.Databases = append(d.Databases, found(db))
	}
}

// found is a database discovery found, through a symlink resolved: SQLite
// follows the link and keeps -wal, -shm and -journal beside the real file,
// so every probe, the conversion and the watch must use that path, or they
// look at sidecars that do not exist. Sidecars that are symlinks are
// listed in SidecarLinks.
func found(db sqlitefile.Database) Database {
	link := ""
	if fi, err := os.Lstat(db.Path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if rp, err := mounts.ResolvePath(db.Path); err == nil {
			if real, err := sqlitefile.Inspect(rp); err == nil || real.Err != "" {
				real.Dev, real.Ino = db.Dev, db.Ino
				link, db = db.Path, real
			}
		}
	}
	resolved := db.Path
	if rp, err := mounts.ResolvePath(db.Path); err == nil {
		resolved = rp
	}
	var linked []string
	for _, sfx := range report.SidecarSuffixes {
		if fi, err := os.Lstat(db.Path + sfx); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(db.Path + sfx)
			linked = append(linked, fmt.Sprintf("%s%s -> %s", filepath.Base(db.Path), sfx, target))
		}
	}
	return Database{Database: db, Link: link, SidecarLinks: linked, Writers: []Writer{}, ResolvedPath: resolved}
}

// findSillyRenamed fills each database's NFSSillyRenamed from the
// directory SQLite keeps its -wal in (beside the resolved file), reading
// each directory once. A directory that cannot be read leaves the list
// empty: Discover has reported the data directory's own read errors.
func findSillyRenamed(d *DataDir) {
	byDir := map[string][]string{}
	for j := range d.Databases {
		db := &d.Databases[j]
		dir := filepath.Dir(db.ResolvedPath)
		names, ok := byDir[dir]
		if !ok {
			names, _ = sqlitefile.NFSSillyRenamed(dir)
			byDir[dir] = names
		}
		db.NFSSillyRenamed = names
	}
}

// lookups are the paths whose mounts classify may look up: under (the
// data directory: mounts inside it matter too) and holding (its parent,
// each database and the directory of each, which may lie elsewhere through
// a symlink).
func lookups(d *DataDir) (holding, under []string) {
	if d.Saved && !d.Inspected {
		return nil, nil
	}
	holding = []string{filepath.Dir(d.Resolved)}
	for _, db := range d.Databases {
		holding = append(holding, db.ResolvedPath, filepath.Dir(db.ResolvedPath))
		for _, sfx := range report.SidecarSuffixes {
			holding = append(holding, db.ResolvedPath+sfx)
		}
	}
	return holding, []string{d.Resolved}
}

// classify finds and classifies the mount of the data directory (for a
// database file, its directory, which holds -wal and -shm) and of each
// database: its resolved file and the directory SQLite creates its -wal
// and -shm in, which differ from the data directory's for a single-file
// bind mount or a symlink to another filesystem.
func classify(d *DataDir, table *mounts.Table, tableErr string) {
	if table == nil {
		d.MountError = tableErr
		return
	}
	if d.MountError != "" && !d.Saved {
		return
	}
	target := d.Resolved
	if d.DBFile {
		target = filepath.Dir(target)
	}
	m, err := lookup(table, target, d.Saved || d.Unresponsive != "")
	if err != nil {
		d.MountError = err.Error()
		return
	}
	d.Mount = &m
	for j := range d.Databases {
		db := &d.Databases[j]
		for _, p := range []string{db.ResolvedPath, filepath.Dir(db.ResolvedPath)} {
			fm, err := lookup(table, p, d.Saved)
			if err != nil || fm.Mountpoint == d.Mount.Mountpoint {
				continue
			}
			if db.Mount == nil || policy.Riskier(fm.Class, db.Mount.Class) {
				fm := fm
				db.Mount = &fm
			}
		}
		db.SingleFileMount = db.Mount != nil && db.Mount.Mountpoint == db.ResolvedPath
		classifySidecars(db, d.Mount, table, d.Saved)
	}
}

// lookup classifies the mount holding p; on this machine (not saved) it
// prefers the mount whose device is p's, so a mount hidden under a later
// mount is not taken for the one that serves p.
func lookup(table *mounts.Table, p string, saved bool) (mounts.Mount, error) {
	if !saved {
		if dev, ok := deviceOf(p); ok {
			info, err := table.FindDev(p, dev)
			if err != nil {
				return mounts.Mount{}, err
			}
			m := table.ClassifyMount(info)
			witness(&m, p)
			return m, nil
		}
	}
	return table.Classify(p)
}
