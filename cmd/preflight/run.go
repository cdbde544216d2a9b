package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/internal/shell"
	"github.com/preflight-sqlite/preflight/rules"
)

// RunCmd is `preflight run`: the ENTRYPOINT wrapper.
type RunCmd struct {
	CheckFlags
	OnUnsafe         string
	OnUnsafeFallback string
	LogFormat        string
	ExportEnv        []string
	Cmd              []string
}

func newRunCmd(g *Globals) *cobra.Command {
	c := &RunCmd{}
	cmd := &cobra.Command{
		Use:   "run [flags] -- CMD [ARG]...",
		Short: "Check the data directories, then exec CMD (the container ENTRYPOINT).",
		Long: wrap("Check the data directories, log findings to stderr, then exec CMD (the container ENTRYPOINT): "+
			"the application and its arguments, after --.", 0, helpWidth),
		Example: examples["run"],
		Args:    cobra.ArbitraryArgs,
		RunE:    func(_ *cobra.Command, args []string) error { c.Cmd = args; return c.Run(g) },
	}
	// What follows the first positional is the application's, flags too.
	cmd.Flags().SetInterspersed(false)
	fs := cmd.Flags()
	c.CheckFlags.AddFlags(cmd)
	enumVar(fs, &c.OnUnsafe, "on-unsafe", "warn", "What to do when a database is unsafe: warn (log and start the application), fail (exit 3 before starting it), or convert (convert each WAL database on a cross-vm, network or fuse filesystem to journal_mode=DELETE before starting it, when no other writer is found and its files stay quiet; choosing this is the operator's confirmation).", "warn", "fail", "convert")
	enumVar(fs, &c.OnUnsafeFallback, "on-unsafe-fallback", "warn", "With --on-unsafe convert, when a database cannot be converted (a writer found, files changing, an error): warn (log and start the application) or fail (exit 3).", "warn", "fail")
	enumVar(fs, &c.LogFormat, "log-format", "text", "Format of the log lines on stderr: text or json (one object per line).", "text", "json")
	sliceVar(fs, &c.ExportEnv, "export-env", "", "Also set environment variable `NAME` to the recommended journal mode (wal or delete) for the application (repeatable).")
	return cmd
}

// Run checks the data directories, logs each finding once, and replaces
// this process with the application through execve, so the application
// keeps PID 1 and receives signals directly. It returns only on failure.
func (c *RunCmd) Run(g *Globals) error {
	if err := needsLinux("run", false); err != nil {
		return err
	}
	argv, exports, err := c.command(g)
	if err != nil {
		return err
	}
	opts, err := c.options(g, nil)
	if err != nil {
		return err
	}
	opts.Writers.Starting = true
	opts.JournalModeExported = len(exports) > 0
	opts.Writers.Converted = convertedBefore(g, c.LogFormat, opts.Paths)
	r, err := preflight.Check(g.ctx, opts)
	if err != nil {
		if errors.Is(err, preflight.ErrRelativePath) {
			return usageError(err)
		}
		logLine(g.stderr, c.LogFormat, preflight.LevelError, "check-failed", "", err.Error(), nil)
		if c.OnUnsafe == "fail" {
			return &exitError{code: exitInternal}
		}
	} else if err := c.logAndDecide(g, r, opts, argv[0]); err != nil {
		return err
	}

	if err := g.ctx.Err(); err != nil {
		// Told to stop while checking: the application is not started.
		return fmt.Errorf("run: interrupted, %s not started: %w", argv[0], context.Cause(g.ctx))
	}
	env := os.Environ()
	if r != nil {
		env = setEnv(env, "PREFLIGHT_JOURNAL_MODE", r.JournalMode)
		env = setEnv(env, "PREFLIGHT_FS_CLASS", string(r.FSClass))
		for _, name := range exports {
			env = setEnv(env, name, r.JournalMode)
		}
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return execError(argv[0], err)
	}
	return execError(argv[0], syscall.Exec(path, argv, env))
}

// command is the application's argv after --, and the --export-env names.
func (c *RunCmd) command(g *Globals) (argv, exports []string, err error) {
	// The parser drops the "--" that ends run's flags: a "--" here is
	// the application's name.
	argv = append(c.Cmd, g.cmdArgs...)
	if len(argv) == 0 {
		return nil, nil, usageError(errors.New("run: no command given"), "usage: preflight run --data-dir DIR -- CMD [ARGS...]")
	}
	if strings.HasPrefix(argv[0], "-") {
		return nil, nil, usageError(fmt.Errorf("run: unknown flag %s", argv[0]), "the application and its arguments go after --: preflight run --data-dir DIR -- CMD [ARGS...]")
	}
	for _, name := range c.ExportEnv {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !envName(name) {
			return nil, nil, usageError(fmt.Errorf("run: --export-env %q: not an environment variable name (letters, digits and _, not starting with a digit)", name))
		}
		exports = append(exports, name)
	}
	return argv, exports, nil
}

// logAndDecide logs each finding and data directory of r, converts with
// --on-unsafe convert, and returns the exit error that stops the start of
// app: a finding whose rule refuses the start (rules.StartRefusal), or
// --on-unsafe fail on an unsafe verdict; nil to start it.
func (c *RunCmd) logAndDecide(g *Globals, r *preflight.Report, opts preflight.Options, app string) error {
	for _, f := range r.Findings {
		logFinding(g.stderr, c.LogFormat, f)
	}
	if len(r.Findings) > 0 && c.LogFormat != "json" {
		words := []string{"preflight", "check"}
		for _, p := range opts.Paths {
			words = append(words, shell.Quote(p))
		}
		fmt.Fprintf(g.stderr, "preflight: hint: the full text and fixes, in this container (docker exec) or one that mounts its data (docker run --rm --volumes-from): %s\n", oneLine(strings.Join(words, " ")))
	}
	for _, d := range r.DataDirs {
		logLine(g.stderr, c.LogFormat, preflight.LevelInfo, "checked", d.Path, summary(d), nil)
	}
	if c.OnUnsafe == "convert" {
		if err := c.convertUnsafe(g, r, opts); err != nil {
			return err
		}
	}
	// Starting the application could destroy the only copy of the data
	// (SQLite removes a -wal beside an empty database file on open; an
	// application that cannot open a damaged database may recreate it):
	// whatever --on-unsafe says, unless the finding is ignored.
	for _, f := range r.Findings {
		if why, ok := rules.StartRefusal(f); ok {
			logLine(g.stderr, c.LogFormat, preflight.LevelError, "start-refused", f.Path, fmt.Sprintf("not starting %s: %s (--ignore %s to start anyway)", app, why, f.ID), nil)
			return &exitError{code: exitUnsafe}
		}
	}
	if r.Verdict == preflight.VerdictUnsafe && c.OnUnsafe == "fail" {
		logLine(g.stderr, c.LogFormat, preflight.LevelError, "start-refused", "", fmt.Sprintf("not starting %s: unsafe (--on-unsafe fail)", app), nil)
		return &exitError{code: exitUnsafe}
	}
	return nil
}

// execError maps a failed lookup or execve to tini's codes: 127 when the
// command does not exist, 126 when it cannot be executed.
func execError(name string, err error) error {
	code := exitCannotExec
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOENT) {
		code = exitNotFound
	}
	return &exitError{code: code, err: fmt.Errorf("run %s: %w", name, err)}
}

// envName reports whether s is a portable environment variable name:
// letters, digits and underscores, not starting with a digit.
func envName(s string) bool {
	for i, r := range s {
		if r != '_' && !('A' <= r && r <= 'Z') && !('a' <= r && r <= 'z') && (i == 0 || !('0' <= r && r <= '9')) {
			return false
		}
	}
	return s != ""
}

// setEnv sets NAME=value in env, replacing an earlier NAME.
func setEnv(env []string, name, value string) []string {
	prefix := name + "="
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, prefix) {
			out = append(out, kv)
		}
	}
	return append(out, prefix+value)
}

// logFinding writes finding f to the container log w: in text, one short
// line (findingLine); in JSON, the whole message and remedy, with the
// short reason and the docs address beside them.
func logFinding(w io.Writer, format string, f preflight.Finding) {
	if format == "json" {
		writeJSONLine(w, logRecord{f.Level, string(f.ID), f.Path, f.Message, f.Remedy, rules.Short(f.ID), rules.FindingURL(f.ID)})
		return
	}
	fmt.Fprintln(w, findingLine(f))
}

// logRecord is one line of run's JSON log; Reason and URL only for a
// finding of the rules table.
type logRecord struct {
	Level   preflight.Level `json:"level"`
	ID      string          `json:"id"`
	Path    string          `json:"path,omitempty"`
	Message string          `json:"message"`
	Remedy  []string        `json:"remedy,omitempty"`
	Reason  string          `json:"reason,omitempty"`
	URL     string          `json:"url,omitempty"`
}

func writeJSONLine(w io.Writer, rec logRecord) {
	b, _ := json.Marshal(rec)
	fmt.Fprintf(w, "%s\n", b)
}

// findingLine is the one text line run logs for f at container start:
// "preflight: LEVEL: ID: PATH: REASON (URL)", with the rule's short
// reason (rules.Short) and the finding's page; the full message and
// remedy are check's. A finding without a short reason (none in the
// table) keeps its message.
func findingLine(f preflight.Finding) string {
	reason := rules.Short(f.ID)
	if reason == "" {
		reason = oneLine(f.Message)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "preflight: %s: %s: ", f.Level, f.ID)
	if f.Path != "" {
		fmt.Fprintf(&b, "%s: ", oneLine(f.Path))
	}
	fmt.Fprintf(&b, "%s (%s)", reason, rules.FindingURL(f.ID))
	return b.String()
}

// logLine writes one log line to w: text
// "preflight: LEVEL: ID: PATH: MESSAGE; fix: ..." or one JSON object.
func logLine(w io.Writer, format string, lvl preflight.Level, id, path, msg string, remedy []string) {
	if format == "json" {
		writeJSONLine(w, logRecord{Level: lvl, ID: id, Path: path, Message: msg, Remedy: remedy})
		return
	}
	// One finding, one line: control characters in paths and command
	// lines (a newline in a file name) are escaped.
	msg, path = oneLine(msg), oneLine(path)
	for i := range remedy {
		remedy[i] = oneLine(remedy[i])
	}
	var b strings.Builder
	fmt.Fprintf(&b, "preflight: %s: %s: ", lvl, id)
	if path != "" {
		fmt.Fprintf(&b, "%s: ", path)
	}
	b.WriteString(msg)
	if len(remedy) > 0 {
		b.WriteString("; fix: " + strings.Join(remedy, " | "))
	}
	fmt.Fprintln(w, b.String())
}

// summary describes a checked data directory in one phrase.
func summary(d preflight.DataDir) string {
	fs := "filesystem unknown"
	if d.Mount != nil {
		fs = fmt.Sprintf("%s (%s from %s)", d.Mount.Class, d.Mount.FSType, d.Mount.Source)
	}
	modes := map[string]int{}
	for _, db := range d.Databases {
		modes[dbMode(db)]++
	}
	var parts []string
	order := []string{"wal", "rollback", "new", "unknown", "unreadable", "damaged header", "not sqlite"}
	var extra []string // a mode without a place in order is still counted
	for m := range modes {
		if !slices.Contains(order, m) {
			extra = append(extra, m)
		}
	}
	slices.Sort(extra)
	order = append(order, extra...)
	for _, m := range order {
		if modes[m] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", modes[m], m))
		}
	}
	dbs := "no database"
	switch {
	case d.StatError != "":
		dbs = "not inspected (the path could not be read)"
	case len(parts) > 0:
		dbs = "databases: " + strings.Join(parts, ", ")
	}
	return fs + ", " + dbs
}

// oneLine escapes what a terminal would act on so that s prints on one
// line as written: control characters (C0, DEL and C1, whose U+009B is a
// CSI), bidi overrides and other format characters, invalid UTF-8 (every
// rune strconv.IsPrint refuses but the space), each as Go escapes it
// (\n, \x1b, \u202e); the rest, quotes and backslashes included, as it is.
func oneLine(s string) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case strconv.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}
