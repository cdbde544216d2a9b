package preflight

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/report"
	"github.com/preflight-sqlite/preflight/rules"
)

// ErrComposeInput is returned (wrapped) by CheckCompose when the compose
// project cannot be loaded: a missing or invalid file, a bad
// interpolation, an unknown profile. Callers treat it as bad input.
var ErrComposeInput = errors.New("bad compose project")

// ComposeOptions configure CheckCompose.
type ComposeOptions struct {
	// Load selects the project as docker compose's flags do.
	Load compose.LoadOptions
	// DataDirs are --data-dir values: TARGET or SERVICE:TARGET.
	DataDirs []string
	// Catalogue holds user entries (--catalogue), matched before the
	// built-in ones; nil for none.
	Catalogue *compose.Catalogue
	// Platform is --platform: "desktop", "linux", or "" to ask the engine.
	Platform string
	// Docker configures the engine query (kind of engine; with Live, the
	// project's running containers). Mode off asks nothing.
	Docker docker.Options
	// Live lists the project's running containers (--live).
	Live bool
	// Ignore lists finding IDs to demote to info.
	Ignore []string
	// NoDisk skips reading bind sources and the host mount table.
	NoDisk bool
	// FSTimeout bounds how long a bind source may take to answer (see
	// compose.Options.FSTimeout); zero means 5 s.
	FSTimeout time.Duration
	// HostMounts is a mount table to classify bind sources with; nil
	// reads /proc/self/mountinfo.
	HostMounts *mounts.Table
	// Plan configures the printed migration commands.
	Plan compose.PlanOptions
}

// ComposeResult is CheckCompose's answer: the report, and the edited
// files for the proposed rewrites (unchanged files are not listed).
type ComposeResult struct {
	Report *Report
	Edits  []compose.FileEdit
}

// CheckCompose loads a compose project as Compose does, finds the mounts
// that hold SQLite data, judges them with the rules table (the compose
// rules: bind-on-desktop, bind-on-unsafe-fs, volume-on-network,
// volume-is-bind, shared-writer, no-volume) into the same Report as Check,
// and proposes a named volume for every risky bind mount of a data
// directory (Report.Compose.Rewrites, with the edited files in Edits). It
// never writes anything.
func CheckCompose(ctx context.Context, opts ComposeOptions) (*ComposeResult, error) {
	l, err := compose.Load(ctx, opts.Load)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrComposeInput, err)
	}
	r := &Report{Schema: Schema, Probes: map[string]report.ProbeStatus{"compose": report.ProbeRan}, DataDirs: []DataDir{}}

	var engine *docker.Engine
	var live *docker.ProjectResult
	switch {
	case opts.Live:
		res := docker.Project(ctx, l.Project.Name, opts.Docker)
		live, engine = &res, res.Engine
		r.Probes["docker"] = report.ProbeStatus(res.Status)
	case opts.Docker.Mode != docker.ModeOff:
		res := docker.EngineOf(ctx, opts.Docker)
		engine = res.Engine
		r.Probes["docker"] = report.ProbeStatus(res.Status)
	default:
		r.Probes["docker"] = report.ProbeOff
	}
	r.Engine = engine
	if opts.Live && (live == nil || live.Status != docker.StatusRan) {
		st, why := "", ""
		if live != nil {
			st, why = live.Status, live.Err
		}
		return nil, fmt.Errorf("list the running containers of compose project %s: docker %s: %s", l.Project.Name, st, why)
	}

	cat := compose.Builtin()
	if opts.Catalogue != nil {
		cat = opts.Catalogue.Merge(cat)
	}
	a, err := compose.Analyze(ctx, l, compose.Options{
		DataDirs: opts.DataDirs, Catalogue: cat, Platform: opts.Platform, Engine: engine,
		HostMounts: opts.HostMounts, NoDisk: opts.NoDisk, FSTimeout: opts.FSTimeout, Live: live,
	})
	if err != nil {
		return nil, err
	}
	r.Compose = a
	r.MountTable = MountTable{Source: a.HostMounts}
	r.Probes["mounts"] = report.ProbeRan
	r.Probes["sqlitefile"] = report.ProbeRan
	if opts.NoDisk {
		r.Probes["mounts"], r.Probes["sqlitefile"] = report.ProbeOff, report.ProbeOff
	} else if a.HostMounts != "/proc/self/mountinfo" && a.HostMounts != "given" {
		r.Probes["mounts"] = report.ProbeFailed
	}

	// Judge, plan the rewrites of the risky binds, judge again so the
	// remedies name the volumes the plan chose.
	edits, err := planRewrites(a, judge(r, rules.Input{}, opts.Ignore), opts.Plan)
	if err != nil {
		return nil, err
	}
	r.Findings = judge(r, rules.Input{}, opts.Ignore)
	for i := range a.Mounts {
		a.Mounts[i].Findings = nil
		for _, f := range r.Findings {
			if f.Path == a.Mounts[i].Key() && !slices.Contains(a.Mounts[i].Findings, string(f.ID)) {
				a.Mounts[i].Findings = append(a.Mounts[i].Findings, string(f.ID))
			}
		}
	}
	r.Verdict = report.VerdictOf(r.Worst())
	r.JournalMode, r.FSClass = rules.JournalMode(r)
	var changed []compose.FileEdit
	for _, e := range edits {
		if e.Changed() {
			changed = append(changed, e)
		}
	}
	return &ComposeResult{Report: r, Edits: changed}, nil
}

// planRewrites proposes a named volume for every bind mount of a data
// directory that findings call risky (rules.ActRewriteBind, not ignored,
// above info), and for the binds that must move with it (Analysis.Plan).
func planRewrites(a *compose.Analysis, findings []Finding, plan compose.PlanOptions) ([]compose.FileEdit, error) {
	risky := map[int][]string{}
	var which []int
	for i := range a.Mounts {
		m := &a.Mounts[i]
		for _, f := range findings {
			if f.Path != m.Key() || f.Ignored || f.Level == LevelInfo {
				continue
			}
			if rules.Wants(f, rules.ActRewriteBind) && m.Type == "bind" {
				risky[i] = append(risky[i], string(f.ID))
			}
		}
	}
	// A possible data directory (a well-known target, no SQLite seen) is
	// reported but not rewritten, unless a surer one shares its host
	// directory (then all of them move, or the services would split): a
	// guess moved into a volume could hide a directory of other files.
	sure := map[string]bool{}
	for i := range a.Mounts {
		if len(risky[i]) > 0 && a.Mounts[i].Confidence != compose.Possible {
			sure[filepath.Clean(a.Mounts[i].Source)] = true
		}
	}
	moving := map[string]bool{}
	for i := range a.Mounts {
		if len(risky[i]) > 0 && (a.Mounts[i].Confidence != compose.Possible || sure[filepath.Clean(a.Mounts[i].Source)]) {
			which = append(which, i)
			moving[filepath.Clean(a.Mounts[i].Source)] = true
		} else {
			delete(risky, i)
		}
	}
	// The volume is named after the service whose data it is, not after
	// one that mounts it too (a chown init service).
	sort.SliceStable(which, func(x, y int) bool { return a.Mounts[which[x]].Via == "" && a.Mounts[which[y]].Via != "" })
	// Every other bind of a host directory that moves, read-only ones
	// included, moves with it to the same volume: left on the old
	// directory it would read stale data after the migration.
	for i := range a.Mounts {
		m := &a.Mounts[i]
		if m.Type == "bind" && risky[i] == nil && moving[filepath.Clean(m.Source)] {
			which = append(which, i)
		}
	}
	return a.Plan(which, risky, plan)
}

// judge applies the rules table to r (rules.Evaluate) and demotes the
// findings whose ID ignore lists to info; never nil.
func judge(r *Report, in rules.Input, ignore []string) []Finding {
	fs := rules.Evaluate(r, in)
	for i := range fs {
		if slices.Contains(ignore, string(fs[i].ID)) {
			fs[i].Level = LevelInfo
			fs[i].Ignored = true
		}
	}
	if fs == nil {
		fs = []Finding{}
	}
	return fs
}
