package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/preflight-sqlite/preflight/rules"
)

// The command line is cobra's: each command is a *cobra.Command that its
// newXCmd builds in its own file, with its flags declared on it through
// pflag (CheckFlags.AddFlags declares those check, run, convert, recover
// and bundle share). This file holds what cobra and pflag leave to a
// program:
//   - the environment: a flag the command line did not give is set from
//     its variables (PREFLIGHT_<NAME> unless envFor or noEnv says
//     otherwise) through pflag's Set, so that it is Changed and cobra's
//     required flags and mutually exclusive groups count it;
//   - boolean words (yes, no), closed sets (enumVar), and a refusal of
//     flag values that look like flags (dashValue);
//   - the usage: cobra's sections, with a command's own flags first and
//     the Docker and Kubernetes flags (flagGroup) in their own groups.

// Flag annotations (pflag.Flag.Annotations) this file reads.
const (
	// envAnnotation lists the variables a flag is read from, the first set
	// winning; empty for a flag that has none.
	envAnnotation = "preflight_env"
	// fromEnvAnnotation names the variable that set a flag (setFromEnv).
	fromEnvAnnotation = "preflight_from_env"
	// groupAnnotation is the title of a flag's group in the usage.
	groupAnnotation = "preflight_group"
	// docAnnotation is a flag's full help, for its reference page, where
	// --help shows its Usage, shorter.
	docAnnotation = "preflight_doc"
)

// The flag groups of the usage, after the command's own flags.
const (
	dockerFlags = "Docker flags"
	kubeFlags   = "Kubernetes flags"
)

// helpWidth is the width --help wraps its text at.
const helpWidth = 80

// command makes one command of the tree, bound to g.
type command func(g *Globals) *cobra.Command

// commands is the command tree, in the order --help lists it.
var commands = []command{newCheckCmd, newMountsCmd, newRunCmd, newAuditCmd, newWritersCmd, newLocksCmd,
	newConvertCmd, newRecoverCmd, newComposeCmd, newMigrateCmd, newKubeCmd, newBundleCmd, newExplainCmd}

// buildCommands are hidden commands for building the release, added by
// files with their own build tag (genman.go: gen-man, -tags gendocs); the
// release binary has none.
var buildCommands []command

// newRoot is the root command over tree, bound to g, with cobra's help
// [COMMAND] and completion bash|zsh|fish|powershell.
func newRoot(g *Globals, tree []command) *cobra.Command {
	cobra.EnableCommandSorting = false
	root := &cobra.Command{
		Use: "preflight", Short: "Keep SQLite databases safe inside containers.", Long: description, Example: rootExample,
		Args:          subcommandArgs,
		SilenceErrors: true, SilenceUsage: true,
		RunE: func(*cobra.Command, []string) error {
			if !g.Version {
				return usageError(errors.New("no command given"), "run 'preflight --help' for usage")
			}
			_, err := fmt.Fprintln(g.stdout, "preflight "+buildVersion())
			return err
		},
		PersistentPreRunE: func(c *cobra.Command, _ []string) error {
			g.flags = c.Flags()
			return setFromEnv(c.Flags())
		},
	}
	root.SetOut(g.stdout)
	root.SetErr(g.stderr)
	root.SetUsageFunc(usage)
	root.SetFlagErrorFunc(flagError)
	root.PersistentFlags().StringVar(&g.Mountinfo, "mountinfo", "", "Classify against `FILE`, a mount table saved elsewhere.")
	flagDoc(root.PersistentFlags(), "mountinfo", "Classify paths against `FILE`, a mount table saved on another machine (mountinfo, /proc/mounts, mount or findmnt output; auto-detected) instead of /proc/self/mountinfo. The paths are that machine's: nothing on this machine is read.")
	boolVar(root.Flags(), &g.Version, "version", "", "Print the version and exit.")
	noEnv(root.Flags(), "version")
	for _, mk := range tree {
		c := mk(g)
		if c.Hidden {
			c.Short, c.Long = notBuilt+c.Short, notBuilt+c.Long
		}
		root.AddCommand(c)
	}
	for _, mk := range buildCommands {
		root.AddCommand(mk(g))
	}
	prepare(root, g)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if ex, ok := builtinExamples[c.Name()]; ok {
			c.Example = ex
		}
		if c.Name() == "completion" {
			// cobra's completion prints its help for a shell it does
			// not know, and exits 0: a usage error here.
			c.Use, c.Args = "completion SHELL", subcommandArgs
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		}
		if c.Name() == "help" {
			// cobra's help prints the root's help for a topic it does
			// not know, and exits 0: a usage error here.
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

// prepare lists the flags of c and its subcommands in declaration order,
// gives each one that names no variables PREFLIGHT_<NAME> (dashes as
// underscores), completes the values of closed sets, refuses flag values
// that look like flags (dashValue) before the positional arguments are
// judged (such a value shifts them), and makes what each RunE returns a
// ranError.
func prepare(c *cobra.Command, g *Globals) {
	if run := c.RunE; run != nil {
		c.RunE = func(c *cobra.Command, args []string) error { return &ranError{run(c, args)} }
	}
	validate := c.Args
	if validate == nil {
		validate = cobra.NoArgs
	}
	c.Args = func(c *cobra.Command, args []string) error {
		if err := dashValue(c.Flags(), c.Name(), c.Name() == "run", g.args); err != nil {
			return err
		}
		return validate(c, args)
	}
	for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
		fs.SortFlags = false
		fs.VisitAll(func(f *pflag.Flag) {
			if _, ok := f.Annotations[envAnnotation]; !ok {
				envFor(fs, f.Name, derivedEnv(f.Name))
			}
			if e, ok := f.Value.(*enumValue); ok {
				var values []string // "" (compose's --platform) is no completion
				for _, v := range e.allowed {
					if v != "" {
						values = append(values, v)
					}
				}
				_ = c.RegisterFlagCompletionFunc(f.Name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
			}
		})
	}
	for _, sub := range c.Commands() {
		prepare(sub, g)
	}
}

// subcommandArgs is the Args of a command with subcommands: an argument
// is a command it does not have, named with cobra's suggestions.
func subcommandArgs(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	err := fmt.Errorf("unknown command %q for %q", args[0], c.CommandPath())
	c.SuggestionsMinimumDistance = 2
	if near := c.SuggestionsFor(args[0]); len(near) > 0 {
		err = fmt.Errorf("%w, did you mean %s?", err, strings.Join(near, ", "))
	}
	return err
}

// ranError is what a command's Run returned (nil included): any other
// error out of cobra is a usage error.
type ranError struct{ err error }

func (e *ranError) Error() string { return fmt.Sprint(e.err) }

// derivedEnv is the variable of flag name unless envFor or noEnv says
// otherwise: PREFLIGHT_ and the name in capitals, - as _.
func derivedEnv(name string) string {
	return "PREFLIGHT_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// envFor makes flag name read the variables vars, the first set winning.
func envFor(fs *pflag.FlagSet, name string, vars ...string) {
	_ = fs.SetAnnotation(name, envAnnotation, vars)
}

// noEnv makes the flags names read no variable.
func noEnv(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		envFor(fs, n)
	}
}

// flagDoc gives flag name its full help for the reference pages.
func flagDoc(fs *pflag.FlagSet, name, text string) {
	_ = fs.SetAnnotation(name, docAnnotation, []string{text})
}

// flagGroup puts the flags names in the usage group title.
func flagGroup(fs *pflag.FlagSet, title string, names ...string) {
	for _, n := range names {
		_ = fs.SetAnnotation(n, groupAnnotation, []string{title})
	}
}

// setFromEnv sets each flag of fs that the command line did not give from
// the first of its variables that is set, and marks it with
// fromEnvAnnotation. The error names the variable.
func setFromEnv(fs *pflag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		for _, name := range f.Annotations[envAnnotation] {
			v, ok := os.LookupEnv(name)
			if !ok || f.Changed || err != nil {
				continue
			}
			if err = fs.Set(f.Name, v); err != nil {
				err = fmt.Errorf("%s: %w", name, err)
				return
			}
			_ = fs.SetAnnotation(f.Name, fromEnvAnnotation, []string{name})
		}
	})
	return err
}

// boolValue is a boolean flag that takes yes and no too, in any case
// (images set PREFLIGHT_DEEP=yes), besides true, false, 1 and 0.
type boolValue bool

func (v *boolValue) Set(s string) error {
	switch strings.ToLower(s) {
	case "true", "1", "yes":
		*v = true
	case "false", "0", "no":
		*v = false
	default:
		return errors.New("must be true, 1, yes, false, 0 or no")
	}
	return nil
}
func (v *boolValue) String() string   { return strconv.FormatBool(bool(*v)) }
func (v *boolValue) Type() string     { return "bool" }
func (v *boolValue) IsBoolFlag() bool { return true }

// boolVar declares a boolean flag (boolValue) with shorthand short ("":
// none): --name alone is true.
func boolVar(fs *pflag.FlagSet, p *bool, name, short, usage string) {
	fs.VarPF((*boolValue)(p), name, short, usage).NoOptDefVal = "true"
}

// deepValue is --deep: a boolean (boolValue's words) that also takes a
// health check's mode, so --deep=full is --deep --deep-mode full (and
// PREFLIGHT_DEEP=full the same). The last of --deep and --deep-mode given
// sets the mode.
type deepValue struct {
	on   *bool
	mode *string
}

func (d deepValue) Set(s string) error {
	switch strings.ToLower(s) {
	case "full", "quick":
		*d.on, *d.mode = true, strings.ToLower(s)
		return nil
	}
	if err := (*boolValue)(d.on).Set(s); err != nil {
		return errors.New("must be true, 1, yes, false, 0, no, quick or full")
	}
	return nil
}
func (d deepValue) String() string   { return (*boolValue)(d.on).String() }
func (d deepValue) Type() string     { return "bool" }
func (d deepValue) IsBoolFlag() bool { return true }

// deepVar declares --deep (deepValue) over on and mode.
func deepVar(fs *pflag.FlagSet, on *bool, mode *string, usage string) {
	fs.VarPF(deepValue{on, mode}, "deep", "", usage).NoOptDefVal = "true"
}

// enumValue is a flag whose value is one of allowed.
type enumValue struct {
	p       *string
	allowed []string
}

func (e *enumValue) Set(s string) error {
	if !slices.Contains(e.allowed, s) {
		return fmt.Errorf("must be one of %q", e.allowed)
	}
	*e.p = s
	return nil
}
func (e *enumValue) String() string { return *e.p }
func (e *enumValue) Type() string   { return "string" }

// enumVar declares a flag whose value is one of allowed, def by default.
func enumVar(fs *pflag.FlagSet, p *string, name, def, usage string, allowed ...string) {
	*p = def
	fs.Var(&enumValue{p, allowed}, name, usage)
}

// sliceValue is a repeatable flag whose values are split at sep (""
// not split): pflag's StringSlice and StringArray read and write them as
// CSV records, which links encoding/csv (9 KB). The first Set replaces
// the default.
type sliceValue struct {
	p       *[]string
	sep     string
	changed bool
}

func (v *sliceValue) Set(s string) error {
	if !v.changed {
		*v.p, v.changed = nil, true
	}
	if v.sep == "" {
		*v.p = append(*v.p, s)
		return nil
	}
	// "a, b" (PREFLIGHT_IGNORE='a, b') is a and b; "a," is a.
	for _, item := range strings.Split(s, v.sep) {
		if item = strings.TrimSpace(item); item != "" {
			*v.p = append(*v.p, item)
		}
	}
	return nil
}
func (v *sliceValue) String() string { return strings.Join(*v.p, ",") }
func (v *sliceValue) Type() string   { return "stringSlice" }

// sliceVar declares a repeatable flag whose values are split at commas,
// with shorthand short ("": none).
func sliceVar(fs *pflag.FlagSet, p *[]string, name, short, usage string) {
	fs.VarP(&sliceValue{p: p, sep: ","}, name, short, usage)
}

// flagError is cobra's FlagErrorFunc: pflag's error, and for an unknown
// long flag the flags it starts or is at most two edits from.
func flagError(c *cobra.Command, err error) error {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) || ne.GetSpecifiedShortnames() != "" {
		return err
	}
	typed := "--" + ne.GetSpecifiedName()
	var near []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if n := "--" + f.Name; !f.Hidden && (strings.HasPrefix(n, typed) || levenshtein(n, typed) <= 2) {
			near = append(near, n)
		}
	})
	if len(near) > 0 {
		return fmt.Errorf("%w, did you mean %s?", err, strings.Join(near, ", "))
	}
	return err
}

// dashValue refuses a flag value given as the next argument that looks
// like a flag ("--data-dir --format json", "--data-dir -- app",
// "--max-depth -1"): pflag takes it as the value. "-" alone is a value
// (stdin), and so is anything after "=" or attached to a short flag. It
// scans args (the command line up to run's "--") until "--" or, for a
// command whose positionals take flags (passthrough: run), its first
// positional after the command's name.
func dashValue(fs *pflag.FlagSet, name string, passthrough bool, args []string) error {
	skipName := true
	for i := 0; i < len(args); i++ {
		a := args[i]
		var fl *pflag.Flag
		switch {
		case a == "--":
			return nil
		case strings.HasPrefix(a, "--"):
			if !strings.Contains(a, "=") {
				fl = fs.Lookup(a[2:])
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			fl = lastShort(fs, a[1:])
		case skipName && a == name:
			skipName = false
			continue
		case passthrough:
			return nil
		default:
			continue
		}
		if fl == nil || fl.NoOptDefVal != "" || i+1 >= len(args) {
			continue
		}
		i++
		// A negative number (--sniff-max -1, --sniff-time -1s) is a value.
		if v := args[i]; strings.HasPrefix(v, "-") && len(v) > 1 && (v[1] < '0' || v[1] > '9') {
			return fmt.Errorf("--%s: expected a value but got %q, a flag; perhaps try --%s=%q?", fl.Name, v, fl.Name, v)
		}
	}
	return nil
}

// lastShort is the flag that takes the next argument as its value in the
// short-flag cluster s ("yf" of -yf), or nil when none does.
func lastShort(fs *pflag.FlagSet, s string) *pflag.Flag {
	for j := 0; j < len(s); j++ {
		fl := fs.ShorthandLookup(s[j : j+1])
		if fl == nil {
			return nil
		}
		if fl.NoOptDefVal == "" {
			if j+1 < len(s) {
				return nil // value attached: -fFILE
			}
			return fl
		}
	}
	return nil
}

// usage is every command's usage (SetUsageFunc), after its description
// in --help: cobra's sections, the command's own flags first, then those
// of each group (groupAnnotation) and the global ones, each group laid
// out by pflag; a flag read from other variables than PREFLIGHT_<NAME>
// names them.
func usage(c *cobra.Command) error {
	var b strings.Builder
	b.WriteString("Usage:\n")
	if c.Runnable() {
		fmt.Fprintf(&b, "  %s\n", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "  %s [command]\n", c.CommandPath())
	}
	if c.HasExample() {
		fmt.Fprintf(&b, "\nExamples:\n%s\n", c.Example)
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\nCommands:\n")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(&b, "  %-*s %s\n", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	titles := []string{"Flags", dockerFlags, kubeFlags, "Global flags"}
	groups := map[string]*pflag.FlagSet{}
	// example is the first flag of this command's own that reads its
	// derived variable, named in the footer.
	derived, example := false, ""
	add := func(title string, f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if t := f.Annotations[groupAnnotation]; len(t) > 0 {
			title = t[0]
		}
		if groups[title] == nil {
			groups[title] = pflag.NewFlagSet(title, pflag.ContinueOnError)
			groups[title].SortFlags = false
		}
		cp := *f
		switch vars := f.Annotations[envAnnotation]; {
		case len(vars) == 1 && vars[0] == derivedEnv(f.Name):
			derived = true
			if example == "" && title == "Flags" {
				example = f.Name
			}
		case len(vars) > 0:
			cp.Usage += " ($" + strings.Join(vars, ", $") + ")"
		}
		groups[title].AddFlag(&cp)
	}
	c.LocalFlags().VisitAll(func(f *pflag.Flag) { add("Flags", f) })
	c.InheritedFlags().VisitAll(func(f *pflag.Flag) { add("Global flags", f) })
	for _, t := range titles {
		if groups[t] != nil {
			fmt.Fprintf(&b, "\n%s:\n%s", t, groups[t].FlagUsagesWrapped(helpWidth))
		}
	}
	if derived {
		if example == "" {
			example = "mountinfo"
		}
		b.WriteString("\n" + wrap("A flag not given is read from $PREFLIGHT_ and its name (--"+example+": $"+derivedEnv(example)+"), unless other variables are named above.", 0, helpWidth) + "\n")
	}
	if !c.HasParent() {
		b.WriteString("\nExit codes:\n" + exitCodesHelp() + "\nAfter 'preflight run' execs CMD, the exit code is the application's.\n")
	} else {
		fmt.Fprintf(&b, "Every flag in full: %sreference/cli/%s/\n", rules.DocsURL, strings.ReplaceAll(c.CommandPath(), " ", "_"))
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\nRun '%s COMMAND --help' for more information on a command.\n", c.CommandPath())
	}
	_, err := fmt.Fprint(c.OutOrStderr(), b.String())
	return err
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

// levenshtein is the edit distance between a and b, in bytes.
func levenshtein(a, b string) int {
	row := make([]int, len(b)+1)
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		diag := row[0]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			diag, row[j] = row[j], min(row[j]+1, row[j-1]+1, diag+cost)
		}
	}
	return row[len(b)]
}
