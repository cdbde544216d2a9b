package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/bundle"
)

// BundleCmd is `preflight bundle`.
type BundleCmd struct {
	Paths []string
	CheckFlags
	Output string
	Redact bool
}

func newBundleCmd(g *Globals) *cobra.Command {
	c := &BundleCmd{}
	cmd := &cobra.Command{
		Use:   "bundle [PATH]... -o FILE",
		Short: "Write a tar.gz for a bug report (no row data).",
		Long: wrap("Write a tar.gz for a bug report: version, engine, mount table, check --deep (JSON and text), each database's header and WAL summary, lock holders, compose labels; "+
			"no row data (--redact: no host, user or outside paths). "+
			"Each PATH is a data directory or database file; given PATHs replace PREFLIGHT_DATA_DIR (default: --data-dir, PREFLIGHT_DATA_DIR).", 0, helpWidth),
		Example: examples["bundle"],
		Args:    cobra.ArbitraryArgs,
		RunE:    func(_ *cobra.Command, args []string) error { c.Paths = args; return c.Run(g) },
	}
	fs := cmd.Flags()
	c.CheckFlags.AddFlags(cmd)
	fs.StringVarP(&c.Output, "output", "o", "", "Write the tar.gz archive to `FILE` (- for standard output).")
	_ = cmd.MarkFlagRequired("output")
	boolVar(fs, &c.Redact, "redact", "", "Replace host names, user names and paths outside the data directories with placeholders (host-1, user-1, /redacted-path-1), the same in every file.")
	return cmd
}

// Run writes the bug-report bundle: check --deep for the paths, the mount
// table, each database's headers, the lock holders, the engine and this
// container's compose labels. It exits 0 once the archive is written,
// whatever the report found (the report is inside).
func (c *BundleCmd) Run(g *Globals) error {
	if err := needsLinux("bundle", g.Mountinfo != ""); err != nil {
		return err
	}
	opts, err := c.options(g, c.Paths)
	if err != nil {
		return err
	}
	opts.Health.Deep = true
	r, err := preflight.Check(g.ctx, opts)
	if err := g.ctx.Err(); err != nil {
		return fmt.Errorf("bundle: interrupted: %w", context.Cause(g.ctx))
	}
	if err != nil {
		if errors.Is(err, preflight.ErrRelativePath) {
			return usageError(err)
		}
		return err
	}
	var js, text bytes.Buffer
	if err := render(&js, r, "json"); err != nil {
		return err
	}
	if err := renderText(&text, r); err != nil {
		return err
	}
	in := bundle.Input{Version: buildVersion(), Report: r, ReportJSON: js.Bytes(), ReportText: text.Bytes(), Redact: c.Redact, MountInfo: g.Mountinfo}
	if c.Output == "-" {
		_, err := bundle.Write(g.stdout, in)
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(c.Output), ".preflight-bundle-*")
	if errors.Is(err, fs.ErrPermission) {
		return &exitError{code: exitInternal, err: fmt.Errorf("bundle: %w", err), hints: []string{fmt.Sprintf(
			"preflight runs as uid %d, which may not write to %s (the image runs as 65532): in a container, run it as the directory's owner with --user \"$(id -u):$(id -g)\"",
			os.Getuid(), filepath.Dir(c.Output))}}
	}
	if err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	defer os.Remove(tmp.Name())
	m, err := bundle.Write(tmp, in)
	if err == nil {
		err = tmp.Close()
	} else {
		tmp.Close()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), c.Output)
	}
	if err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	fmt.Fprintf(g.stderr, "preflight: wrote %s (%d files; verdict %s); attach it to the issue\n", c.Output, len(m.Files), r.Verdict)
	return nil
}
