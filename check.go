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
	table := opts.MountTable
	r.MountTable = MountTable{Source: opts.MountTableSource, Saved: saved}
	if table == nil {
		r.MountTable.Source = "/proc/self/mountinfo"
		t, err := mounts.ReadSelfFor(lookupPaths(opts.Paths))
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
	for _, p := range opts.Paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		d := inspectPath(p, table, saved, opts.MaxDepth, seen)
		if r.MountTable.Error != "" {
			d.MountError = "read mount table: " + r.MountTable.Error
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
	r.Verdict = verdictOf(r.Worst())
	r.FSClass = worstClass(r.DataDirs)
	r.JournalMode = "wal"
	if unsafeForWAL(r.FSClass) || r.FSClass == mounts.ClassUnknown {
		r.JournalMode = "delete"
	}
	return r, nil
}

// inspectPath builds the DataDir for one configured path. seen holds the
// device and inode of every database already reported, so a database
// reached through two paths is reported once.
func inspectPath(p string, table *mounts.Table, saved bool, maxDepth int, seen map[[2]uint64]bool) DataDir {
	d := DataDir{Path: p, saved: saved, Databases: []Database{}}
	fi, statErr := os.Stat(p)
	d.Exists = statErr == nil

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
	isFile := d.Exists && !fi.IsDir()
	if isFile {
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
	res, err := sqlitefile.Discover([]string{p}, sqlitefile.DiscoverOptions{MaxDepth: maxDepth})
	if err != nil {
		d.Errors = append(d.Errors, err.Error())
		return d
	}
	d.Inspected = true
	d.Errors = append(d.Errors, res.Errors...)
	for _, db := range res.Databases {
		key := [2]uint64{db.Dev, db.Ino}
		if db.Ino != 0 {
			if seen[key] {
				continue
			}
			seen[key] = true
		}
		d.Databases = append(d.Databases, Database{Database: db, Mount: fileMount(db.Path, d.Mount, table, saved)})
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
