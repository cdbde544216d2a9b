package convert

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/preflight-sqlite/preflight/internal/fsbound"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/rules"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// ConvertedBefore reads the state file of each data path (the directory
// itself, or the directory of a database file) and returns the databases
// converted to DELETE at an earlier start, for
// preflight.WriterOptions.Converted. Unreadable state files are returned as
// errors alongside. Each read is bounded by 2 s and by ctx.
func ConvertedBefore(ctx context.Context, paths []string) ([]string, []error) {
	var out []string
	var errs []error
	for _, dir := range stateDirs(paths) {
		s, err := readStateBounded(ctx, dir, 2*time.Second)
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s: %w", filepath.Join(dir, StateFile), err))
			continue
		}
		out = append(out, s.ConvertedToDelete()...)
	}
	return out, errs
}

// readStateBounded is ReadState within timeout: the entrypoint must not
// hang on a data directory whose filesystem stopped answering (the check
// reports that directory as unresponsive). An ended ctx ends the wait.
func readStateBounded(ctx context.Context, dir string, timeout time.Duration) (State, error) {
	type result struct {
		s   State
		err error
	}
	r, ok := fsbound.Within(ctx, timeout, func() result {
		s, err := ReadState(dir)
		return result{s, err}
	})
	if !ok {
		return State{Schema: StateSchema}, fmt.Errorf("no answer within %s", timeout)
	}
	return r.s, r.err
}

// CanonicalPath is the form database paths take in the state file and in
// preflight.WriterOptions.Converted: absolute, symlinks resolved, so the
// same database matches however its data directory was spelled.
func CanonicalPath(p string) string {
	var db preflight.Database
	db.Path = p
	if r, err := mounts.ResolvePath(p); err == nil {
		db.ResolvedPath = r
	}
	return db.Canonical()
}

func stateDirs(paths []string) []string {
	var out []string
	for _, p := range paths {
		out = append(out, stateDir(p))
	}
	return out
}

// stateDir is the directory holding the state file for data path p.
func stateDir(p string) string {
	p = filepath.Clean(p)
	if sqlitefile.LooksLikeDatabase(p) {
		return filepath.Dir(p)
	}
	return p
}

// Policy is `preflight run --on-unsafe convert`: every WAL database of rep
// with a finding whose rule asks for a conversion (rules.ActConvert: the
// wal-on-* errors of every class the policy calls unsafe for WAL; not
// ignored) is converted to DELETE by Run, with check's options. Choosing
// the policy is the operator's confirmation (Confirmed), and probes that
// could not run are noted rather than refused (AllowUnverified): a writer
// that was seen, files that change during the watch, Litestream and WAL
// frames that would be lost still refuse. Each conversion, and each failed
// attempt that made a backup, is recorded in its data directory's state
// file; errors writing it are returned in stateErrs. A database is not
// converted again (refused, no backup made) when an earlier start
// converted it and it is in WAL mode again ("reenabled"), or when an
// earlier start's attempt failed and its backup is still there
// ("failed-before"): the entrypoint makes at most one backup per database
// per attempt it records. An attempt cut short by ctx (a signal) is
// recorded as interrupted, not failed: the next start converts again and
// reuses its backup while that holds the files as they are
// (Options.ReuseBackup). A nil Result and nil error mean there was
// nothing to convert.
func Policy(ctx context.Context, rep *preflight.Report, check preflight.Options) (res *Result, stateErrs []error, err error) {
	var paths []string
	dirOf := map[string]string{}
	for _, d := range rep.DataDirs {
		for _, db := range d.Databases {
			dirOf[db.Path] = stateDir(d.Path)
		}
	}
	var again []Database
	states := map[string]State{}
	reuse := map[string]string{}
	for _, f := range rep.Findings {
		if !rules.Wants(f, rules.ActConvert) || f.Ignored {
			continue
		}
		r, refused, backup := priorAttempt(ctx, f.Path, dirOf[f.Path], check.Writers.Converted, states)
		if refused {
			again = append(again, Database{Path: f.Path, Before: ToWAL, Status: StatusRefused, Refusals: []Refusal{r}})
			continue
		}
		if backup != "" {
			reuse[CanonicalPath(f.Path)] = backup
		}
		paths = append(paths, f.Path)
	}
	if len(paths) == 0 {
		if len(again) > 0 {
			return &Result{Schema: Schema, Databases: again}, nil, nil
		}
		return nil, nil, nil
	}
	check.Writers.Starting = false
	res, err = Run(ctx, Options{Check: check, Paths: paths, To: ToDelete, Confirmed: true, AllowUnverified: true, Entrypoint: true, ReuseBackup: reuse})
	if res == nil {
		return nil, nil, err
	}
	// Recorded also when Run stopped early (ctx canceled): what it did
	// to the databases before is on disk.
	res.Databases = append(again, res.Databases...)
	if err != nil {
		return res, recordAttempts(res, dirOf), err
	}
	return res, recordAttempts(res, dirOf), nil
}

// recordAttempts writes each conversion of res, and each failed attempt
// that made a backup, to the state file of its data directory (dirOf, or
// the database's directory).
func recordAttempts(res *Result, dirOf map[string]string) []error {
	records := map[string][]Conversion{}
	var order []string
	for _, d := range res.Databases {
		failed := d.Status == StatusFailed && d.Backup != nil
		if d.Status != StatusConverted && !failed {
			continue
		}
		cv := Conversion{Path: CanonicalPath(d.Path), From: ToWAL, To: ToDelete, At: time.Now().UTC()}
		if d.Backup != nil {
			cv.Backup = CanonicalPath(d.Backup.Dir)
		}
		if d.Verified != nil && d.Verified.CheckResult != "ok" && !failed {
			cv.Verified = d.Verified.Check + " " + d.Verified.CheckResult
		}
		switch {
		case failed && d.Interrupted:
			cv.Interrupted = d.Error
		case failed:
			cv.Failed = d.Error
		}
		dir := dirOf[d.Path]
		if dir == "" {
			dir = filepath.Dir(d.Path)
		}
		if _, ok := records[dir]; !ok {
			order = append(order, dir)
		}
		records[dir] = append(records[dir], cv)
	}
	var errs []error
	for _, dir := range order {
		if err := Record(dir, records[dir]...); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
