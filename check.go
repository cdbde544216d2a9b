// Package preflight checks that the SQLite databases in a data directory are
// safe where they are: it classifies the filesystem that holds each data
// directory (probe/mounts), reads each database's journal mode from its
// header (probe/sqlitefile), and turns those facts into findings through one
// rules table (rules.go). Check is the only entry point; the CLI in
// cmd/preflight renders its Report.
package preflight

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
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
	// Container, when set, names a container: Paths are paths inside it,
	// mapped to this host through its mounts (docker inspect) and checked
	// here. Needs the Docker Engine API.
	Container string
}

// Check classifies each path's filesystem, inspects its databases and
// applies the rules. It never writes to, creates, or locks anything in the
// data directories. It returns ErrNoPaths or ErrRelativePath for bad
// options; problems with the paths themselves (missing, unreadable, not
// SQLite) are findings, not errors.
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
	r := &Report{
		Schema: Schema,
		Probes: map[string]string{},
	}
	locals := opts.Paths
	var inContainer []containerPath
	if opts.Container != "" {
		var err error
		if inContainer, err = inspectContainer(ctx, r, opts); err != nil {
			return nil, err
		}
		locals = nil
		for _, cp := range inContainer {
			if cp.local != "" {
				locals = append(locals, cp.local)
			}
		}
	}
	table := opts.MountTable
	r.MountTable = MountTable{Source: opts.MountTableSource, Saved: saved}
	if table == nil {
		r.MountTable.Source = "/proc/self/mountinfo"
		t, err := mounts.ReadSelfFor(lookupPaths(locals))
		if err != nil {
			r.MountTable.Error = err.Error()
		} else {
			table = t
		}
	}
	if table != nil {
		r.MountTable.Format = table.Format
		r.MountTable.Mounts = len(table.Mounts)
		r.MountTable.Skipped = table.Skipped
		r.Probes["mounts"] = "ran"
	} else {
		r.Probes["mounts"] = "failed"
	}
	r.Probes["sqlitefile"] = "ran"

	seen := map[[2]uint64]bool{}
	for i, p := range opts.Paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var d DataDir
		switch {
		case inContainer != nil && inContainer[i].local == "":
			d = DataDir{Path: p, Mount: inContainer[i].mount, Databases: []Database{}, saved: true}
		case inContainer != nil:
			d = inspectPath(inContainer[i].local, table, false, false, opts.MaxDepth, seen)
			d.ContainerPath = p
		default:
			d = inspectPath(p, table, saved && !opts.InspectSaved, saved, opts.MaxDepth, seen)
		}
		if r.MountTable.Error != "" && d.Mount == nil {
			d.MountError = r.MountTable.Error
		}
		r.DataDirs = append(r.DataDirs, d)
	}

	probeWriters(ctx, r, opts.Writers)
	r.Findings = evaluate(r, opts.Writers)
	for i := range r.Findings {
		if slices.Contains(opts.Ignore, r.Findings[i].ID) {
			r.Findings[i].Level = LevelInfo
			r.Findings[i].Ignored = true
		}
	}
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	r.Verdict = verdictOf(r.Worst())
	r.FSClass = worstClass(r.DataDirs)
	r.JournalMode = "wal"
	if unsafeForWAL(r.FSClass) || r.FSClass == mounts.ClassUnknown {
		r.JournalMode = "delete"
	}
	return r, nil
}

// inspectPath builds the DataDir for one configured path. With elsewhere
// set the path belongs to the machine a saved mount table came from: it is
// classified but nothing here is read. saved says the mount table is a
// saved one (paths are not resolved on this machine). seen holds the device
// and inode of every database already reported, so a database reached
// through two paths is reported once.
func inspectPath(p string, table *mounts.Table, elsewhere, saved bool, maxDepth int, seen map[[2]uint64]bool) DataDir {
	d := DataDir{Path: p, saved: saved, Databases: []Database{}}
	var fi os.FileInfo
	var statErr error
	if !elsewhere {
		fi, statErr = os.Stat(p)
		d.Exists = statErr == nil
	}
	newDB := false
	if !elsewhere && errors.Is(statErr, os.ErrNotExist) && sqlitefile.LooksLikeDatabase(p) {
		// A database that does not exist yet, in a directory that does:
		// the application creates it on first start.
		if pfi, err := os.Stat(filepath.Dir(p)); err == nil && pfi.IsDir() {
			d.Exists, newDB = true, true
		}
	}

	// The path whose mount decides WAL safety: the directory that will hold
	// -wal and -shm. For a database file that is its parent directory.
	target := filepath.Clean(p)
	if !saved {
		res, err := mounts.ResolvePath(p)
		if err != nil {
			d.MountError = err.Error()
		} else {
			target = res
		}
	}
	d.Resolved = target
	if newDB || d.Exists && !fi.IsDir() {
		target = filepath.Dir(target)
	}
	if table != nil && d.MountError == "" {
		m, err := table.Classify(target)
		if err != nil {
			d.MountError = err.Error()
		} else {
			d.Mount = &m
		}
	}

	if !d.Exists {
		if statErr != nil && !errors.Is(statErr, os.ErrNotExist) {
			d.Errors = append(d.Errors, statErr.Error())
		}
		return d
	}
	d.Inspected = true
	if newDB {
		db, err := sqlitefile.Inspect(p)
		if err != nil {
			d.Errors = append(d.Errors, err.Error())
		}
		d.Databases = append(d.Databases, Database{Database: db, Writers: []Writer{}})
		return d
	}
	res, err := sqlitefile.Discover([]string{p}, sqlitefile.DiscoverOptions{MaxDepth: maxDepth})
	if err != nil {
		d.Errors = append(d.Errors, err.Error())
		return d
	}
	d.Errors = append(d.Errors, res.Errors...)
	for _, db := range res.Databases {
		key := [2]uint64{db.Dev, db.Ino}
		if db.Ino != 0 {
			if seen[key] {
				d.Duplicates++
				continue
			}
			seen[key] = true
		}
		d.Databases = append(d.Databases, Database{Database: db, Mount: fileMount(db.Path, d.Mount, table, saved), Writers: []Writer{}})
	}
	return d
}

// fileMount returns the mount holding the database file itself when it
// differs from the data directory's mount (a single-file bind mount), else
// nil.
func fileMount(path string, dirMount *mounts.Mount, table *mounts.Table, saved bool) *mounts.Mount {
	if table == nil || dirMount == nil {
		return nil
	}
	target := path
	if saved {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil
		}
		target = abs
	} else {
		res, err := mounts.ResolvePath(path)
		if err != nil {
			return nil
		}
		target = res
	}
	m, err := table.Classify(target)
	if err != nil || m.Mountpoint == dirMount.Mountpoint {
		return nil
	}
	return &m
}

// worstClass is the least safe class among the directories and their
// databases; unknown when any directory could not be classified.
func worstClass(dirs []DataDir) mounts.Class {
	worst := mounts.ClassLocal
	for _, d := range dirs {
		c := mounts.ClassUnknown
		if d.Mount != nil {
			c = d.Mount.Class
		}
		if riskier(c, worst) {
			worst = c
		}
		for _, db := range d.Databases {
			if db.Mount != nil && riskier(db.Mount.Class, worst) {
				worst = db.Mount.Class
			}
		}
	}
	return worst
}

// lookupPaths returns the resolved, absolute forms of paths and their parent
// directories: every path whose mount a check may look up.
func lookupPaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		res, err := mounts.ResolvePath(p)
		if err != nil {
			if res, err = filepath.Abs(p); err != nil {
				return []string{"/"}
			}
		}
		out = append(out, res, filepath.Dir(res))
	}
	return out
}
