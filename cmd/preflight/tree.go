package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/preflight-sqlite/preflight/rules"
)

// ranError is what a command's Run returned (nil included): anything
// else out of cobra is a usage error.
type ranError struct{ err error }

func (e *ranError) Error() string { return fmt.Sprint(e.err) }

// helpWidth is the width --help wraps its text at.
const helpWidth = 80

// newRoot is the cobra tree of the commands tree, bound to g. Help is
// plain Go (writeHelp), not cobra's templates.
func newRoot(g *Globals, tree []command) *cobra.Command {
	global := &cmdSpec{}
	readSpec(reflect.ValueOf(g), global)
	root := &cobra.Command{Use: "preflight", Short: "Keep SQLite databases safe inside containers.", Long: description, Example: rootExample,
		Args: cobra.ArbitraryArgs, SilenceErrors: true, SilenceUsage: true}
	// cobra's own help [COMMAND] and completion bash|zsh|fish|powershell
	// commands; help prints through the help function below.
	specs := map[*cobra.Command]*cmdSpec{root: {}}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		err = flagError(c, err)
		return &parseError{errors.New(suggestFlag(err.Error(), global, specs[c]))}
	})
	root.SetOut(g.stdout)
	root.SetErr(g.stderr)
	pf := root.PersistentFlags()
	pf.BoolP("help", "h", false, "Show context-sensitive help.")
	for _, fs := range global.flags {
		fs.register(pf)
	}
	root.RunE = func(c *cobra.Command, args []string) error {
		if g.Version {
			return printVersion(g)
		}
		if len(args) > 0 {
			return fmt.Errorf("unexpected argument %s", args[0])
		}
		return fmt.Errorf(`expected one of "check", "mounts", "run", "writers", "convert", ...`)
	}
	var add func(parent *cobra.Command, cm command)
	add = func(parent *cobra.Command, cm command) {
		model := cm.make()
		spec := &cmdSpec{}
		readSpec(reflect.ValueOf(model), spec)
		help := cm.help
		if hidden(cm.name) {
			help = notBuilt + help
		}
		use := cm.name
		for _, a := range spec.args {
			use += " " + argUsage(a)
		}
		c := &cobra.Command{Use: use, Short: help, Example: examples[strings.TrimPrefix(parent.CommandPath()+" "+cm.name, "preflight ")], Hidden: hidden(cm.name), Args: cobra.ArbitraryArgs}
		for _, fs := range spec.flags {
			fs.register(c.Flags())
		}
		passthrough := false
		for _, a := range spec.args {
			if a.passthrough {
				c.Flags().SetInterspersed(false)
				passthrough = true
			}
		}
		c.RunE = func(c *cobra.Command, args []string) error {
			if g.Version {
				return printVersion(g)
			}
			if err := dashValue(c.Flags(), c.Name(), passthrough, g.args); err != nil {
				return err
			}
			if err := global.bind(c.Flags(), nil); err != nil {
				return err
			}
			if err := spec.bind(c.Flags(), args); err != nil {
				return err
			}
			g.flags = c.Flags()
			return &ranError{model.Run(g)}
		}
		specs[c] = spec
		parent.AddCommand(c)
		for _, sub := range cm.sub {
			add(c, sub)
		}
	}
	for _, cm := range tree {
		add(root, cm)
	}
	root.SetHelpFunc(func(c *cobra.Command, _ []string) {
		writeHelp(c.OutOrStdout(), c, global, specs[c])
	})
	// cobra's help command prints the root's help for a topic it does not
	// know, and exits 0: that is a usage error here.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if ex, ok := builtinExamples[c.Name()]; ok {
			c.Example = ex
		}
		if c.Name() == "help" {
			c.Args = func(_ *cobra.Command, args []string) error {
				if _, rest, err := root.Find(args); err != nil || len(rest) > 0 {
					return fmt.Errorf("unknown help topic %q", strings.Join(args, " "))
				}
				return nil
			}
		}
	}
	return root
}

func printVersion(g *Globals) error {
	fmt.Fprintln(g.stdout, "preflight "+buildVersion())
	return &ranError{}
}

// writeHelp prints the help of command c: usage, description, arguments,
// flags (the global ones first) and, for the root, the commands.
func writeHelp(w io.Writer, c *cobra.Command, global, spec *cmdSpec) {
	if spec == nil {
		spec = &cmdSpec{}
	}
	var b strings.Builder
	if !c.HasParent() {
		b.WriteString("Usage: preflight <command> [flags]\n\n" + description + "\n")
	} else {
		usage := "Usage: " + c.CommandPath()
		for _, a := range spec.args {
			usage += " " + argUsage(a)
		}
		b.WriteString(usage + " [flags]\n\n" + wrap(c.Short, 0, helpWidth) + "\n")
	}
	if len(spec.args) > 0 {
		var rows [][2]string
		for _, a := range spec.args {
			rows = append(rows, [2]string{argUsage(a), a.help})
		}
		b.WriteString("\nArguments:\n" + table(rows))
	}
	if c.Example != "" {
		b.WriteString("\nExamples:\n")
		for _, line := range strings.Split(c.Example, "\n") {
			b.WriteString("  " + line + "\n")
		}
	}
	help := [2]string{"-h, --help", "Show context-sensitive help."}
	if !c.HasParent() {
		rows := [][2]string{help}
		for _, fs := range global.flags {
			rows = append(rows, flagRow(fs))
		}
		b.WriteString("\nFlags:\n" + table(rows))
	} else {
		// The command's own flags first, then the Docker and Kubernetes
		// probes' and the global ones, each group in its own table.
		groups := map[string][][2]string{}
		for _, fs := range spec.flags {
			groups[flagGroups[fs.name]] = append(groups[flagGroups[fs.name]], flagRow(fs))
		}
		groups["Global flags"] = [][2]string{help}
		for _, fs := range global.flags {
			groups["Global flags"] = append(groups["Global flags"], flagRow(fs))
		}
		width := 0
		for _, rows := range groups {
			width = max(width, columnWidth(rows))
		}
		for _, g := range []string{"", "Docker flags", "Kubernetes flags", "Global flags"} {
			if len(groups[g]) > 0 {
				b.WriteString("\n" + cmp.Or(g, "Flags") + ":\n" + tableAt(groups[g], width))
			}
		}
	}
	b.WriteString("\nEvery flag is also an environment variable, $PREFLIGHT_ and its name\n" +
		"(--fail-on: $PREFLIGHT_FAIL_ON); a flag given wins. Others are named above.\n")
	if c.HasParent() && c.HasAvailableSubCommands() {
		var rows [][2]string
		for _, sub := range c.Commands() {
			if !sub.Hidden {
				rows = append(rows, [2]string{sub.Name(), sub.Short})
			}
		}
		b.WriteString("\nCommands:\n" + table(rows))
	}
	if c.HasParent() {
		page := "preflight_" + strings.ReplaceAll(c.CommandPath()[len("preflight "):], " ", "_")
		b.WriteString("Every flag in full: " + rules.DocsURL + "reference/cli/" + page + "/\n")
	}
	if !c.HasParent() {
		var rows [][2]string
		for _, sub := range c.Commands() {
			if !sub.Hidden {
				rows = append(rows, [2]string{sub.Name(), sub.Short})
			}
		}
		// cobra sorts commands; --help lists them in declaration order.
		rows = declarationOrder(rows)
		b.WriteString("\nCommands:\n" + table(rows))
		b.WriteString("\nRun \"preflight <command> --help\" for more information on a command.\n")
	}
	io.WriteString(w, b.String())
}

// declarationOrder sorts rows by the order of commands, then cobra's own
// (help, completion).
func declarationOrder(rows [][2]string) [][2]string {
	var out [][2]string
	for _, cm := range commands {
		for _, r := range rows {
			if r[0] == cm.name {
				out = append(out, r)
			}
		}
	}
	for _, r := range rows {
		if !slices.ContainsFunc(commands, func(c command) bool { return c.name == r[0] }) {
			out = append(out, r)
		}
	}
	return out
}

func argUsage(a *argSpec) string {
	s := "<" + a.name + ">"
	if a.repeat {
		s += " ..."
	}
	if a.optional {
		s = "[" + s + "]"
	}
	return s
}

// flagRow is the left column (-s, --name=VALUE) and the help of a flag,
// with its default and environment variables.
func flagRow(fs *flagSpec) [2]string {
	left := "    "
	if fs.short != "" {
		left = "-" + fs.short + ", "
	}
	left += "--" + fs.name
	_, isBool := fs.value.(*boolValue)
	_, isSlice := fs.value.(*sliceValue)
	switch {
	case isBool:
	case fs.def != "" || fs.enum != nil:
		left += "=" + strconv.Quote(fs.def)
	default:
		left += "=" + fs.placeholder
		if isSlice && fs.value.(*sliceValue).sep != "none" {
			left += fs.value.(*sliceValue).sep + "..."
		}
	}
	help := cmp.Or(fs.brief, fs.help)
	if !slices.Equal(fs.envs, []string{derivedEnv(fs.name)}) && len(fs.envs) > 0 {
		envs := make([]string, len(fs.envs))
		for i, e := range fs.envs {
			envs[i] = "$" + e
		}
		env := " (" + strings.Join(envs, ", ") + ")"
		if strings.HasSuffix(help, ".") {
			help = strings.TrimSuffix(help, ".") + env + "."
		} else {
			help += env
		}
	}
	return [2]string{left, help}
}

// flagGroups names the help group of a flag that is not the command's
// own: the Docker and Kubernetes probes' flags, which several commands
// share. A flag not named here is listed under "Flags:".
var flagGroups = map[string]string{
	"docker": "Docker flags", "docker-timeout": "Docker flags",
	"kube": "Kubernetes flags", "kube-timeout": "Kubernetes flags", "kubeconfig": "Kubernetes flags", "pod": "Kubernetes flags",
}

// derivedEnv is the variable a flag reads without an env tag:
// PREFLIGHT_ and its name in capitals, - as _.
func derivedEnv(name string) string {
	return "PREFLIGHT_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// table lays rows out in two columns, the second wrapped at helpWidth.
func table(rows [][2]string) string { return tableAt(rows, columnWidth(rows)) }

// columnWidth is the width of the rows' first column.
func columnWidth(rows [][2]string) int {
	width := 0
	for _, r := range rows {
		width = max(width, len(r[0]))
	}
	return width
}

// tableAt is table with the first column width columns wide.
func tableAt(rows [][2]string, width int) string {
	col := 2 + width + 4
	var b strings.Builder
	for _, r := range rows {
		b.WriteString("  " + r[0] + strings.Repeat(" ", col-2-len(r[0])))
		b.WriteString(wrap(r[1], col, helpWidth) + "\n")
	}
	return b.String()
}

// wrap breaks text into lines of at most width columns, each but the
// first indented by indent spaces (the first starts at column indent).
func wrap(text string, indent, width int) string {
	var b strings.Builder
	n := indent
	for i, word := range strings.Fields(text) {
		if i > 0 && n+1+len(word) > width {
			b.WriteString("\n" + strings.Repeat(" ", indent))
			n = indent
		} else if i > 0 {
			b.WriteString(" ")
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}
