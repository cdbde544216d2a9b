package main

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The command line is declared by struct tags on each command's fields
// (name, short, default, enum, env, sep, placeholder, help, required, xor;
// arg, optional, passthrough for positionals) and bound to cobra and pflag
// here. Only struct fields are read by reflection, never methods, so the
// linker can drop the exported methods nothing calls.

// runner is a command: its fields are its flags and arguments.
type runner interface{ Run(g *Globals) error }

// flagSpec is one flag read from a field's tags.
type flagSpec struct {
	name, short, help, placeholder, def, xor string
	brief                                    string   // --help's shorter help (tag brief); the reference has help
	enum                                     []string // nil: any value
	envs                                     []string // variables, first wins
	required                                 bool
	field                                    reflect.Value
	value                                    pflag.Value
}

// argSpec is one positional argument.
type argSpec struct {
	name, help string
	// passthrough: once it starts, what follows is its value, flags too.
	optional, repeat, passthrough bool
	field                         reflect.Value
}

// cmdSpec is the flags and arguments of one command, in declaration order.
type cmdSpec struct {
	flags []*flagSpec
	args  []*argSpec
}

// readSpec reads the tags of the struct v points to, descending into
// embedded structs (CheckFlags).
func readSpec(v reflect.Value, s *cmdSpec) {
	v = v.Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f, fv := t.Field(i), v.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			readSpec(fv.Addr(), s)
			continue
		}
		if !f.IsExported() || f.Tag.Get("help") == "" {
			continue
		}
		if _, ok := f.Tag.Lookup("arg"); ok {
			name := f.Tag.Get("name")
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			s.args = append(s.args, &argSpec{name: name, help: f.Tag.Get("help"),
				optional: hasTag(f, "optional"), passthrough: hasTag(f, "passthrough"), repeat: f.Type.Kind() == reflect.Slice, field: fv})
			continue
		}
		s.flags = append(s.flags, newFlagSpec(f, fv))
	}
}

func hasTag(f reflect.StructField, key string) bool {
	_, ok := f.Tag.Lookup(key)
	return ok
}

// newFlagSpec is the flag of field f: its environment variables are the
// env tag's list, or PREFLIGHT_<NAME> without one ("-": none).
func newFlagSpec(f reflect.StructField, fv reflect.Value) *flagSpec {
	name := f.Tag.Get("name")
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	fs := &flagSpec{name: name, short: f.Tag.Get("short"), help: f.Tag.Get("help"), brief: f.Tag.Get("brief"),
		placeholder: f.Tag.Get("placeholder"), def: f.Tag.Get("default"), xor: f.Tag.Get("xor"),
		required: hasTag(f, "required"), field: fv}
	if e, ok := f.Tag.Lookup("enum"); ok {
		fs.enum = strings.Split(e, ",")
	}
	switch env := f.Tag.Get("env"); env {
	case "-":
	case "":
		fs.envs = []string{derivedEnv(name)}
	default:
		fs.envs = strings.Split(env, ",")
	}
	switch p := fv.Addr().Interface().(type) {
	case *string:
		fs.value = (*stringValue)(p)
	case *bool:
		fs.value = (*boolValue)(p)
	case *int:
		fs.value = (*intValue)(p)
	case *time.Duration:
		fs.value = (*durationValue)(p)
	case *[]string:
		sep, ok := f.Tag.Lookup("sep")
		if !ok {
			sep = ","
		}
		fs.value = &sliceValue{p: p, sep: sep}
	default:
		panic("flag --" + name + ": unsupported type " + f.Type.String())
	}
	if fs.placeholder == "" && f.Type.Kind() != reflect.Bool {
		fs.placeholder = strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	}
	return fs
}

// register adds the flag to set with its default.
func (fs *flagSpec) register(set *pflag.FlagSet) {
	if fs.def != "" {
		_ = fs.value.Set(fs.def)
	}
	fl := set.VarPF(fs.value, fs.name, fs.short, fs.help)
	if _, ok := fs.value.(*boolValue); ok {
		fl.NoOptDefVal = "true"
	}
	if s, ok := fs.value.(*sliceValue); ok {
		s.fresh = true
	}
}

// fromEnv sets a flag the command line did not give from the first of its
// environment variables that is set; the error names flag and variable.
func (fs *flagSpec) fromEnv(set *pflag.FlagSet) error {
	if fl := set.Lookup(fs.name); fl != nil && fl.Changed {
		return nil
	}
	for _, env := range fs.envs {
		v, ok := os.LookupEnv(env)
		if !ok {
			continue
		}
		if s, ok := fs.value.(*sliceValue); ok {
			s.fresh = true
		}
		if err := fs.value.Set(v); err != nil {
			return fmt.Errorf("--%s (%s): %v", fs.name, env, err)
		}
		if fs.enum != nil && !inEnum(fs.enum, fs.value.String()) {
			return fmt.Errorf("--%s (%s) %s", fs.name, env, enumMessage(fs.enum, fs.value.String()))
		}
		return nil
	}
	return nil
}

func inEnum(enum []string, v string) bool {
	for _, e := range enum {
		if e == v {
			return true
		}
	}
	return false
}

// enumMessage is the error for value v outside enum.
func enumMessage(enum []string, v string) string {
	q := make([]string, len(enum))
	for i, e := range enum {
		q[i] = strconv.Quote(e)
	}
	return fmt.Sprintf("must be one of %s but got %q", strings.Join(q, ","), v)
}

// bind sets the command's flags from the environment, then checks enums,
// required flags, xor groups and the positional arguments args.
func (s *cmdSpec) bind(set *pflag.FlagSet, args []string) error {
	for _, fs := range s.flags {
		if err := fs.fromEnv(set); err != nil {
			return err
		}
	}
	var missing []string
	xor := map[string]string{}
	for _, fs := range s.flags {
		fl := set.Lookup(fs.name)
		if fs.enum != nil && !inEnum(fs.enum, fs.value.String()) {
			return fmt.Errorf("--%s %s", fs.name, enumMessage(fs.enum, fs.value.String()))
		}
		if fs.required && !fl.Changed && !envSet(fs.envs) {
			m := "--" + fs.name + "=" + fs.placeholder
			if sv, ok := fs.value.(*sliceValue); ok && sv.sep != "none" {
				m += sv.sep + "..."
			}
			missing = append(missing, m)
		}
		// An xor flag counts as given from its variable too, whatever
		// the value (PREFLIGHT_WRITE=0 with --diff is an error).
		if fs.xor != "" && (fl.Changed || envSet(fs.envs)) {
			if other, ok := xor[fs.xor]; ok {
				return fmt.Errorf("--%s and --%s can't be used together", other, fs.name)
			}
			xor[fs.xor] = fs.name
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing flags: %s", strings.Join(missing, ", "))
	}
	return s.bindArgs(args)
}

func envSet(envs []string) bool {
	for _, e := range envs {
		if _, ok := os.LookupEnv(e); ok {
			return true
		}
	}
	return false
}

// bindArgs assigns the positional arguments to their fields.
func (s *cmdSpec) bindArgs(args []string) error {
	for _, a := range s.args {
		if len(args) == 0 {
			if !a.optional {
				return fmt.Errorf("expected \"<%s>\"", a.name)
			}
			continue
		}
		if a.repeat {
			a.field.Set(reflect.ValueOf(append([]string(nil), args...)))
			args = nil
			continue
		}
		a.field.SetString(args[0])
		args = args[1:]
	}
	if len(args) > 0 {
		return fmt.Errorf("unexpected argument %s", args[0])
	}
	return nil
}

// flagError rewrites pflag's parse errors in the form the rest of the
// messages have ("unknown flag --x").
func flagError(_ *cobra.Command, err error) error {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "flag needs an argument: "):
		// flag needs an argument: --name, or 'f' in -f
		msg = strings.TrimPrefix(msg, "flag needs an argument: ")
		if i := strings.Index(msg, " in -"); i >= 0 {
			msg = msg[i+len(" in "):]
		}
		msg += ": missing value"
	case strings.HasPrefix(msg, "unknown flag: "):
		msg = "unknown flag " + strings.TrimPrefix(msg, "unknown flag: ")
	case strings.HasPrefix(msg, "invalid argument "):
		// invalid argument "x" for "-s, --name" flag: why
		if i, j := strings.Index(msg, "--"), strings.Index(msg, "\" flag: "); i >= 0 && j > i {
			msg = msg[i:j] + ": " + msg[j+len("\" flag: "):]
		}
	case strings.HasPrefix(msg, "unknown shorthand flag: "):
		if i := strings.LastIndex(msg, " in "); i >= 0 {
			msg = "unknown flag " + msg[i+len(" in "):]
		}
	}
	return &parseError{errors.New(msg)}
}

// parseError is a usage error found while parsing: exit 2 with the hint.
type parseError struct{ err error }

func (e *parseError) Error() string { return e.err.Error() }

type stringValue string

func (v *stringValue) Set(s string) error { *v = stringValue(s); return nil }
func (v *stringValue) String() string     { return string(*v) }
func (v *stringValue) Type() string       { return "string" }

type boolValue bool

// Set takes true, 1, yes, false, 0 or no in any case (images set
// PREFLIGHT_DEEP=yes).
func (v *boolValue) Set(s string) error {
	switch strings.ToLower(s) {
	case "true", "1", "yes":
		*v = true
	case "false", "0", "no":
		*v = false
	default:
		return fmt.Errorf("bool value must be true, 1, yes, false, 0 or no but got %q", s)
	}
	return nil
}
func (v *boolValue) String() string   { return strconv.FormatBool(bool(*v)) }
func (v *boolValue) Type() string     { return "bool" }
func (v *boolValue) IsBoolFlag() bool { return true }

type intValue int

func (v *intValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, 0)
	if err != nil {
		return fmt.Errorf("expected a valid 64 bit int but got %q", s)
	}
	*v = intValue(n)
	return nil
}
func (v *intValue) String() string { return strconv.Itoa(int(*v)) }
func (v *intValue) Type() string   { return "int" }

type durationValue time.Duration

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("expected duration but got %q: %v", s, err)
	}
	*v = durationValue(d)
	return nil
}
func (v *durationValue) String() string { return time.Duration(*v).String() }
func (v *durationValue) Type() string   { return "duration" }

// sliceValue is a repeatable flag; each value is split at sep ("none":
// not split). The first Set after fresh replaces what was there.
type sliceValue struct {
	p     *[]string
	sep   string
	fresh bool
}

func (v *sliceValue) Set(s string) error {
	if v.fresh {
		*v.p, v.fresh = nil, false
	}
	if v.sep == "none" {
		*v.p = append(*v.p, s)
		return nil
	}
	*v.p = append(*v.p, strings.Split(s, v.sep)...)
	return nil
}
func (v *sliceValue) String() string { return strings.Join(*v.p, ",") }
func (v *sliceValue) Type() string   { return "stringSlice" }

// dashValue rejects a flag value given as the next argument that looks
// like a flag ("--data-dir --format json", "--data-dir -- app",
// "--max-depth -1"): pflag takes it as the value. "-" alone is a value
// (stdin), and so is anything after "=" or attached to a short flag. It
// scans args (the command line up to run's "--") until "--" or, for a
// command whose positionals take flags (run), its first positional.
func dashValue(set *pflag.FlagSet, name string, passthrough bool, args []string) error {
	skipName := true
	for i := 0; i < len(args); i++ {
		a := args[i]
		var fl *pflag.Flag
		switch {
		case a == "--":
			return nil
		case strings.HasPrefix(a, "--"):
			if !strings.Contains(a, "=") {
				fl = set.Lookup(a[2:])
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			fl = lastShort(set, a[1:])
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
		if v := args[i]; strings.HasPrefix(v, "-") && len(v) > 1 {
			kind := "short"
			if strings.HasPrefix(v, "--") {
				kind = "long"
			}
			typ := strings.TrimSuffix(fl.Value.Type(), "Slice")
			return fmt.Errorf("--%s: expected %s value but got %q (%s flag); perhaps try --%s=%q?", fl.Name, typ, v, kind, fl.Name, v)
		}
	}
	return nil
}

// lastShort is the flag that takes the next argument as its value in the
// short-flag cluster s ("yf" of -yf), or nil when none does.
func lastShort(set *pflag.FlagSet, s string) *pflag.Flag {
	for j := 0; j < len(s); j++ {
		fl := set.ShorthandLookup(s[j : j+1])
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

// suggestFlag adds to "unknown flag X" the flags of global and spec that
// X starts, or is at most two edits from: `did you mean "--format"?`.
func suggestFlag(msg string, global, spec *cmdSpec) string {
	needle, ok := strings.CutPrefix(msg, "unknown flag ")
	if !ok || spec == nil {
		return msg
	}
	names := []string{"--help"}
	if !strings.HasPrefix(needle, "--") {
		names = []string{"-h"}
	}
	for _, fs := range append(append([]*flagSpec(nil), global.flags...), spec.flags...) {
		switch {
		case strings.HasPrefix(needle, "--"):
			names = append(names, "--"+fs.name)
		case fs.short != "":
			names = append(names, "-"+fs.short)
		}
	}
	var near []string
	for _, n := range names {
		if strings.HasPrefix(n, needle) || levenshtein(n, needle) <= 2 {
			near = append(near, strconv.Quote(n))
		}
	}
	switch len(near) {
	case 0:
		return msg
	case 1:
		return msg + ", did you mean " + near[0] + "?"
	}
	return msg + ", did you mean one of " + strings.Join(near, ", ") + "?"
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
