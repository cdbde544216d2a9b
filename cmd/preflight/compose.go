package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/preflight-sqlite/preflight/internal/shell"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// ComposeCmd is `preflight compose`.
type ComposeCmd struct {
	File             []string
	ProjectDirectory string
	ProjectName      string
	Profile          []string
	EnvFile          []string

	DataDir   []string
	Catalogue []string
	Platform  string
	Ignore    []string

	Check        bool
	FailOn       string
	Diff         bool
	Write        bool
	Live         bool
	Format       string
	MigrateImage string

	Docker        string
	DockerTimeout time.Duration
	FSTimeout     time.Duration
}

func newComposeCmd(g *Globals) *cobra.Command {
	c := &ComposeCmd{}
	cmd := &cobra.Command{
		Use:   "compose",
		Short: "Find SQLite data on unsafe mounts in a compose project, and fix it.",
		Long: wrap("Find SQLite data on unsafe mounts in a compose project, propose the named-volume rewrite with its data migration, "+
			"and gate CI (exit 3 on an error-level finding; --fail-on warn: 4 on warnings).", 0, helpWidth),
		Example: examples["compose"],
		Hidden:  !compose.Built,
		Args:    cobra.NoArgs,
		RunE:    func(*cobra.Command, []string) error { return c.Run(g) },
	}
	fs := cmd.Flags()
	sliceVar(fs, &c.File, "file", "f", "Compose `FILE`, merged in order (repeatable; default: compose.yaml, docker-compose.yml, ... and its override, or COMPOSE_FILE).")
	fs.StringVar(&c.ProjectDirectory, "project-directory", "", "Working directory of the project, `DIR` (default: the first file's directory).")
	fs.StringVarP(&c.ProjectName, "project-name", "p", "", "Project `NAME` (default: name:, COMPOSE_PROJECT_NAME or the directory's name).")
	sliceVar(fs, &c.Profile, "profile", "", "Enable profile `PROFILE` (repeatable; default COMPOSE_PROFILES).")
	sliceVar(fs, &c.EnvFile, "env-file", "", "Interpolation variables from `FILE` instead of the project's .env (repeatable).")

	sliceVar(fs, &c.DataDir, "data-dir", "", "Container path `TARGET` that holds SQLite data, in every service that mounts it, or SERVICE:TARGET (repeatable).")
	sliceVar(fs, &c.Catalogue, "catalogue", "", "More catalogue entries from `FILE` (the format of the built-in compose/catalogue.yaml), matched before the built-in ones (repeatable).")
	enumVar(fs, &c.Platform, "platform", "", "Judge binds for this engine: desktop (binds cross a VM) or linux (native). Default: ask the engine through the Docker API; when it does not answer, assume either.", "", "desktop", "linux")
	sliceVar(fs, &c.Ignore, "ignore", "", "Demote finding `ID` to info (repeatable).")

	boolVar(fs, &c.Check, "check", "", "Accepted for scripts and changes nothing: every run is the CI gate and exits by the verdict at --fail-on's level (default error: 3 on an error-level finding, 0 on warnings only).")
	enumVar(fs, &c.FailOn, "fail-on", "error", "Lowest level that makes the exit code non-zero (3 on an error-level finding; 4 on warnings with --fail-on warn), judged on the project as it is after the command (--write: as written).", "warn", "error", "never")
	boolVar(fs, &c.Diff, "diff", "", "Print the rewrite as a unified diff instead of the suggestions.")
	boolVar(fs, &c.Write, "write", "", "Edit the compose files in place (each saved first as FILE.bak), after checking the result loads.")
	cmd.MarkFlagsMutuallyExclusive("diff", "write")
	boolVar(fs, &c.Live, "live", "", "Also ask the engine for the project's running containers (label com.docker.compose.project): their actual sources and other containers writing them.")
	enumVar(fs, &c.Format, "format", "text", "Output format: text, json (schema preflight/v1, the compose field) or sarif (SARIF 2.1.0: each finding at the line that declares its mount).", "text", "json", "sarif")
	fs.StringVar(&c.MigrateImage, "migrate-image", "", "`IMAGE` with preflight for the printed migration command, when the service's image does not run preflight (default: ghcr.io/preflight-sqlite/preflight:VERSION, this release; a development build needs it given).")

	enumVar(fs, &c.Docker, "docker", "auto", "Ask the Docker Engine API which engine runs binds: auto or off.", "auto", "off")
	fs.DurationVar(&c.DockerTimeout, "docker-timeout", 2*time.Second, "Longest wait for the Docker Engine API.")
	flagGroup(fs, dockerFlags, "docker", "docker-timeout")
	fs.DurationVar(&c.FSTimeout, "fs-timeout", 5*time.Second, "Longest wait for a bind source to answer a stat and a directory read (a stuck FUSE daemon or NFS server); one that does not is left unread and reported.")
	return cmd
}

// Run analyses the project and prints the report with the rewrite
// suggestions, the diff, or writes the files.
func (c *ComposeCmd) Run(g *Globals) error {
	if !compose.Built {
		return &exitError{code: exitInternal, err: compose.ErrNotBuilt, hints: []string{"the image's binary leaves compose out to start faster; build the full binary with scripts/build.sh (bin/preflight) and run it where the compose files are"}}
	}
	if c.Live && c.Docker == "off" {
		return usageError(errors.New("--live needs the Docker Engine API; drop --docker off"))
	}
	opts, err := c.options(g)
	if err != nil {
		return err
	}
	res, err := preflight.CheckCompose(g.ctx, opts)
	if err != nil {
		if errors.Is(err, preflight.ErrComposeInput) {
			return usageError(err, "run docker compose config with the same flags to see how Compose reads the project")
		}
		return err
	}
	warnLoader(g, res.Report.Compose)
	r, a := res.Report, res.Report.Compose
	switch {
	case c.Write:
		for _, rw := range a.Rewrites {
			if rw.MigrateNeedsImage {
				return usageError(fmt.Errorf("plan the migration of %s:%s: %w: --migrate-image must be given", rw.Service, rw.Target, compose.ErrNoMigrateImage), noImageHint())
			}
		}
		if r, err = c.write(g, opts, res); err != nil {
			return err
		}
	case c.Diff:
		d, err := compose.UnifiedDiff(res.Edits, a.WorkingDir)
		if err != nil {
			return err
		}
		if _, err := io.WriteString(g.stdout, d); err != nil {
			return err
		}
	default:
		if err := renderCompose(g.stdout, r, c.Format, c.FailOn); err != nil {
			return err
		}
	}
	if code := verdictCode(r.Verdict, c.FailOn); code != exitOK {
		return &exitError{code: code}
	}
	return nil
}

// options are the compose command's flags as preflight.ComposeOptions.
func (c *ComposeCmd) options(g *Globals) (preflight.ComposeOptions, error) {
	opts := preflight.ComposeOptions{
		Load: compose.LoadOptions{Files: c.File, ProjectDirectory: c.ProjectDirectory, ProjectName: c.ProjectName,
			Profiles: c.Profile, EnvFiles: c.EnvFile},
		DataDirs: c.DataDir, Platform: c.Platform, Live: c.Live, Ignore: c.Ignore,
		Docker:    docker.Options{Mode: docker.Mode(c.Docker), Timeout: c.DockerTimeout},
		FSTimeout: c.FSTimeout,
		Plan:      compose.PlanOptions{ComposeArgs: c.composeArgs(), MigrateImage: nonEmpty(c.MigrateImage, releaseImage(buildVersion()))},
	}
	if g.Mountinfo != "" {
		t, err := mounts.ReadFile(g.Mountinfo)
		if err != nil {
			return opts, usageError(err)
		}
		opts.HostMounts = t
	}
	for _, f := range c.Catalogue {
		cat, err := compose.ReadCatalogue(f)
		if err != nil {
			return opts, usageError(err)
		}
		opts.Catalogue = cat.Merge(opts.Catalogue)
	}
	return opts, nil
}

// write applies res's edits (--write), verifies the project as written,
// renders it with what was rewritten, and returns the report to judge the
// exit by: the project's as written. A risky mount left unedited is an
// error.
func (c *ComposeCmd) write(g *Globals, opts preflight.ComposeOptions, res *preflight.ComposeResult) (*preflight.Report, error) {
	r, a := res.Report, res.Report.Compose
	if err := writeEdits(g, res.Edits, func() error {
		l, err := compose.Load(g.ctx, opts.Load)
		if err != nil {
			return err
		}
		return a.Verify(l.Project)
	}); err != nil {
		return nil, err
	}
	// Show the project as written, with what was rewritten.
	if len(res.Edits) > 0 {
		again, err := preflight.CheckCompose(g.ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("check the rewritten project: %w", err)
		}
		again.Report.Compose.Written = a.Rewrites
		r = again.Report
	}
	if err := renderCompose(g.stdout, r, c.Format, c.FailOn); err != nil {
		return nil, err
	}
	var notEdited []string
	for _, rw := range a.Rewrites {
		if rw.Refused != "" {
			notEdited = append(notEdited, fmt.Sprintf("%s %s", rw.Service, rw.Target))
		}
	}
	if len(notEdited) > 0 {
		return nil, &exitError{code: exitInternal, err: fmt.Errorf("compose --write: %d risky mounts were not edited (%s)", len(notEdited), strings.Join(notEdited, ", ")),
			hints: []string{"edit them by hand as suggested above"}}
	}
	return r, nil
}

// warnLoader prints Compose's loader warnings as preflight's own warning
// lines on stderr (they are in the JSON too: compose.warnings).
func warnLoader(g *Globals, a *compose.Analysis) {
	for _, w := range a.Warnings {
		fmt.Fprintf(g.stderr, "preflight: warning: compose: %s\n", w)
	}
}

// composeArgs are the project-selecting flags as given, for the printed
// docker compose commands.
func (c *ComposeCmd) composeArgs() string {
	var out []string
	for _, f := range c.File {
		out = append(out, "-f", shell.Quote(f))
	}
	if c.ProjectDirectory != "" {
		out = append(out, "--project-directory", shell.Quote(c.ProjectDirectory))
	}
	if c.ProjectName != "" {
		out = append(out, "-p", shell.Quote(c.ProjectName))
	}
	for _, p := range c.Profile {
		out = append(out, "--profile", shell.Quote(p))
	}
	for _, e := range c.EnvFile {
		out = append(out, "--env-file", shell.Quote(e))
	}
	return strings.Join(out, " ")
}

// writeEdits writes every edit (each file first saved as FILE.bak), then
// runs verify on the files as written; when it fails, every file is put
// back as it was. Every file is checked first (compose.CheckWrite): one
// that another user could redirect is refused before anything is written.
func writeEdits(g *Globals, edits []compose.FileEdit, verify func() error) error {
	for _, e := range edits {
		if err := compose.CheckWrite(e); err != nil {
			return unsafeWrite(err)
		}
	}
	var done []compose.FileEdit
	restore := func() {
		for _, e := range done {
			if err := compose.RestoreEdit(e); err != nil {
				fmt.Fprintf(g.stderr, "preflight: error: %v (the original is %s)\n", err, e.Backup)
			}
		}
	}
	for i := range edits {
		if err := compose.WriteEdit(&edits[i]); err != nil {
			restore()
			return unsafeWrite(err)
		}
		done = append(done, edits[i])
	}
	if err := verify(); err != nil {
		restore()
		return fmt.Errorf("the rewritten project does not check out, files restored: %w", err)
	}
	for _, e := range edits {
		fmt.Fprintf(g.stderr, "preflight: wrote %s (the original is %s)\n", e.File, e.Backup)
	}
	return nil
}

// unsafeWrite gives a compose.UnsafeWriteError exit 2 and the hint to run
// as the project's owner; other errors are returned as they are.
func unsafeWrite(err error) error {
	var ue *compose.UnsafeWriteError
	if !errors.As(err, &ue) {
		return err
	}
	who := "OWNER"
	if ue.Owner > 0 {
		who = "#" + strconv.Itoa(ue.Owner)
		if u, err := user.LookupId(strconv.Itoa(ue.Owner)); err == nil {
			who = u.Username
		}
	}
	return usageError(fmt.Errorf("compose --write: %w; nothing was written", err),
		"run it as the project's owner, who can write these files safely: sudo -u "+who+" preflight compose --write")
}

func renderCompose(w io.Writer, r *preflight.Report, format, failOn string) error {
	if format == "sarif" {
		return renderSARIF(w, r)
	}
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	var b strings.Builder
	a := r.Compose
	fmt.Fprintf(&b, "project %s (%s)\n", a.Project, strings.Join(relAll(a.Files, a.WorkingDir), ", "))
	switch a.Platform.How {
	case "engine":
		fmt.Fprintf(&b, "engine: %s: binds are %s\n", a.Platform.Engine, platformWords(a.Platform.Kind))
	case "flag":
		fmt.Fprintf(&b, "platform: --platform %s: binds are %s\n", a.Platform.Kind, platformWords(a.Platform.Kind))
	default:
		fmt.Fprintf(&b, "engine: unknown (Docker API: %s): binds judged for both a VM engine and native Linux\n", r.Probes["docker"])
	}
	b.WriteString("\n")
	if err := renderMounts(&b, a); err != nil {
		return err
	}
	renderFindings(&b, r.Findings, func(s string) string { return s })
	if len(a.NotJudged) > 0 {
		fmt.Fprintf(&b, "\nnot judged: %d read-write bind mounts whose content is unknown, of services whose images are not in the catalogue (declare data directories with --data-dir or label %s):\n", len(a.NotJudged), compose.LabelDataDir)
		for _, n := range a.NotJudged {
			fmt.Fprintf(&b, "  %s (%s): %s\n", n.Mount, rel(n.Source, a.WorkingDir), n.Why)
		}
	}
	renderPossible(&b, a)
	renderWarnExit(&b, r.Verdict, failOn)
	if len(a.Written) > 0 {
		b.WriteString("\nrewritten (the table and findings above are the project as written):\n")
		renderRewrites(&b, a.Written, a.WorkingDir)
	}
	if len(a.Rewrites) > 0 {
		b.WriteString("\nsuggested rewrite (preflight compose --diff shows it, --write applies it):\n")
		renderRewrites(&b, a.Rewrites, a.WorkingDir)
	}
	fmt.Fprintf(&b, "\nverdict: %s\n", r.Verdict)
	_, err := io.WriteString(w, b.String())
	return err
}

// renderPossible writes which read-write binds are only possibly data
// directories (compose.Possible: a usual data-directory target of an image
// the catalogue does not know): the rules cap their findings at warn,
// which the default --fail-on error passes, so a CI gate must not read
// the exit code as "safe" for them.
func renderPossible(b *strings.Builder, a *compose.Analysis) {
	unjudged := map[string]bool{}
	for _, n := range a.NotJudged {
		unjudged[n.Mount] = true
	}
	var ms []*compose.Mount
	for i := range a.Mounts {
		if m := &a.Mounts[i]; m.DataDir && m.Confidence == compose.Possible && m.Type == "bind" && m.ReadWrite && !unjudged[m.Key()] {
			ms = append(ms, m)
		}
	}
	if len(ms) > 0 {
		fmt.Fprintf(b, "\nnot judged safe: %d read-write bind %s only possibly a data directory (a usual data-directory target; no image in the catalogue says so), so findings on %s are at most warnings:\n",
			len(ms), plural(len(ms), "mount is", "mounts are"), plural(len(ms), "it", "them"))
		for _, m := range ms {
			why := "no SQLite database found in it here"
			switch {
			case m.SourceMissing:
				why = "the source does not exist on this machine, so its content is unknown"
			case m.HostFSError != "":
				why = "its filesystem was not checked: " + m.HostFSError
			}
			fmt.Fprintf(b, "  %s (%s): %s\n", m.Key(), rel(m.Source, a.WorkingDir), why)
		}
		fmt.Fprintf(b, "declare each data directory (label %s: %s, or --data-dir %s) to judge it as one\n", compose.LabelDataDir, ms[0].Target, ms[0].Key())
	}
}

// renderWarnExit says, under a warn verdict, what the warnings do to the
// exit code, so that a CI user does not read exit 0 as "safe".
func renderWarnExit(b *strings.Builder, v preflight.Verdict, failOn string) {
	if v != preflight.VerdictWarn {
		return
	}
	switch failOn {
	case "error":
		b.WriteString("these are warnings: they exit 0 under --fail-on error (the default); a CI gate that must fail on them takes --fail-on warn (exit 4)\n")
	case "warn":
		b.WriteString("these are warnings: --fail-on warn fails on them (exit 4)\n")
	}
}

// renderMounts writes the table of the project's service mounts: where
// each comes from, whether it holds SQLite data and by which rule, and its
// findings.
func renderMounts(b *strings.Builder, a *compose.Analysis) error {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tTYPE\tSOURCE\tTARGET\tRW\tDATA\tRULE\tFINDINGS")
	for _, m := range a.Mounts {
		src := m.Source
		if m.RawSource != "" {
			src = m.RawSource
		}
		if m.Type == "bind" {
			src = rel(src, a.WorkingDir)
		}
		if src == "" {
			src = "-"
		}
		data := "-"
		if m.DataDir {
			data = string(m.Confidence)
		} else if m.NotData != "" {
			data = "no: " + m.NotData
		}
		rule := m.Rule
		if m.App != nil && m.Rule == compose.RuleCatalogue {
			rule += ":" + m.App.Name
		}
		if rule == "" {
			rule = "-"
		}
		rw := "ro"
		if m.ReadWrite {
			rw = "rw"
		}
		fs := strings.Join(m.Findings, ",")
		if fs == "" {
			fs = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Service, m.Type, src, m.Target, rw, data, rule, fs)
		for _, l := range m.Live {
			fmt.Fprintf(tw, "  live\t%s\t%s\t%s\t%v\t\t%s\t\n", l.Type, l.Source, m.Target, rwWord(l.RW), l.Container)
		}
	}
	return tw.Flush()
}

// renderRewrites writes each rewrite with its migration commands.
func renderRewrites(b *strings.Builder, rws []compose.Rewrite, dir string) {
	for _, rw := range rws {
		from := rw.From
		if rw.Default != "" {
			from += " (default " + rw.Default + ")"
		}
		fmt.Fprintf(b, "  %s:%d: %s %s: source %s -> named volume %s", rel(rw.File, dir), rw.Line, rw.Service, rw.Target, from, rw.Volume)
		if rw.VolumeFile != "" {
			fmt.Fprintf(b, " (declared in %s)", rel(rw.VolumeFile, dir))
		}
		b.WriteString("\n")
		if rw.Refused != "" {
			fmt.Fprintf(b, "    not edited automatically: %s\n", rw.Refused)
		}
		for _, lb := range rw.LeftBehind {
			fmt.Fprintf(b, "    not moved: %s keeps the old directory, not the volume; give it the volume too, or move it by hand\n", lb)
		}
		if rw.SameAs != "" {
			fmt.Fprintf(b, "    %s\n", rw.SameAs)
			continue
		}
		if rw.Note != "" {
			fmt.Fprintf(b, "    note: %s\n", rw.Note)
		}
		if rw.MigrateNeedsImage {
			fmt.Fprintf(b, "    then move the data once (old bind %s at /from, volume %s at /to): the commands need an image with preflight, which this build cannot name; give --migrate-image IMAGE to print them\n", rw.HostPath, rw.VolumeName)
			continue
		}
		fmt.Fprintf(b, "    then move the data once (old bind %s at /from, volume %s at /to):\n", rw.HostPath, rw.VolumeName)
		for _, cmd := range rw.Migrate {
			fmt.Fprintf(b, "      %s\n", cmd)
		}
	}
}

func platformWords(kind string) string {
	if kind == compose.PlatformDesktop {
		return "shares across a VM boundary"
	}
	return "host directories"
}

func rwWord(rw bool) string {
	if rw {
		return "rw"
	}
	return "ro"
}

func rel(p, dir string) string {
	if r, err := filepath.Rel(dir, p); err == nil && !strings.HasPrefix(r, "..") && filepath.IsAbs(p) {
		if r == "." {
			return "."
		}
		return "./" + r
	}
	return p
}

func relAll(ps []string, dir string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = rel(p, dir)
	}
	return out
}

// noImageHint says why a development build names no image for the
// migration commands, and what to give instead.
func noImageHint() string {
	return fmt.Sprintf("this build's version, %s, is not a release's, so no released image matches it: give --migrate-image IMAGE, an image with /preflight (scripts/build.sh && docker build -t preflight . builds one: --migrate-image preflight), or a release's ghcr.io/preflight-sqlite/preflight:VERSION", buildVersion())
}
