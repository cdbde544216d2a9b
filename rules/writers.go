package rules

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/preflight-sqlite/preflight/internal/shell"

	"github.com/preflight-sqlite/preflight/policy"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/locks"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
	"github.com/preflight-sqlite/preflight/report"
)

// writerRules are the live-writer findings (table.go).
var writerRules = []rule{
	{
		Rule: Rule{WALSidecarUnlinked, LevelError, "a process holds a -wal or -shm that is no longer the file at that path (deleted or replaced): its writes go where other connections never look"}, scope: ScopeDatabase,
		match: func(s subject) (string, Level, bool) {
			if len(s.db.Unlinked) == 0 {
				return "", "", false
			}
			var who []string
			for _, u := range s.db.Unlinked {
				who = append(who, fmt.Sprintf("process %d (%s) holds %s by %s, now %q", u.PID, u.Comm, u.File, u.How, u.Link))
			}
			return fmt.Sprintf("%s: %s; that process writes to a file other connections of %s never see", filepath.Base(s.db.Path), strings.Join(who, "; "), filepath.Base(s.db.Path)), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Stop the process that holds the replaced file before anything else writes the database (its committed transactions are in the file it holds), then check the database: preflight check --deep (or sqlite3 DB 'PRAGMA integrity_check'). Never delete or replace -wal or -shm of a database in use."}
		},
	},
	{
		Rule: Rule{LiveWriterProcess, LevelInfo, "a process on this kernel has the database, its -wal or its -shm open"}, scope: ScopeDatabase,
		match: func(s subject) (string, Level, bool) {
			var who []string
			for _, w := range s.db.Writers {
				if w.Kind == report.WriterProcess {
					who = append(who, fmt.Sprintf("%s via %s", w.Name(), strings.Join(w.Files, ", ")))
				}
			}
			if len(who) == 0 {
				return "", "", false
			}
			return fmt.Sprintf("%s is open in %s", filepath.Base(s.db.Path), strings.Join(who, "; ")), "", true
		},
		remedy: stopWriters(report.WriterProcess),
	},
	{
		Rule: Rule{LiveWriterLock, LevelInfo, "a POSIX lock on the database or its -shm is held by a process this scan could not name (another container on the same kernel shows as a holder outside this PID namespace)"}, scope: ScopeDatabase,
		match: func(s subject) (string, Level, bool) {
			var who []string
			for _, w := range s.db.Writers {
				if w.Kind == report.WriterLock {
					who = append(who, w.Name())
				}
			}
			if len(who) == 0 {
				return "", "", false
			}
			return fmt.Sprintf("%s is locked by %s", filepath.Base(s.db.Path), strings.Join(who, "; ")), "", true
		},
		remedy: stopWriters(report.WriterLock),
	},
	{
		Rule: Rule{LiveWriterContainer, LevelInfo, "another container mounts this database's data read-write (Docker Engine API)"}, scope: ScopeDatabase,
		match: func(s subject) (string, Level, bool) {
			var who []string
			for _, w := range s.db.Writers {
				if w.Kind == report.WriterContainer {
					who = append(who, fmt.Sprintf("%s, %s", w.Name(), w.Relation))
				}
			}
			if len(who) == 0 {
				return "", "", false
			}
			return fmt.Sprintf("%s is reachable read-write from %s", filepath.Base(s.db.Path), strings.Join(who, "; ")), "", true
		},
		remedy: stopWriters(report.WriterContainer),
	},
	{
		Rule: Rule{StoppedContainerWriter, LevelInfo, "a stopped container (created, exited) mounts this database's data read-write: started again, it is a second writer (Docker Engine API)"}, scope: ScopeDatabase,
		match: func(s subject) (string, Level, bool) {
			var who []string
			for _, w := range s.db.Stopped {
				who = append(who, fmt.Sprintf("%s, %s, %s", w.Name(), w.Container.State, w.Relation))
			}
			if len(who) == 0 {
				return "", "", false
			}
			return fmt.Sprintf("%s is reachable read-write from stopped %s: once started it writes too", filepath.Base(s.db.Path), strings.Join(who, "; ")), "", true
		},
		remedy: func(s subject) []string {
			var out []string
			for _, w := range s.db.Stopped {
				if s.opt.Locks {
					// It may be the application that just crashed
					// holding the lock: never advise removing it here.
					out = append(out, "Stopped, "+w.Container.Name+" holds no lock: it is not what keeps the database locked now. If it is the application, start it again once nothing else holds the database's locks; if it is a second copy, keep it stopped or mount the data read-only in it.")
					continue
				}
				out = append(out, "Remove it if it is not needed (docker rm "+shell.Quote(w.Container.Name)+"), or mount the data read-only in it, before it starts beside the application.")
			}
			return out
		},
	},
	{
		Rule: Rule{MultipleWriters, LevelWarn, "more than one writer besides the application: error for WAL on a cross-vm, network or fuse filesystem (corruption is happening now), warn elsewhere (the pattern behind \"database is locked\")"}, scope: ScopeDatabase,
		match: func(s subject) (string, Level, bool) {
			n := writerCount(s.db) + remoteWriters(s) // Swarm tasks on other nodes (swarm.go)
			threshold := 2
			if s.opt.Starting {
				threshold = 1
			}
			if n < threshold {
				return "", "", false
			}
			lvl := LevelWarn
			what := "concurrent writers: expect \"database is locked\" errors"
			if s.db.JournalMode == sqlitefile.JournalWAL && policy.WALUnsafe(s.class()) {
				lvl = LevelError
				what = fmt.Sprintf("WAL on a %s filesystem with several writers: their WAL frames can interleave now", s.class())
			}
			besides := ""
			if s.opt.Starting {
				besides = " before the application has started"
			}
			writers := "writers"
			if n == 1 {
				writers = "writer"
			}
			return fmt.Sprintf("%s has %d %s%s (%s)", filepath.Base(s.db.Path), n, writers, besides, what), lvl, true
		},
		remedy: func(s subject) []string {
			return append(stopWriters("")(s), "Give each database one writing container or service; share data through the application, not the file.")
		},
	},
	{
		Rule: Rule{ActivityUnseenWriter, LevelError, "the database's files changed during the watch while no probe found a writer: a writer elsewhere (a host behind a VM share, another NFS client)"}, scope: ScopeDatabase,
		match: func(s subject) (string, Level, bool) {
			if s.db.Activity == nil || !s.db.Activity.Changed || len(s.db.Writers) > 0 {
				return "", "", false
			}
			return fmt.Sprintf("%s changed during a %s watch (%s) but no process, lock or container on this side has it open: a writer no probe can name is using it", filepath.Base(s.db.Path), s.db.Activity.Interval.Round(time.Millisecond), strings.Join(s.db.Activity.What, "; ")), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Find and stop the program that uses this database on the other side of the share (the macOS or Windows host, another machine mounting the same export); it must not be opened from two machines."}
		},
	},
	{
		Rule: Rule{WriteLockHeld, LevelWarn, "--watch: a process held the write lock (WAL write lock, or RESERVED, PENDING or EXCLUSIVE) longer than the busy timeout (5s; preflight locks --busy-timeout): every other writer waiting that long gets \"database is locked\""}, scope: ScopeDatabase,
		match: func(s subject) (string, Level, bool) {
			hs := longHolds(s)
			if len(hs) == 0 {
				return "", "", false
			}
			var what []string
			for _, h := range hs {
				held := "for " + h.Longest.Round(10*time.Millisecond).String()
				if h.AtEnd {
					held = "for at least " + h.Longest.Round(10*time.Millisecond).String() + ", still at the end of the watch"
				}
				what = append(what, fmt.Sprintf("%s %s %s", holderOf(s.db, h).Who(), locks.Held{Role: h.Role}, held))
			}
			return fmt.Sprintf("%s: %s (watched %s); a writer whose busy timeout is %s or less gets \"database is locked\" meanwhile", filepath.Base(s.db.Path), strings.Join(what, "; "), s.db.LockWatch.Window.Round(time.Millisecond), busyTimeout(s)), "", true
		},
		remedy: func(s subject) []string {
			var out []string
			for _, h := range longHolds(s) {
				stop := "or stop the container or host program that holds it (run preflight locks in the host's PID namespace, docker run --pid host, to name it)."
				if lh := holderOf(s.db, h); lh.Stop() != "" {
					stop = "or stop it" + lh.StopNote() + ": " + lh.Stop()
				}
				out = append(out, "Make the holder's transactions short: commit or roll back what it keeps open (a BEGIN IMMEDIATE or a write left uncommitted across slow work, a network call or user input), and batch writes into short transactions; "+stop)
			}
			return append(out, "Until then, raise the busy timeout of the other writers (PRAGMA busy_timeout, or the driver's setting) above the longest hold.")
		},
	},
	{
		Rule: Rule{LocksNotProbed, LevelWarn, "preflight locks: the lock probe of a database failed (a file it could not open, a filesystem whose lock queries do not answer), or its --watch did: who holds the database's locks is not known, not \"no lock held\""}, scope: ScopeDatabase,
		match: func(s subject) (string, Level, bool) {
			if !s.opt.Locks {
				return "", "", false
			}
			var why []string
			for _, b := range s.db.WriterProbes.Blind {
				if strings.HasPrefix(b, "locks: ") || strings.HasPrefix(b, "lock watch: ") {
					why = append(why, b)
				}
			}
			if s.db.WriterProbes.Locks != report.ProbeFailed && len(why) == 0 {
				return "", "", false
			}
			if len(why) == 0 {
				why = append(why, "locks: "+string(s.db.WriterProbes.Locks))
			}
			return fmt.Sprintf("%s: who holds its locks is not known (%s)", filepath.Base(s.db.Path), strings.Join(why, "; ")), "", true
		},
		remedy: func(s subject) []string {
			return []string{"Run preflight locks as root, or as the user that owns the database and its -shm, on the machine (or in the container) that has the database; on a network filesystem whose lock queries do not answer, check its lock service (NFS: rpc.statd and lockd on the server)."}
		},
	},
	{
		Rule: Rule{DockerUnreachable, LevelInfo, "the Docker Engine API did not answer (or not completely), so other containers could not be checked: reported when a database exists (error with --docker required, always)"}, scope: ScopeReport,
		match: func(s subject) (string, Level, bool) {
			d := s.r.Docker
			if d == nil {
				return "", "", false
			}
			required := s.opt.DockerRequired
			switch d.Status {
			case docker.StatusUnreachable, docker.StatusDenied, docker.StatusFailed:
			case docker.StatusNoDaemon:
				if !required {
					return "", "", false
				}
			default:
				return "", "", false
			}
			lvl := Level("")
			if required {
				lvl = LevelError
			} else if !anyDatabase(s.r) {
				return "", "", false // no database another container could be writing
			}
			return fmt.Sprintf("other containers not checked: Docker %s (%s)", d.Status, nonEmpty(d.Err, "no detail")), lvl, true
		},
		remedy: func(s subject) []string {
			return []string{"Give preflight a GET-only Docker API (a socket proxy), or pass --docker off."}
		},
	},
}

// stopWriters lists the command that stops each writer of kind (all kinds
// for "").
func stopWriters(kind report.WriterKind) func(s subject) []string {
	return func(s subject) []string {
		var out []string
		seen := map[string]bool{}
		for _, w := range s.db.Writers {
			if kind != "" && w.Kind != kind {
				continue
			}
			cmd := w.Stop()
			if seen[cmd] {
				continue
			}
			seen[cmd] = true
			if cmd == "" {
				out = append(out, "Stop the container or host program that has it open before converting or moving the database (run preflight in the host's PID namespace, docker run --pid host, to name it).")
				continue
			}
			out = append(out, "Stop it"+w.StopNote()+" before converting or moving the database: "+cmd)
		}
		return out
	}
}

// writerCount is how many distinct writers hold db: each process on this
// kernel (one in another container carries that container, which is then
// not listed again: see report.Writer.ContainerID), each other container,
// each other pod. Locks of holders outside our PID namespace (foreign)
// are most likely those containers' (with exactly one container they
// were given to it), so the larger of the two counts is taken.
func writerCount(db *Database) int {
	procs, containers, foreign, pods := 0, 0, 0, 0
	for _, w := range db.Writers {
		switch {
		case w.Kind == report.WriterPod:
			pods++ // another pod: its processes are never visible here
		case w.Kind == report.WriterContainer:
			containers++
		case w.PID > 0:
			procs++
		default:
			foreign++
		}
	}
	return procs + max(containers, foreign) + pods
}

// defaultBusyTimeout is the busy timeout write-lock-held measures
// against when Input.BusyTimeout is 0 (the 5 s most drivers default to).
const defaultBusyTimeout = 5 * time.Second

func busyTimeout(s subject) time.Duration {
	if s.opt.BusyTimeout > 0 {
		return s.opt.BusyTimeout
	}
	return defaultBusyTimeout
}

// longHolds are the writer-excluding holds of s.db's lock watch longer
// than the busy timeout, longest first.
func longHolds(s subject) []locks.Hold {
	w := s.db.LockWatch
	if w == nil {
		return nil
	}
	var out []locks.Hold
	for _, h := range w.Holds {
		if h.Role.Write() && h.Longest > busyTimeout(s) {
			out = append(out, h)
		}
	}
	return out
}

// holderOf is the lock holder of db that made hold h (one without a
// name when the holders no longer list it).
func holderOf(db *Database, h locks.Hold) report.LockHolder {
	for _, lh := range db.LockHolders {
		if lh.PID == h.PID && lh.ProcPID == h.ProcPID && lh.OtherNamespace == h.OtherNamespace {
			return lh
		}
	}
	return report.LockHolder{PID: h.PID, ProcPID: h.ProcPID, OtherNamespace: h.OtherNamespace, Invisible: h.OtherNamespace && h.ProcPID == 0}
}
