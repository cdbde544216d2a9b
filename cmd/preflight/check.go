package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// CheckFlags are the flags shared by check and run.
type CheckFlags struct {
	DataDir  []string `name:"data-dir" env:"PREFLIGHT_DATA_DIR" sep:"," placeholder:"DIR" help:"Data directory or database file to check (repeatable; env: comma-separated list)."`
	Ignore   []string `name:"ignore" env:"PREFLIGHT_IGNORE" sep:"," placeholder:"ID" help:"Demote finding ID to info (repeatable)."`
	MaxDepth int      `name:"max-depth" env:"PREFLIGHT_MAX_DEPTH" default:"2" help:"How many directory levels below a data directory to search for databases."`

	Docker        string        `name:"docker" enum:"auto,off,required" default:"auto" env:"PREFLIGHT_DOCKER" help:"Look for other containers using the data through the Docker Engine API: auto (when reachable), off, or required (an engine that does not answer is an error)."`
	DockerTimeout time.Duration `name:"docker-timeout" default:"2s" env:"PREFLIGHT_DOCKER_TIMEOUT" help:"Longest wait for the Docker Engine API."`
}

// options builds preflight.Options from the flags, reading the saved mount
// table when --mountinfo is set.
func (f CheckFlags) options(g *Globals, paths []string) (preflight.Options, error) {
	opts := preflight.Options{
		Paths:    append(append([]string{}, paths...), f.DataDir...),
		MaxDepth: f.MaxDepth,
		Ignore:   f.Ignore,
		Writers: preflight.WriterOptions{
			Docker: docker.Options{Mode: docker.Mode(f.Docker), Timeout: f.DockerTimeout},
		},
	}
	if f.DockerTimeout <= 0 {
		return opts, usageError(fmt.Errorf("--docker-timeout %s: must be positive", f.DockerTimeout))
	}
	if len(opts.Paths) == 0 {
		return opts, usageError(errors.New("no data directory given"), "pass a PATH or --data-dir, or set PREFLIGHT_DATA_DIR")
	}
	if f.MaxDepth < 0 {
		return opts, usageError(fmt.Errorf("--max-depth %d: must not be negative", f.MaxDepth))
	}
	if g.Mountinfo != "" {
		t, err := mounts.ReadFile(g.Mountinfo)
		if err != nil {
			return opts, usageError(fmt.Errorf("read mount table: %w", err))
		}
		opts.MountTable = t
		opts.MountTableSource = g.Mountinfo
	}
	return opts, nil
}

// CheckCmd is `preflight check`.
type CheckCmd struct {
	Paths []string `arg:"" optional:"" name:"path" help:"Data directory or database file (default: --data-dir, PREFLIGHT_DATA_DIR)."`
	CheckFlags
	Format string        `name:"format" enum:"text,json" default:"text" env:"PREFLIGHT_FORMAT" help:"Output format: text or json (schema preflight/v1)."`
	FailOn string        `name:"fail-on" enum:"warn,error,never" default:"warn" env:"PREFLIGHT_FAIL_ON" help:"Lowest level that makes the exit code non-zero: warn, error or never."`
	Watch  time.Duration `name:"watch" default:"0s" env:"PREFLIGHT_WATCH" help:"Watch each database's -wal and -shm this long for changes no probe can attribute (a writer behind a VM share); 0 is off."`
}

// Run checks the paths, renders the report and exits by the verdict.
func (c *CheckCmd) Run(g *Globals) error {
	opts, err := c.options(g, c.Paths)
	if err != nil {
		return err
	}
	if c.Watch < 0 {
		return usageError(fmt.Errorf("--watch %s: must not be negative", c.Watch))
	}
	opts.Writers.Watch = c.Watch
	r, err := preflight.Check(context.Background(), opts)
	if err != nil {
		if errors.Is(err, preflight.ErrRelativePath) {
			return usageError(err)
		}
		return err
	}
	if err := render(g.stdout, r, c.Format); err != nil {
		return err
	}
	if code := verdictCode(r.Verdict, c.FailOn); code != exitOK {
		return &exitError{code: code}
	}
	return nil
}

func render(w io.Writer, r *preflight.Report, format string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return renderText(w, r)
}
