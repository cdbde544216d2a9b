package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// MountsCmd is `preflight mounts`.
type MountsCmd struct {
	Path   string
	Format string
}

func newMountsCmd(g *Globals) *cobra.Command {
	c := &MountsCmd{}
	cmd := &cobra.Command{
		Use:     "mounts [PATH]",
		Short:   "List every mount with its class, or the mount holding PATH.",
		Example: examples["mounts"],
		Args:    cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				c.Path = args[0]
			}
			return c.Run(g)
		},
	}
	enumVar(cmd.Flags(), &c.Format, "format", "text", "Output format: text or json.", "text", "json")
	return cmd
}

// Run lists and classifies mounts.
func (c *MountsCmd) Run(g *Globals) error {
	if err := needsLinux("mounts", g.Mountinfo != ""); err != nil {
		return err
	}
	var (
		t   *mounts.Table
		err error
	)
	if g.Mountinfo != "" {
		t, err = mounts.ReadFile(g.Mountinfo)
		if err != nil {
			return mountTableError(fmt.Errorf("read mount table: %w", err))
		}
	} else if t, err = mounts.ReadSelf(); err != nil {
		return fmt.Errorf("read mount table: %w", err)
	}
	var list []mounts.Mount
	if c.Path != "" {
		p := filepath.Clean(c.Path)
		if g.Mountinfo == "" {
			if p, err = mounts.ResolvePath(c.Path); err != nil {
				return usageError(fmt.Errorf("resolve %s: %w", c.Path, err))
			}
		} else if !filepath.IsAbs(p) {
			return usageError(fmt.Errorf("%s: path must be absolute with --mountinfo", c.Path))
		}
		m, err := t.Classify(p)
		if err != nil {
			return fmt.Errorf("classify %s: %w", c.Path, err)
		}
		if c.Format == "json" {
			return writeJSON(g, m)
		}
		list = []mounts.Mount{m}
	} else {
		for _, info := range t.Mounts {
			list = append(list, t.ClassifyMount(info))
		}
		if c.Format == "json" {
			return writeJSON(g, list)
		}
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MOUNTPOINT\tFSTYPE\tSOURCE\tCLASS\tPLATFORM")
	for _, m := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Mountpoint, m.FSType, m.Source, m.Class, m.Platform)
	}
	if c.Path != "" && len(list) == 1 {
		fmt.Fprintf(tw, "\n%s\n", list[0].Reason)
	}
	return tw.Flush()
}

func writeJSON(g *Globals, v any) error {
	enc := json.NewEncoder(g.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// mountTableError is the usage error for a --mountinfo file that could not
// be read, with a hint on the formats it takes when none of it parsed.
func mountTableError(err error) error {
	if errors.Is(err, mounts.ErrNoMounts) {
		return usageError(err, "--mountinfo takes a saved /proc/PID/mountinfo (cat /proc/self/mountinfo > FILE), /proc/mounts, or the output of mount or findmnt; the format is detected")
	}
	return usageError(err)
}
