package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/preflight-sqlite/preflight/internal/fsbound"
	"github.com/preflight-sqlite/preflight/migrate"
	"github.com/preflight-sqlite/preflight/probe/docker"
)

// MigrateCmd is `preflight migrate`.
type MigrateCmd struct {
	From            string
	To              string
	Format          string
	Docker          string
	DockerTimeout   time.Duration
	AllowUnverified bool
	FSTimeout       time.Duration
}

func newMigrateCmd(g *Globals) *cobra.Command {
	c := &MigrateCmd{}
	cmd := &cobra.Command{
		Use:   "migrate --from DIR --to DIR",
		Short: "Copy a data directory to another (a bind to a named volume).",
		Long: wrap("Copy a data directory to another (a bind to a named volume) so nothing is lost: "+
			"databases through SQLite, other files with owner, mode and times, then verify.", 0, helpWidth),
		Example: examples["migrate"],
		Args:    cobra.NoArgs,
		RunE:    func(*cobra.Command, []string) error { return c.Run(g) },
	}
	fs := cmd.Flags()
	// PREFLIGHT_MIGRATE_*, not PREFLIGHT_FROM and PREFLIGHT_TO: convert's
	// --to is a journal mode, and PREFLIGHT_TO is that.
	fs.StringVar(&c.From, "from", "", "Data directory `DIR` to copy (the old bind mount).")
	envFor(fs, "from", "PREFLIGHT_MIGRATE_FROM")
	fs.StringVar(&c.To, "to", "", "Empty destination directory `DIR` (the new named volume).")
	envFor(fs, "to", "PREFLIGHT_MIGRATE_TO")
	_ = cmd.MarkFlagRequired("from")
	_ = cmd.MarkFlagRequired("to")
	enumVar(fs, &c.Format, "format", "text", "Output format: text or json (schema preflight-migrate/v1).", "text", "json")
	enumVar(fs, &c.Docker, "docker", "auto", "Also look for other containers using the data through the Docker Engine API: auto or off.", "auto", "off")
	fs.DurationVar(&c.DockerTimeout, "docker-timeout", 2*time.Second, "Longest wait for the Docker Engine API.")
	flagGroup(fs, dockerFlags, "docker", "docker-timeout")
	boolVar(fs, &c.AllowUnverified, "allow-unverified", "", "Copy even when a live-writer probe could not run (no Docker API in a one-shot container): you stopped every user of the data yourself. A writer that was seen is never overridden.")
	fs.DurationVar(&c.FSTimeout, "fs-timeout", 5*time.Second, "Longest wait for --from and --to to answer a first stat and directory read (a stuck FUSE daemon or NFS server): refused if they do not.")
	return cmd
}

// Run copies and verifies. Exit codes: 0 copied and verified, 3 refused (a
// live writer, a destination that is not empty) or the copy did not
// verify, 1 the copy failed, 2 bad usage; stopped by SIGINT or SIGTERM,
// 128 plus the signal's number (MainContext).
func (c *MigrateCmd) Run(g *Globals) error {
	if err := needsLinux("migrate", false); err != nil {
		return err
	}
	res, err := migrate.Run(g.ctx, migrate.Options{From: c.From, To: c.To,
		Docker: docker.Options{Mode: docker.Mode(c.Docker), Timeout: c.DockerTimeout}, AllowUnverified: c.AllowUnverified,
		FSTimeout: c.FSTimeout})
	if c.Format == "json" {
		res.Guard = nil
		if werr := writeJSON(g, res); werr != nil {
			return werr
		}
	} else if err == nil || errors.Is(err, migrate.ErrVerify) {
		var b strings.Builder
		for _, d := range res.Databases {
			var rows []string
			for _, t := range d.Tables {
				rows = append(rows, fmt.Sprintf("%s %d/%d", t.Name, t.From, t.To))
			}
			fmt.Fprintf(&b, "database %s (%s): quick_check %s, rows %s, verified %v\n", d.Path, d.JournalMode, d.QuickCheck, strings.Join(rows, ", "), d.Verified)
		}
		for _, f := range res.Files {
			fmt.Fprintf(&b, "file %s: %d bytes, sha256 %s, verified %v\n", f.Path, f.Size, f.SHA256[:12], f.Verified)
		}
		for _, s := range res.Skipped {
			fmt.Fprintf(&b, "skipped %s\n", s)
		}
		fmt.Fprintf(&b, "copied %s to %s: %s, %s, %s, %s\n", c.From, c.To, count(len(res.Databases), "database", "databases"), count(len(res.Files), "file", "files"), count(res.Dirs, "directory", "directories"), count(res.Symlinks, "symlink", "symlinks"))
		if _, werr := fmt.Fprint(g.stdout, b.String()); werr != nil {
			return werr
		}
	}
	switch {
	case err == nil:
		return nil
	case g.ctx.Err() != nil:
		return migrateInterrupted(g, c, res, err)
	case errors.Is(err, migrate.ErrBadInput):
		return usageError(err)
	case errors.Is(err, migrate.ErrRefused) && errors.Is(err, fsbound.ErrNoAnswer):
		return &exitError{code: exitUnsafe, err: err, hints: []string{"--from or --to is on a filesystem that does not answer (a stuck FUSE daemon, a network server that is down): find what it is on with findmnt -T PATH, fix that, and run migrate again"}}
	case errors.Is(err, migrate.ErrInUse):
		return &exitError{code: exitUnsafe, err: err, hints: []string{"stop every container and program that uses the data (docker compose stop SERVICE), then run migrate again; nothing was copied"}}
	case errors.Is(err, migrate.ErrNotEmpty):
		return &exitError{code: exitUnsafe, err: err, hints: []string{"give an empty --to, or a path that does not exist yet (migrate creates it); nothing was copied"}}
	case errors.Is(err, migrate.ErrSourceState):
		return &exitError{code: exitUnsafe, err: err, hints: []string{"recover the database named above first (preflight check --deep says what is wrong with it), then run migrate again; nothing was read or copied"}}
	case errors.Is(err, migrate.ErrRefused):
		return &exitError{code: exitUnsafe, err: err, hints: []string{"--to changed while migrate opened it: make sure nothing else creates, moves or replaces it, then run migrate again; nothing was copied"}}
	case errors.Is(err, migrate.ErrVerify):
		return &exitError{code: exitUnsafe, err: err, hints: []string{"the source is unchanged; keep using it and report the files named above"}}
	}
	return err
}

// migrateInterrupted is the error of a migrate that ctx (a signal) stopped:
// the source is as it was, and the destination holds nothing or an
// incomplete copy, marked.
func migrateInterrupted(g *Globals, c *MigrateCmd, res *migrate.Result, err error) error {
	msg := fmt.Errorf("migrate: interrupted (%v) before anything was copied; %s is untouched: %w", context.Cause(g.ctx), c.From, err)
	if res != nil && res.Incomplete != "" {
		msg = fmt.Errorf("migrate: interrupted (%v); %s is untouched, %s holds an incomplete copy (marked by %s): %w", context.Cause(g.ctx), c.From, c.To, res.Incomplete, err)
		return &exitError{code: exitInternal, err: msg, hints: []string{"empty " + c.To + " (every entry, the marker included), then run migrate again"}}
	}
	return &exitError{code: exitInternal, err: msg}
}
