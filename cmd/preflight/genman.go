//go:build gendocs

// The man pages of the command tree, for the release archives: a build with
// -tags gendocs adds the hidden command gen-man, which .goreleaser.yaml's
// before hook runs. The release binary does not link cobra/doc.

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

func init() { buildCommands = append(buildCommands, newGenManCmd) }

// newGenManCmd is `preflight gen-man --date UNIX DIR`: one page per
// command, in section 1 (preflight.1, preflight-check.1, ...), written
// into DIR, which it creates; *.1 files already there are removed first,
// so a page of a command that is gone does not linger. --date (seconds
// since 1970, the commit's time in a release) dates every page, so one
// commit gives the same pages.
func newGenManCmd(*Globals) *cobra.Command {
	var date int64
	c := &cobra.Command{
		Use:    "gen-man DIR",
		Short:  "Write the man pages of the command tree into DIR.",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			dir := args[0]
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			old, _ := filepath.Glob(filepath.Join(dir, "*.1"))
			for _, p := range old {
				if err := os.Remove(p); err != nil {
					return err
				}
			}
			when := time.Unix(date, 0).UTC()
			header := &doc.GenManHeader{Section: "1", Date: &when, Source: "preflight " + buildVersion(), Manual: "preflight manual"}
			if err := doc.GenManTree(docTree(), header, dir); err != nil {
				return fmt.Errorf("man pages: %w", err)
			}
			return nil
		},
	}
	c.Flags().Int64Var(&date, "date", 0, "Date every page `UNIX` (seconds since 1970).")
	noEnv(c.Flags(), "date")
	return c
}
