package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/convert"
)

// ConvertCmd is `preflight convert`.
type ConvertCmd struct {
	Paths []string
	CheckFlags
	To              string
	DryRun          bool
	BackupDir       string
	NoBackup        bool
	Verify          string
	AllowUnverified bool
	AcceptWALLoss   bool
	Watch           time.Duration
	Yes             bool
	Format          string
}

func newConvertCmd(g *Globals) *cobra.Command {
	c := &ConvertCmd{}
	cmd := &cobra.Command{
		Use:   "convert [PATH]...",
		Short: "Convert databases offline to journal_mode=DELETE (or back to WAL).",
		Long: wrap("Convert databases offline to journal_mode=DELETE (or back to WAL), guarded by every live-writer probe, with a backup and verification. "+
			"Each PATH is a database file, or a data directory (every database in it); given PATHs replace PREFLIGHT_DATA_DIR.", 0, helpWidth),
		Example: examples["convert"],
		Args:    cobra.ArbitraryArgs,
		RunE:    func(_ *cobra.Command, args []string) error { c.Paths = args; return c.Run(g) },
	}
	fs := cmd.Flags()
	c.CheckFlags.AddFlags(cmd)
	enumVar(fs, &c.To, "to", "delete", "Journal mode to convert to: delete (the rollback journal) or wal.", "delete", "wal")
	boolVar(fs, &c.DryRun, "dry-run", "", "Run the guard and print what would be done; change nothing.")
	fs.StringVar(&c.BackupDir, "backup-dir", "", "Put the backups in `DIR` (default: beside each database, <db>.preflight-backup-<UTC time>/).")
	boolVar(fs, &c.NoBackup, "no-backup", "", "Do not copy the database, -wal and -shm aside first.")
	enumVar(fs, &c.Verify, "verify", "quick", "Check after converting: quick (PRAGMA quick_check) or full (PRAGMA integrity_check).", "quick", "full")
	boolVar(fs, &c.AllowUnverified, "allow-unverified", "", "Convert even when a live-writer probe could not run (no Docker API access). A writer that was seen is never overridden.")
	boolVar(fs, &c.AcceptWALLoss, "accept-wal-loss", "", "Convert, after the backup, although valid-looking WAL frames after a broken one will be discarded.")
	fs.DurationVar(&c.Watch, "watch", 2*time.Second, "Quiet period the files must stay unchanged on cross-vm, network, fuse and unknown filesystems.")
	boolVar(fs, &c.Yes, "yes", "y", "Confirm, without a prompt, that nothing outside this machine has the databases open (needed on cross-vm, network and fuse filesystems when there is no terminal).")
	enumVar(fs, &c.Format, "format", "text", "Output format: text or json (schema preflight-convert/v1).", "text", "json")
	return cmd
}

// Run converts and renders the result. Exit codes: 0 every database
// converted or already in the mode, 3 the guard refused one (a writer, an
// unverified probe, Litestream, WAL frames that would be lost, no
// confirmation), 1 a conversion failed (nothing changed, or see the error),
// 2 bad usage; stopped by SIGINT or SIGTERM, 128 plus the signal's number
// (MainContext), after rendering what was done.
func (c *ConvertCmd) Run(g *Globals) error {
	if err := c.validate(g); err != nil {
		return err
	}
	copts, err := c.options(g, c.Paths)
	if err != nil {
		return err
	}
	opts := c.convertOptions(g, copts)
	if isTerminal(os.Stderr) {
		var stop func()
		opts.Progress, stop = newProgress(g.stderr)
		defer stop()
	}
	res, err := convert.Run(g.ctx, opts)
	if g.ctx.Err() != nil && (res == nil || len(res.Databases) == 0) {
		return fmt.Errorf("convert: interrupted (%v) before any database was converted; nothing was touched", context.Cause(g.ctx))
	}
	if err != nil && (res == nil || g.ctx.Err() == nil) {
		if errors.Is(err, convert.ErrBadOptions) || errors.Is(err, convert.ErrNoPaths) || errors.Is(err, preflight.ErrRelativePath) {
			return usageError(err)
		}
		return err
	}
	if c.Format == "json" {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else if err := renderConvert(g.stdout, res); err != nil {
		return err
	}
	return convertExit(g, res)
}

// validate rejects flag combinations convert cannot run with.
func (c *ConvertCmd) validate(g *Globals) error {
	if err := needsLinux("convert", false); err != nil {
		return err
	}
	if g.Mountinfo != "" {
		return usageError(errors.New("convert works on this machine's files: --mountinfo cannot be used"))
	}
	if c.Watch < 0 {
		return usageError(fmt.Errorf("--watch %s: must not be negative", c.Watch))
	}
	if c.NoBackup && c.BackupDir != "" {
		return usageError(errors.New("--no-backup and --backup-dir cannot be combined: a backup directory with no backup"),
			"choose one: --backup-dir DIR to keep the backups in DIR, or --no-backup to make none")
	}
	return nil
}

// convertOptions are the flags as convert.Options over the check options
// copts, with the confirmation prompt when stdin and stderr are terminals.
func (c *ConvertCmd) convertOptions(g *Globals, copts preflight.Options) convert.Options {
	prog := "preflight"
	if exe, err := os.Executable(); err == nil && filepath.Dir(exe) == "/" {
		prog = exe // a scratch image: /preflight
	}
	opts := convert.Options{
		Check:           copts,
		Paths:           copts.Paths,
		To:              c.To,
		DryRun:          c.DryRun,
		BackupDir:       c.BackupDir,
		NoBackup:        c.NoBackup,
		Verify:          c.Verify,
		AllowUnverified: c.AllowUnverified,
		AcceptWALLoss:   c.AcceptWALLoss,
		Watch:           c.Watch,
		Confirmed:       c.Yes,
		Program:         prog,
	}
	if c.Watch == 0 {
		opts.Watch = time.Nanosecond // no wait, but still two samples
	}
	if isTerminal(os.Stdin) && isTerminal(os.Stderr) {
		in := bufio.NewReader(os.Stdin)
		opts.Confirm = func(path, statement string) bool {
			fmt.Fprintf(g.stderr, "preflight: %s.\npreflight: convert %s? [y/N] ", statement, path)
			line, _ := in.ReadString('\n')
			a := strings.ToLower(strings.TrimSpace(line))
			return a == "y" || a == "yes"
		}
	}
	return opts
}

// convertExit is the error (exit code, message, hints) for a rendered
// result: interrupted (MainContext turns it into 128 plus the signal's
// number), a conversion failed, a path not looked at, or a refusal.
func convertExit(g *Globals, res *convert.Result) error {
	switch {
	case g.ctx.Err() != nil:
		return &exitError{code: exitInternal, err: fmt.Errorf("convert: interrupted (%v): each database above says whether it stopped before its journal mode change (as it was, no partial backup left) or after it (converted, verified or not); those not listed were not touched", context.Cause(g.ctx))}
	case res.Errored():
		return &exitError{code: exitInternal, err: errors.New("convert: a conversion failed (see above); the database was left as it was unless the message says otherwise")}
	case len(res.Problems) > 0:
		return &exitError{code: exitInternal, err: fmt.Errorf("convert: %s; nothing there was converted", strings.Join(res.Problems, "; "))}
	case res.Refused():
		var hints []string
		if len(res.Recipe) > 0 {
			for _, c := range res.RecipeConfirms {
				hints = append(hints, "read before the recipe: "+c)
			}
			hints = append(hints, "the application in this container is the writer; convert from outside: "+strings.Join(res.Recipe, " ; "))
		}
		if len(res.RecipeTemplates) > 0 {
			hints = append(hints, "the application in this container is the writer; convert from outside with the template above that fits the container")
		}
		return &exitError{code: exitUnsafe, err: errors.New("convert: refused (see above); nothing was changed"), hints: hints}
	}
	return nil
}

// renderConvert writes the text result.
func renderConvert(w io.Writer, r *convert.Result) error {
	var b strings.Builder
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "%s\n", oneLine(p))
	}
	if len(r.Databases) == 0 && len(r.Problems) == 0 {
		b.WriteString("no database found\n")
	}
	for i := range r.Databases {
		renderConvertDB(&b, r, &r.Databases[i])
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", oneLine(n))
	}
	if len(r.Recipe) > 0 || len(r.RecipeTemplates) > 0 {
		b.WriteString("\nThe application in this container has the database open. Convert it from outside the container:\n")
		for _, c := range r.RecipeConfirms {
			fmt.Fprintf(&b, "  (%s)\n", oneLine(c))
		}
		for _, l := range r.Recipe {
			fmt.Fprintf(&b, "  %s\n", oneLine(l))
		}
		for _, t := range r.RecipeTemplates {
			fmt.Fprintf(&b, "  %s:\n", oneLine(t.Note))
			for _, l := range t.Lines {
				fmt.Fprintf(&b, "    %s\n", oneLine(l))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// renderConvertDB writes one database's status line and what follows it:
// refusals, hints, notes, then the facts of what was done.
func renderConvertDB(b *strings.Builder, r *convert.Result, d *convert.Database) {
	mode := d.Before
	if mode == "rollback" {
		mode = "delete"
	}
	fmt.Fprintf(b, "%s: ", oneLine(d.Path))
	switch d.Status {
	case convert.StatusConverted:
		fmt.Fprintf(b, "converted %s -> %s (%s filesystem) in %s\n", mode, d.After, d.Class, d.Duration.Round(time.Millisecond))
	case convert.StatusAlready:
		fmt.Fprintf(b, "already %s: nothing to do\n", r.To)
	case convert.StatusWouldConvert:
		fmt.Fprintf(b, "would convert %s -> %s (%s filesystem); dry run, nothing changed\n", mode, r.To, d.Class)
	case convert.StatusSkipped:
		fmt.Fprintf(b, "skipped\n")
	case convert.StatusRefused:
		fmt.Fprintf(b, "refused, nothing changed\n")
	case convert.StatusFailed:
		fmt.Fprintf(b, "failed: %s\n", oneLine(d.Error))
	}
	for _, rf := range d.Refusals {
		fmt.Fprintf(b, "  %s: %s\n", rf.Reason, oneLine(rf.Message))
		for _, rem := range rf.Remedy {
			fmt.Fprintf(b, "    fix: %s\n", oneLine(rem))
		}
	}
	for _, h := range d.Hints {
		fmt.Fprintf(b, "  hint: %s\n", oneLine(h))
	}
	for _, n := range d.Notes {
		fmt.Fprintf(b, "  note: %s\n", oneLine(n))
	}
	renderConvertFacts(b, d)
}

// renderConvertFacts writes the WAL, backup, checkpoint, times and
// verification lines of d, those that apply.
func renderConvertFacts(b *strings.Builder, d *convert.Database) {
	if d.WAL != nil && d.Status != convert.StatusRefused {
		fmt.Fprintf(b, "  wal: %s, %s\n", count(d.WAL.ValidFrames, "valid frame", "valid frames"), count(d.WAL.CommittedTxns, "committed transaction", "committed transactions"))
	}
	if bk := d.Backup; bk != nil {
		files := "files"
		if len(bk.Files) == 1 {
			files = "file"
		}
		fmt.Fprintf(b, "  backup: %s (%d %s, %d bytes, %s)\n", oneLine(bk.Dir), len(bk.Files), files, bk.Bytes, shortDuration(bk.Duration))
	}
	if ck := d.Checkpoint; ck != nil {
		fmt.Fprintf(b, "  checkpoint: %d of %d frames copied into the database\n", ck.Checkpointed, ck.Log)
	}
	if d.Conversion > 0 {
		var times []string
		if d.WAL != nil {
			times = append(times, "WAL scan "+shortDuration(d.WALScan))
		}
		times = append(times, "conversion "+shortDuration(d.Conversion))
		if d.Verified != nil {
			times = append(times, "verification "+shortDuration(d.Verified.Duration))
		}
		fmt.Fprintf(b, "  times: %s\n", strings.Join(times, ", "))
	}
	if v := d.Verified; v != nil && d.Status == convert.StatusConverted {
		var counts []string
		for _, t := range v.Tables {
			counts = append(counts, fmt.Sprintf("%s %d", oneLine(t.Table), t.After))
		}
		side := ""
		if v.SidecarsGone {
			side = ", no -wal or -shm left"
		}
		fmt.Fprintf(b, "  verified: journal_mode %s, header bytes 18/19 = %d/%d%s, %s %s, row counts unchanged (%s)\n",
			v.JournalMode, v.WriteVersion, v.ReadVersion, side, v.Check, v.CheckResult, strings.Join(counts, ", "))
	}
}

// newProgress returns a Progress hook that, once a database has taken
// longer than 2 s, prints its stage (and the backup's bytes) to w once a
// second, and a stop function.
func newProgress(w io.Writer) (func(path, stage string, done, total int64), func()) {
	var mu sync.Mutex
	var cur, stage string
	var done, total int64
	var start time.Time
	quit := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
			}
			mu.Lock()
			if cur != "" && time.Since(start) > 2*time.Second {
				el := time.Since(start).Round(time.Second)
				if total > 0 && stage == "backup" {
					fmt.Fprintf(w, "preflight: %s: backup %d of %d MiB (%s)\n", cur, done>>20, total>>20, el)
				} else {
					fmt.Fprintf(w, "preflight: %s: %s (%s)\n", cur, stage, el)
				}
			}
			mu.Unlock()
		}
	}()
	return func(path, st string, d, tot int64) {
			mu.Lock()
			defer mu.Unlock()
			if path != cur {
				cur, start = path, time.Now()
			}
			stage, done, total = st, d, tot
		}, func() {
			close(quit)
		}
}

// isTerminal reports whether f is a character device (a terminal; also
// /dev/null, which answers a prompt with EOF: not confirmed).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// convertUnsafe is run's --on-unsafe convert policy (convert.Policy): it
// logs each conversion and each database that could not be converted;
// with --on-unsafe-fallback fail a database left unconverted stops the
// start (exit 3).
func (c *RunCmd) convertUnsafe(g *Globals, r *preflight.Report, opts preflight.Options) error {
	res, stateErrs, err := convert.Policy(g.ctx, r, opts)
	lvl := preflight.LevelWarn
	if c.OnUnsafeFallback == "fail" {
		lvl = preflight.LevelError
	}
	failed := err != nil
	if err != nil {
		id := "convert-failed"
		if g.ctx.Err() != nil {
			id = "convert-interrupted" // stopped during the guard: nothing was touched
		}
		logLine(g.stderr, c.LogFormat, lvl, id, "", "could not convert: "+err.Error(), nil)
	}
	if res != nil {
		for _, d := range res.Databases {
			switch d.Status {
			case convert.StatusConverted:
				msg := fmt.Sprintf("converted from WAL to journal_mode=DELETE before starting the application (%s filesystem, quiet for %s)", d.Class, d.Watched.Round(time.Millisecond))
				if d.Backup != nil {
					msg += "; backup in " + d.Backup.Dir
				}
				for _, n := range d.Notes {
					msg += "; " + n
				}
				logLine(g.stderr, c.LogFormat, preflight.LevelInfo, "converted", d.Path, msg, nil)
			case convert.StatusRefused:
				failed = true
				var why, fix []string
				for _, rf := range d.Refusals {
					why = append(why, rf.Message)
					fix = append(fix, rf.Remedy...)
				}
				logLine(g.stderr, c.LogFormat, lvl, "convert-refused", d.Path, "not converted: "+strings.Join(why, "; "), fix)
			case convert.StatusFailed:
				failed = true
				id := "convert-failed"
				if d.Interrupted {
					id = "convert-interrupted"
				}
				logLine(g.stderr, c.LogFormat, lvl, id, d.Path, "not converted: "+d.Error, d.Hints)
			}
		}
	}
	for _, e := range stateErrs {
		logLine(g.stderr, c.LogFormat, preflight.LevelWarn, "state-not-written", "", e.Error(), nil)
	}
	if failed && c.OnUnsafeFallback == "fail" {
		logLine(g.stderr, c.LogFormat, preflight.LevelError, "start-refused", "", "not starting the application: a database could not be converted (--on-unsafe-fallback fail)", nil)
		return &exitError{code: exitUnsafe}
	}
	return nil
}

// convertedBefore returns the databases converted at an earlier start
// (the data directories' state files), logging unreadable state files.
func convertedBefore(g *Globals, logFormat string, paths []string) []string {
	out, errs := convert.ConvertedBefore(g.ctx, paths)
	for _, e := range errs {
		logLine(g.stderr, logFormat, preflight.LevelWarn, "state-unreadable", "", e.Error(), nil)
	}
	return out
}

// shortDuration rounds d for a human: to the millisecond from 1 ms up, to
// the microsecond below.
func shortDuration(d time.Duration) string {
	if d >= time.Millisecond {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Microsecond).String()
}
