package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// LocksCmd is `preflight locks`.
type LocksCmd struct {
	Paths         []string      `arg:"" name:"path" help:"Database file or data directory."`
	Watch         time.Duration `name:"watch" default:"0s" env:"PREFLIGHT_WATCH" help:"Sample the locks this long and say how long each write lock was held; 0 is one look."`
	BusyTimeout   time.Duration `name:"busy-timeout" default:"5s" env:"PREFLIGHT_BUSY_TIMEOUT" help:"With --watch, a write lock held longer than this is the finding write-lock-held: what another writer with this busy timeout sees as \"database is locked\"."`
	Format        string        `name:"format" enum:"text,json" default:"text" env:"PREFLIGHT_FORMAT" help:"Output format: text or json (the check report, schema preflight/v1)."`
	FailOn        string        `name:"fail-on" enum:"warn,error,never" default:"warn" env:"PREFLIGHT_FAIL_ON" help:"Lowest level that makes the exit code non-zero: warn, error or never."`
	Docker        string        `name:"docker" enum:"auto,off,required" default:"auto" env:"PREFLIGHT_DOCKER" help:"Name the container of each holder through the Docker Engine API: auto (when reachable), off, or required."`
	DockerTimeout time.Duration `name:"docker-timeout" default:"2s" env:"PREFLIGHT_DOCKER_TIMEOUT" help:"Longest wait for the Docker Engine API."`
}

// Run answers "database is locked": who holds which of SQLite's locks on
// each database, and with --watch for how long. It exits by the verdict,
// as check does.
func (c *LocksCmd) Run(g *Globals) error {
	if err := needsLinux("locks", false); err != nil {
		return err
	}
	if g.Mountinfo != "" {
		return usageError(errors.New("locks reads this machine's locks: --mountinfo does not apply"), "run preflight locks on the machine (or in the container) that has the database")
	}
	if c.Watch < 0 || c.BusyTimeout <= 0 {
		return usageError(fmt.Errorf("--watch %s --busy-timeout %s: the watch must not be negative, the busy timeout must be positive", c.Watch, c.BusyTimeout))
	}
	if c.DockerTimeout <= 0 {
		return usageError(fmt.Errorf("--docker-timeout %s: must be positive", c.DockerTimeout))
	}
	r, err := preflight.Check(g.ctx, preflight.Options{
		Paths: trimAll(c.Paths), Locks: true,
		Writers: preflight.WriterOptions{
			Watch: c.Watch, BusyTimeout: c.BusyTimeout,
			Docker: docker.Options{Mode: docker.Mode(c.Docker), Timeout: c.DockerTimeout},
		},
	})
	if err := g.ctx.Err(); err != nil {
		return fmt.Errorf("locks: interrupted: %w", context.Cause(g.ctx))
	}
	if err != nil {
		if errors.Is(err, preflight.ErrRelativePath) {
			return usageError(err)
		}
		return err
	}
	if c.Format == "json" {
		if err := render(g.stdout, r, "json"); err != nil {
			return err
		}
	} else if err := renderLocks(g, r); err != nil {
		return err
	}
	if code := verdictCode(r.Verdict, c.FailOn); code != exitOK {
		return &exitError{code: code}
	}
	return nil
}

// renderLocks prints each database with its lock holders, the lock watch,
// then the findings and the verdict.
func renderLocks(g *Globals, r *preflight.Report) error {
	var b strings.Builder
	n := 0
	for _, d := range r.DataDirs {
		for _, db := range d.Databases {
			if db.New || db.NotSQLite {
				continue
			}
			n++
			fmt.Fprintf(&b, "%s  %s  %s\n", oneLine(db.Path), dbMode(db), dbSizes(db))
			switch p := db.WriterProbes; {
			case p.Locks != preflight.ProbeRan:
				fmt.Fprintf(&b, "    locks not probed (%s)\n", p.Locks)
			case len(db.LockHolders) == 0 && db.JournalMode == sqlitefile.JournalWAL:
				fmt.Fprintf(&b, "    no lock held: no connection on this kernel has it open\n")
			case len(db.LockHolders) == 0:
				fmt.Fprintf(&b, "    no lock held (an idle rollback-mode connection holds none between transactions)\n")
			}
			renderLockHolders(&b, db)
		}
	}
	if n == 0 {
		fmt.Fprintf(&b, "no database found\n")
	}
	renderFindings(&b, r.Findings, oneLine)
	fmt.Fprintf(&b, "\nverdict: %s\n", r.Verdict)
	_, err := fmt.Fprint(g.stdout, b.String())
	return err
}
