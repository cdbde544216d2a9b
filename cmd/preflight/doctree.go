package main

import (
	"bytes"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// docTree is the whole command tree as its reference pages and man pages
// show it: every command of this build, cobra's help and completion, and
// each flag with its full help (docAnnotation) followed by the PREFLIGHT_*
// variables it is read from. The tree is bound to a Globals that writes
// nowhere; it is for rendering, not for running.
func docTree() *cobra.Command {
	root := newRoot(&Globals{stdout: new(bytes.Buffer), stderr: new(bytes.Buffer)}, commands)
	root.DisableAutoGenTag = true
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(addEnv)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return root
}

// addEnv makes the flag's help its full one and appends its variables, once.
func addEnv(f *pflag.Flag) {
	if d := f.Annotations[docAnnotation]; len(d) > 0 {
		f.Usage = d[0]
	}
	if envs := f.Annotations[envAnnotation]; len(envs) > 0 && !strings.Contains(f.Usage, "(env ") {
		f.Usage += " (env " + strings.Join(envs, ", ") + ")"
	}
}
