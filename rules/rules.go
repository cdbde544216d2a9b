// Package rules is the one place preflight judges: it turns the facts of a
// report.Report (what the probes found) into findings, each with a stable
// ID (ids.go), a level, a message and a remedy, through one table
// (table.go) whose order is written down there. check, run, convert's
// guard and compose --check all evaluate this table, so they cannot
// disagree; callers ask it questions (Has, Wants) instead of comparing
// finding IDs.
//
// A rule file written for the root package in the old style (a []rule
// of entries with Rule{ID, Level, Doc}, a scope, match and remedy) ports
// here by changing its package clause, replacing the string IDs with
// constants of ids.go and naming the slice in table.go: the aliases below
// keep its type names (Report, DataDir, Database, Level, ...) as they were.
package rules

import (
	"fmt"
	"time"

	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/manifest"
	"github.com/preflight-sqlite/preflight/policy"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
	"github.com/preflight-sqlite/preflight/report"
)

// The report's types under their short names, for the rule files.
type (
	Report   = report.Report
	DataDir  = report.DataDir
	Database = report.Database
	Finding  = report.Finding
	Level    = report.Level
	ID       = report.ID
)

// Levels, as report's.
const (
	LevelInfo  = report.LevelInfo
	LevelWarn  = report.LevelWarn
	LevelError = report.LevelError
)

// Scope says what a rule is evaluated over.
type Scope int

// Scopes. Evaluate runs the report rules first, then per data directory
// the directory and database rules in table order, then the compose rules
// per service mount; convert rules run only in Convert (convert.go).
const (
	// ScopeDataDir rules run once per data directory (subject.db nil).
	ScopeDataDir Scope = iota
	// ScopeDatabase rules run once per database of each data directory.
	ScopeDatabase
	// ScopeReport rules run once per report, with dir and db nil.
	ScopeReport
	// ScopeCompose rules run once per compose service mount
	// (Report.Compose.Mounts), with cm set.
	ScopeCompose
	// ScopeManifest rules run once per workload volume of
	// Report.Manifests (preflight kube), with km set.
	ScopeManifest
	// ScopeManifestKey rules run once per duplicate key of the manifests
	// (Report.Manifests.DuplicateKeys), with kd set, before the
	// ScopeManifest rules.
	ScopeManifestKey
	// ScopeConvert rules run once per database convert is about to
	// change (ConvertFacts); each finding is a refusal, its ID the
	// refusal's reason.
	ScopeConvert
)

// Action says what a caller does with a finding of a rule, besides
// reporting it; callers ask with Wants or Has, never by ID.
type Action int

// Actions.
const (
	// ActNone: report only.
	ActNone Action = iota
	// ActConvert: the entrypoint's --on-unsafe convert converts the
	// database (a WAL database on a filesystem where WAL is unsafe).
	ActConvert
	// ActRewriteBind: compose proposes a named volume for the bind mount
	// (compose --diff, --write) and prints its migration.
	ActRewriteBind
	// ActAllowUnverified: a convert refusal that --allow-unverified (and
	// the entrypoint's policy) turns into a note (RefusalWants): the
	// command convert prints to go on carries the flag.
	ActAllowUnverified
	// ActRefuseStart: run does not start the application at error level,
	// whatever --on-unsafe says (starting it could destroy the only copy
	// of the data); Rule.StartRefusal says why.
	ActRefuseStart
)

// Input is what the rules need besides the report: how the check was
// asked for.
type Input struct {
	// Starting says the application has not started yet (preflight run):
	// every writer found is one besides the application.
	Starting bool
	// Converted lists the databases converted to DELETE at an earlier
	// start (absolute, symlinks resolved).
	Converted []string
	// DockerRequired is --docker required; KubeRequired --kube required.
	DockerRequired, KubeRequired bool
	// JournalModeExported is run --export-env: the application is told
	// the journal mode.
	JournalModeExported bool
	// BusyTimeout is the busy timeout write-lock-held measures lock holds
	// against; 0 is 5s.
	BusyTimeout time.Duration
	// Locks says the report answers preflight locks ("database is
	// locked": who holds it), whose advice is about the holders.
	Locks bool
}

// subject is what a rule looks at: a data directory, and one of its
// databases for database rules (nil for directory rules).
type subject struct {
	r   *Report
	opt Input
	dir *DataDir
	db  *Database
	// cm is the compose service mount for compose rules (nil otherwise).
	cm *compose.Mount
	// km is the workload volume for manifest rules (nil otherwise).
	km *manifest.Mount
	// kd is the duplicate manifest key for manifest key rules (nil
	// otherwise).
	kd *manifest.DuplicateKey
	// cv holds convert's facts for convert rules (nil otherwise).
	cv *ConvertFacts
	// exported is Input.JournalModeExported.
	exported bool
}

// class is the filesystem class that decides WAL safety for the subject:
// for a database on a single-file bind mount, the worse of the file's and
// the directory's (its -wal and -shm live in the directory).
func (s subject) class() mounts.Class {
	c := mounts.ClassUnknown
	if s.dir.Mount != nil {
		c = s.dir.Mount.Class
	}
	if s.db != nil && s.db.Mount != nil && policy.Riskier(s.db.Mount.Class, c) {
		c = s.db.Mount.Class
	}
	if k, ok := kubeClass(s); ok && policy.Riskier(k, c) {
		c = k // the PV or StorageClass says riskier than the mount table
	}
	return c
}

// mount is the mount that decided class().
func (s subject) mount() *mounts.Mount {
	if s.db != nil && s.db.Mount != nil && (s.dir.Mount == nil || policy.Riskier(s.db.Mount.Class, s.dir.Mount.Class)) {
		return s.db.Mount
	}
	return s.dir.Mount
}

func (s subject) path() string {
	switch {
	case s.cm != nil:
		return s.cm.Key()
	case s.km != nil:
		return s.r.Manifests.Workloads[s.km.Workload].Key()
	case s.kd != nil:
		return s.kd.Object
	case s.db != nil:
		return s.db.Path
	case s.dir != nil:
		return s.dir.Path
	}
	return ""
}

// WALClass is the filesystem class that decides WAL safety for db in d:
// the riskier of the directory's mount and the database's own (a
// single-file bind mount, or a symlink to another filesystem); unknown
// when the directory could not be classified.
func WALClass(d *DataDir, db *Database) mounts.Class { return subject{dir: d, db: db}.class() }

// Rule describes one finding: its stable ID, default level and meaning.
type Rule struct {
	ID    ID     `json:"id"`
	Level Level  `json:"level"`
	Doc   string `json:"doc"`
}

type rule struct {
	Rule
	scope Scope
	// commands, when set, are the only commands that raise the finding
	// (the reference's "raised by"), in place of its scope's
	// (scopeCommands): a rule that needs facts only one of them has.
	commands []string
	// action is what a caller does with the finding (Wants, Has).
	action Action
	// startRefusal is the reason run logs when an ActRefuseStart finding
	// stops the start.
	startRefusal string
	// stage is when a convert rule is evaluated (ScopeConvert only).
	stage ConvertStage
	// match returns the message and the level (zero: the rule's level) when
	// the rule applies.
	match func(s subject) (msg string, lvl Level, ok bool)
	// each returns every match of a convert rule (ScopeConvert only, in
	// place of match and remedy).
	each func(s subject) []found
	// remedy lists the fixes.
	remedy func(s subject) []string
}

// Rules lists every finding ID of check, run and compose with its default
// level and meaning, in the order the rules table holds them (convert's
// refusals: Refusals). An ID appears once.
func Rules() []Rule {
	var out []Rule
	seen := map[ID]bool{}
	for _, r := range table {
		if seen[r.ID] || r.scope == ScopeConvert {
			continue
		}
		seen[r.ID] = true
		out = append(out, r.Rule)
	}
	return out
}

// Evaluate runs every report, data directory, database and compose rule
// over r, in table order (see Scope), and returns the findings; nil when
// none applies.
func Evaluate(r *Report, in Input) []Finding {
	var out []Finding
	base := subject{r: r, opt: in, exported: in.JournalModeExported}
	for _, rl := range table {
		if rl.scope == ScopeReport {
			out = appendMatch(out, rl, base)
		}
	}
	for i := range r.DataDirs {
		d := &r.DataDirs[i]
		for _, rl := range table {
			switch rl.scope {
			case ScopeDataDir:
				s := base
				s.dir = d
				out = appendMatch(out, rl, s)
			case ScopeDatabase:
				for j := range d.Databases {
					s := base
					s.dir, s.db = d, &d.Databases[j]
					out = appendMatch(out, rl, s)
				}
			}
		}
	}
	if r.Compose != nil {
		for i := range r.Compose.Mounts {
			s := base
			s.cm = &r.Compose.Mounts[i]
			out = appendScope(out, ScopeCompose, s)
		}
	}
	if r.Manifests != nil {
		out = append(out, evaluateManifests(r, base)...)
	}
	return out
}

// appendScope appends the findings of every rule of scope over s, in
// table order.
func appendScope(out []Finding, scope Scope, s subject) []Finding {
	for _, rl := range table {
		if rl.scope == scope {
			out = appendMatch(out, rl, s)
		}
	}
	return out
}

func appendMatch(out []Finding, r rule, s subject) []Finding {
	msg, lvl, ok := r.match(s)
	if !ok {
		return out
	}
	if lvl == "" {
		lvl = r.Level
	}
	return append(out, Finding{ID: r.ID, Level: lvl, Path: s.path(), Message: msg, Remedy: r.remedy(s)})
}

// byID is the first table entry of each ID outside the convert scope.
var byID = func() map[ID]*rule {
	m := map[ID]*rule{}
	for i := range table {
		if m[table[i].ID] == nil && table[i].scope != ScopeConvert {
			m[table[i].ID] = &table[i]
		}
	}
	return m
}()

// Wants reports whether f's rule asks for action a.
func Wants(f Finding, a Action) bool {
	r := byID[f.ID]
	return r != nil && r.action == a
}

// Has reports whether r holds a finding about path whose rule asks for
// action a, at error level when errorOnly.
func Has(r *Report, path string, a Action, errorOnly bool) bool {
	for _, f := range r.Findings {
		if f.Path == path && Wants(f, a) && (!errorOnly || f.Level == LevelError) {
			return true
		}
	}
	return false
}

// StartRefusal is why run does not start the application for f (an
// ActRefuseStart finding at error level); ok is false for any other.
func StartRefusal(f Finding) (why string, ok bool) {
	r := byID[f.ID]
	if r == nil || r.action != ActRefuseStart || f.Level != LevelError {
		return "", false
	}
	return r.startRefusal, true
}

// anyDatabase reports whether a data directory holds a database that
// exists (not new, not a file that is not SQLite).
func anyDatabase(r *Report) bool {
	for _, d := range r.DataDirs {
		for _, db := range d.Databases {
			if !db.New && !db.NotSQLite {
				return true
			}
		}
	}
	return false
}

func irregularSidecars(db *sqlitefile.Database) []string { return report.IrregularSidecars(db) }

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// count is "1 frame" or "N frames": n with the noun's number right.
func count(n int, one, many string) string {
	return fmt.Sprintf("%d %s", n, plural(n, one, many))
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
