package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// LocksCmd is `preflight locks`.
type LocksCmd struct {
	Paths         []string
	Watch         time.Duration
	BusyTimeout   time.Duration
	Format        string
	FailOn        string
	Docker        string
	DockerTimeout time.Duration
	FSTimeout     time.Duration
}

func newLocksCmd(g *Globals) *cobra.Command {
	c := &LocksCmd{}
	cmd := &cobra.Command{
		Use:   "locks PATH...",
		Short: "Answer \"database is locked\": who holds SQLite's locks, how long.",
		Long: wrap("Answer \"database is locked\": who holds which of SQLite's locks on each database (PID, command, user, container), and with --watch for how long. "+
			"Each PATH is a database file or data directory.", 0, helpWidth),
		Example: examples["locks"],
		Args:    cobra.MinimumNArgs(1),
		RunE:    func(_ *cobra.Command, args []string) error { c.Paths = args; return c.Run(g) },
	}
	fs := cmd.Flags()
	fs.DurationVar(&c.Watch, "watch", 0, "Sample the locks this long and say how long each write lock was held; 0 is one look.")
	fs.DurationVar(&c.BusyTimeout, "busy-timeout", 5*time.Second, "With --watch, a write lock held longer than this is the finding write-lock-held: what another writer with this busy timeout sees as \"database is locked\".")
	enumVar(fs, &c.Format, "format", "text", "Output format: text or json (the check report, schema preflight/v1).", "text", "json")
	enumVar(fs, &c.FailOn, "fail-on", "warn", "Lowest level that makes the exit code non-zero: warn, error or never.", "warn", "error", "never")
	enumVar(fs, &c.Docker, "docker", "auto", "Name the container of each holder through the Docker Engine API: auto (when reachable), off, or required.", "auto", "off", "required")
	fs.DurationVar(&c.DockerTimeout, "docker-timeout", 2*time.Second, "Longest wait for the Docker Engine API.")
	fs.DurationVar(&c.FSTimeout, "fs-timeout", 5*time.Second, "Longest wait for stat, readdir and one process's /proc entries.")
	flagDoc(fs, "fs-timeout", "Longest wait for a path to answer a stat and a directory read (a stuck FUSE daemon or NFS server), for one process's /proc entries (a process holding a file on such a filesystem), and for each lock query (a filesystem that forwards locks to a server that is stuck): one that does not answer makes the answer unsure, not empty.")
	flagGroup(fs, dockerFlags, "docker", "docker-timeout")
	return cmd
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
	if c.DockerTimeout <= 0 || c.FSTimeout <= 0 {
		return usageError(fmt.Errorf("--docker-timeout %s --fs-timeout %s: must be positive", c.DockerTimeout, c.FSTimeout))
	}
	r, err := preflight.Check(g.ctx, preflight.Options{
		Paths: trimAll(c.Paths), Locks: true, FSTimeout: c.FSTimeout,
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
