package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/preflight-sqlite/preflight/rules"
)

// ExplainCmd is `preflight explain`: a finding's entry of the reference
// in the terminal.
type ExplainCmd struct {
	ID string
}

func newExplainCmd(g *Globals) *cobra.Command {
	c := &ExplainCmd{}
	return &cobra.Command{
		Use:   "explain ID",
		Short: "Print what a finding ID means, its remedy and its docs page.",
		Long: wrap("Print what a finding ID means, its remedy and its page on the docs site. "+
			"ID is a finding ID or convert refusal reason (as in check's output, --ignore, SARIF's ruleId).", 0, helpWidth),
		Example: examples["explain"],
		Args:    cobra.ExactArgs(1),
		RunE:    func(_ *cobra.Command, args []string) error { c.ID = args[0]; return c.Run(g) },
	}
}

// Run prints the meaning, level, commands, remedy and docs link of c.ID,
// from the rules table; an unknown ID is a usage error naming close ones.
func (c *ExplainCmd) Run(g *Globals) error {
	e, ok := rules.Lookup(rules.ID(c.ID))
	if !ok {
		return usageError(fmt.Errorf("unknown finding ID %q", c.ID), closeIDs(c.ID)...)
	}
	var b strings.Builder
	kind := "finding"
	if e.Refusal {
		kind = "convert refusal"
	}
	fmt.Fprintf(&b, "%s (%s, %s)\n\n%s\n", e.ID, kind, e.Level, wrap(e.Doc, 0, helpWidth))
	fmt.Fprintf(&b, "\nRaised by: %s\n", strings.Join(e.Commands, ", "))
	if len(e.Remedy) > 0 {
		fmt.Fprintf(&b, "\n%s\n", wrap("Remedy, as printed for an example ("+rules.ExampleCase+"):", 0, helpWidth))
		for _, r := range e.Remedy {
			b.WriteString("  - " + wrap(r, 4, helpWidth) + "\n")
		}
	}
	fmt.Fprintf(&b, "\nDocs: %s\n", e.URL())
	_, err := fmt.Fprint(g.stdout, b.String())
	return err
}

// closeIDs are hints naming the IDs that id is part of, starts, or is at
// most three edits from; or how to list them all.
func closeIDs(id string) []string {
	var near []string
	for _, e := range rules.Entries() {
		s := string(e.ID)
		if (strings.Contains(s, id) || levenshtein(s, id) <= 3) && !slices.Contains(near, s) {
			near = append(near, s)
		}
	}
	if len(near) == 0 || len(near) > 8 {
		return []string{"every ID is listed at " + rules.DocsURL + "reference/findings/"}
	}
	return []string{"did you mean " + strings.Join(near, ", ") + "?"}
}
