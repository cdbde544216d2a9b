package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/probe/docker"
)

// AuditCmd is `preflight audit`.
type AuditCmd struct {
	All           bool
	Format        string
	FailOn        string
	Ignore        []string
	MaxDepth      int
	FSTimeout     time.Duration
	DockerTimeout time.Duration
}

func newAuditCmd(g *Globals) *cobra.Command {
	c := &AuditCmd{}
	cmd := &cobra.Command{
		Use:     "audit",
		Short:   "Audit this Docker engine's containers for SQLite data at risk.",
		Long:    wrap("Audit every container of this Docker engine: each mount that holds SQLite data, its class, journal modes, other writers and Swarm services, with one verdict per container.", 0, helpWidth),
		Example: examples["audit"],
		Args:    cobra.NoArgs,
		RunE:    func(*cobra.Command, []string) error { return c.Run(g) },
	}
	fs := cmd.Flags()
	boolVar(fs, &c.All, "all", "", "Audit stopped containers too (created, exited, dead: each writes its data again once started).")
	envFor(fs, "all", "PREFLIGHT_AUDIT_ALL")
	enumVar(fs, &c.Format, "format", "text", "Output format: text, json (schema preflight-audit/v1) or sarif (SARIF 2.1.0).", "text", "json", "sarif")
	enumVar(fs, &c.FailOn, "fail-on", "warn", "Lowest level that makes the exit code non-zero: warn, error or never.", "warn", "error", "never")
	sliceVar(fs, &c.Ignore, "ignore", "", "Demote finding `ID` to info (repeatable).")
	fs.IntVar(&c.MaxDepth, "max-depth", 2, "How many directory levels below each mount to search for databases.")
	fs.DurationVar(&c.FSTimeout, "fs-timeout", 5*time.Second, "Longest wait for a mount to answer a stat and a directory read (a stuck FUSE daemon or NFS server, a container root on FUSE).")
	fs.DurationVar(&c.DockerTimeout, "docker-timeout", 10*time.Second, "Longest wait for the Docker Engine API, every request of the audit together.")
	flagGroup(fs, dockerFlags, "docker-timeout")
	return cmd
}

// Run audits every container of the engine, renders the report and exits
// by the worst verdict.
func (c *AuditCmd) Run(g *Globals) error {
	if err := needsLinux("audit", false); err != nil {
		return err
	}
	if c.DockerTimeout <= 0 {
		return usageError(fmt.Errorf("--docker-timeout %s: must be positive", c.DockerTimeout))
	}
	if c.MaxDepth < 1 {
		return usageError(fmt.Errorf("--max-depth %d: must be at least 1", c.MaxDepth))
	}
	ar, err := preflight.Audit(g.ctx, preflight.AuditOptions{
		All: c.All, Docker: docker.Options{Timeout: c.DockerTimeout}, MaxDepth: c.MaxDepth,
		FSTimeout: c.FSTimeout, Ignore: c.Ignore,
	})
	if err := g.ctx.Err(); err != nil {
		return fmt.Errorf("audit: interrupted: %w", context.Cause(g.ctx))
	}
	if err != nil {
		return err
	}
	if ar.Docker != docker.StatusRan {
		return &exitError{code: exitInternal, err: fmt.Errorf("audit: docker %s at %s: %s", ar.Docker, ar.Endpoint.Host, ar.DockerError),
			hints: []string{"set DOCKER_HOST or a docker context; or run as root on the engine host, or as a container with the socket: docker run --rm --pid host --user 0 --cap-add SYS_PTRACE -v /var/run/docker.sock:/var/run/docker.sock:ro ghcr.io/preflight-sqlite/preflight audit"}}
	}
	switch c.Format {
	case "json":
		err = writeJSON(g, ar)
	case "sarif":
		err = renderAuditSARIF(g.stdout, ar)
	default:
		err = renderAuditText(g.stdout, ar)
	}
	if err != nil {
		return err
	}
	if code := verdictCode(ar.Verdict, c.FailOn); code != exitOK {
		return &exitError{code: code}
	}
	return nil
}

// auditEntry is one row group of the audit's outputs: a container, or a
// Swarm service with no container here.
type auditEntry struct {
	name, svc, image string // the table's first three columns
	title            string // the findings' heading: "NAME (IMAGE)"
	prefix           string // SARIF messages start with it
	mounts           []preflight.AuditMount
	report           *preflight.Report
	verdict          preflight.Verdict
}

// auditEntries are ar's containers, then its services.
func auditEntries(ar *preflight.AuditReport) []auditEntry {
	var out []auditEntry
	for _, ac := range ar.Containers {
		ct := ac.Container
		svc := "-"
		switch {
		case ct.ComposeProject != "":
			svc = ct.ComposeProject + "/" + ct.ComposeService
		case ct.SwarmService != "":
			svc = "swarm/" + ct.SwarmService
		}
		out = append(out, auditEntry{name: ct.Name, svc: svc, image: ct.Image, title: oneLine(ct.Name) + " (" + oneLine(ct.Image) + ")",
			prefix: "container " + ct.Name + ": ", mounts: ac.Mounts, report: ac.Report, verdict: ac.Verdict})
	}
	for _, as := range ar.Services {
		s := as.Service
		out = append(out, auditEntry{name: "-", svc: "swarm/" + s.Name, image: s.Image,
			title:  "service " + oneLine(s.Name) + " (" + oneLine(s.Image) + ", no task on this node)",
			prefix: "service " + s.Name + ": ", mounts: as.Mounts, report: as.Report, verdict: as.Verdict})
	}
	return out
}

// renderAuditText writes the table (one row per mount holding SQLite
// data), then each container's and service's findings with their
// remedies.
func renderAuditText(w io.Writer, ar *preflight.AuditReport) error {
	var b strings.Builder
	if e := ar.Engine; e != nil {
		fmt.Fprintf(&b, "engine: %s %s (API %s) at %s\n", e.Kind, e.Version, e.APIVersion, ar.Endpoint.Host)
	}
	fmt.Fprintf(&b, "seen from: %s\n\n", seenFrom(ar))
	entries := auditEntries(ar)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTAINER\tPROJECT/SERVICE\tIMAGE\tMOUNT\tCLASS\tDATABASES\tVERDICT\tFIRST FINDING")
	for _, e := range entries {
		first := "-"
		for _, f := range e.report.Findings {
			if f.Level != preflight.LevelInfo {
				first = string(f.ID)
				break
			}
		}
		for i, m := range e.mounts {
			d := e.report.DataDirs[i]
			class := string(m.Class)
			if class == "" {
				class = "unknown"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(e.name), cell(e.svc), cell(e.image),
				cell(mountLabel(m)), class, cell(auditDatabases(m, d)), e.verdict, first)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, e := range entries {
		var nb strings.Builder
		for _, m := range e.mounts {
			if m.NotInspected != "" {
				fmt.Fprintf(&nb, "  %s: not inspected: %s\n", oneLine(m.Destination), oneLine(m.NotInspected))
			}
		}
		var fb strings.Builder
		var fs []preflight.Finding
		for _, f := range e.report.Findings {
			if f.Level != preflight.LevelInfo || f.Ignored {
				fs = append(fs, f)
			}
		}
		renderFindings(&fb, fs, oneLine)
		if nb.Len() == 0 && len(fs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s: %s\n", e.title, e.verdict)
		b.WriteString(nb.String())
		b.WriteString(strings.TrimPrefix(fb.String(), "\n"))
	}
	where := count(len(ar.Containers), "container", "containers")
	if len(ar.Services) > 0 {
		where += " and " + count(len(ar.Services), "Swarm service", "Swarm services") + " with no task here"
	}
	fmt.Fprintf(&b, "\n%s in %s; verdict: %s\n", count(mountsOf(ar), "mount with SQLite data", "mounts with SQLite data"), where, ar.Verdict)
	_, err := io.WriteString(w, b.String())
	return err
}

// cellWidth is the most runes a table cell shows; the JSON keeps the
// full value.
const cellWidth = 48

// cell is s on one escaped line, cut to cellWidth runes with an ellipsis,
// so that one long name or label cannot widen every row of the table.
func cell(s string) string {
	s = oneLine(s)
	if utf8.RuneCountInString(s) <= cellWidth {
		return s
	}
	r := []rune(s)
	return string(r[:cellWidth-1]) + "…"
}

// seenFrom says what this audit could read: the engine host's paths, the
// containers' roots, or neither.
func seenFrom(ar *preflight.AuditReport) string {
	switch {
	case ar.OnEngineHost:
		return "the engine host (bind sources and volumes read by their host paths)"
	case ar.HostPID:
		return "the host's PID namespace (each container's files read through /proc/PID/root)"
	}
	return "neither the engine host's paths nor its processes: mounts are judged from the engine's answer and the catalogue only (run with --pid host to read them)"
}

func mountsOf(ar *preflight.AuditReport) int {
	n := 0
	for _, e := range auditEntries(ar) {
		n += len(e.mounts)
	}
	return n
}

// mountLabel is DEST<-SOURCE for a bind, DEST<-vol:NAME for a volume.
func mountLabel(m preflight.AuditMount) string {
	switch {
	case m.Mount == nil:
		return m.Destination + " (no mount)"
	case m.Mount.Type == docker.MountVolume:
		return m.Destination + " <- vol:" + m.Mount.Name
	case m.Mount.Type == docker.MountTmpfs:
		return m.Destination + " (tmpfs)"
	}
	return m.Destination + " <- " + m.Mount.Source
}

// auditDatabases is "name MODE, ..." for the table, or why there is none.
func auditDatabases(m preflight.AuditMount, d preflight.DataDir) string {
	switch {
	case m.NotInspected != "":
		return "not inspected"
	case d.Unresponsive != "":
		return "not inspected (does not answer)"
	case d.StatError != "":
		return "not inspected (unreadable)"
	case len(d.Databases) == 0:
		return "none yet"
	}
	var parts []string
	for _, db := range d.Databases {
		if db.NotSQLite {
			continue
		}
		name := strings.TrimPrefix(strings.TrimPrefix(db.Path, d.Path), "/")
		if name == "" {
			name = db.Path[strings.LastIndex(db.Path, "/")+1:]
		}
		parts = append(parts, oneLine(name)+" "+dbMode(db))
	}
	if len(parts) > 3 {
		parts = append(parts[:3], fmt.Sprintf("+%d", len(parts)-3))
	}
	return strings.Join(parts, ", ")
}

// renderAuditSARIF writes every container's and service's findings as one
// SARIF run: each message starts with the container's (or service's)
// name, and points at the path the finding is about.
func renderAuditSARIF(w io.Writer, ar *preflight.AuditReport) error {
	merged := &preflight.Report{Verdict: ar.Verdict, Findings: []preflight.Finding{}}
	for _, e := range auditEntries(ar) {
		for _, f := range e.report.Findings {
			f.Message = e.prefix + f.Message
			if f.Path == "" && len(e.report.DataDirs) > 0 {
				f.Path = e.report.DataDirs[0].Path
			}
			merged.Findings = append(merged.Findings, f)
		}
	}
	return renderSARIF(w, merged)
}
