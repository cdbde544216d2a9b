package preflight

import (
	"github.com/preflight-sqlite/preflight/policy"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/report"
	"github.com/preflight-sqlite/preflight/rules"
)

// Schema names the version of the JSON report (report.Schema).
const Schema = report.Schema

// The report model lives in package report, the judgement in package
// rules; these names keep the API of this package as it was.
type (
	Level        = report.Level
	Verdict      = report.Verdict
	Finding      = report.Finding
	MountTable   = report.MountTable
	Database     = report.Database
	DataDir      = report.DataDir
	Report       = report.Report
	Health       = report.Health
	Writer       = report.Writer
	WriterProbes = report.WriterProbes
	WriterKind   = report.WriterKind
	ProbeStatus  = report.ProbeStatus
	Rule         = rules.Rule
	KubePatch    = report.KubePatch
)

// Levels and verdicts (see report).
const (
	LevelInfo     = report.LevelInfo
	LevelWarn     = report.LevelWarn
	LevelError    = report.LevelError
	VerdictOK     = report.VerdictOK
	VerdictWarn   = report.VerdictWarn
	VerdictUnsafe = report.VerdictUnsafe

	WriterProcess   = report.WriterProcess
	WriterLock      = report.WriterLock
	WriterContainer = report.WriterContainer

	ProbeRan         = report.ProbeRan
	ProbeOff         = report.ProbeOff
	ProbeFailed      = report.ProbeFailed
	ProbeUnsure      = report.ProbeUnsure
	ProbeUnsupported = report.ProbeUnsupported
	ProbeQuiet       = report.ProbeQuiet
	ProbeChanged     = report.ProbeChanged
)

// Rules lists every finding ID with its default level and meaning, in the
// order of the rules table (rules.Rules).
func Rules() []Rule { return rules.Rules() }

// Riskier reports whether filesystem class a is less safe for WAL than b
// (policy.Riskier).
func Riskier(a, b mounts.Class) bool { return policy.Riskier(a, b) }

// WALClass is the filesystem class that decides WAL safety for db in d
// (rules.WALClass).
func WALClass(d *DataDir, db *Database) mounts.Class { return rules.WALClass(d, db) }

// DamagedDB reports a file without a valid SQLite header that is a SQLite
// database by every other sign (rules.DamagedDB).
func DamagedDB(db *Database) bool { return rules.DamagedDB(db) }

// IrregularSidecars reports the sidecars of db that are symlinks or not
// regular files, described for a message; nil when there are none.
func IrregularSidecars(db *Database) []string { return db.OddSidecars() }
