package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/internal/shell"
	"github.com/preflight-sqlite/preflight/manifest"
)

// KubeCmd is `preflight kube`.
type KubeCmd struct {
	File      []string
	Recursive bool
	DataClaim []string
	Catalogue []string
	Ignore    []string
	FailOn    string
	Format    string
}

func newKubeCmd(g *Globals) *cobra.Command {
	c := &KubeCmd{}
	cmd := &cobra.Command{
		Use:   "kube -f FILE|DIR|-",
		Short: "Lint Kubernetes manifests for SQLite data two pods can write.",
		Long: wrap("Lint Kubernetes manifests (files, directories, or - for helm template / kubectl kustomize output) for SQLite data that more than one pod can write: "+
			"rolling updates, replicas, DaemonSets, shared and ReadWriteMany network claims; each finding with a JSON merge patch.", 0, helpWidth),
		Example: examples["kube"],
		Hidden:  !manifest.Built,
		Args:    subcommandArgs,
		RunE:    func(*cobra.Command, []string) error { return c.Run(g) },
	}
	fs := cmd.Flags()
	sliceVar(fs, &c.File, "file", "f", "Manifests to read, `FILE|DIR|-`: a file of one or more YAML or JSON documents, a directory (its .yaml, .yml and .json files), or - for standard input (helm template ... | preflight kube -f -). Repeatable.")
	_ = cmd.MarkFlagRequired("file")
	boolVar(fs, &c.Recursive, "recursive", "R", "Also read the manifest files of the subdirectories of each directory given with -f, as kubectl apply -R.")
	sliceVar(fs, &c.DataClaim, "data-claim", "", "A PersistentVolumeClaim `[NAMESPACE/]CLAIM` (or a StatefulSet's volumeClaimTemplate) that holds SQLite data, whatever image mounts it (repeatable).")
	sliceVar(fs, &c.Catalogue, "catalogue", "", "More catalogue entries from `FILE` (the format of the built-in compose/catalogue.yaml), matched before the built-in ones (repeatable).")
	sliceVar(fs, &c.Ignore, "ignore", "", "Demote finding `ID` to info (repeatable).")
	enumVar(fs, &c.FailOn, "fail-on", "error", "Lowest level that makes the exit code non-zero (3 on an error-level finding; 4 on warnings with --fail-on warn).", "warn", "error", "never")
	enumVar(fs, &c.Format, "format", "text", "Output format: text, json (schema preflight/v1, the manifests field; each finding's patch) or sarif (SARIF 2.1.0: each finding at the object it patches).", "text", "json", "sarif")
	cmd.AddCommand(newKubePolicyCmd(g), newKubeAuditCmd(g))
	return cmd
}

// loadManifests is manifest.Load of files and standard input, given up
// when ctx ends: a FIFO (-f <(cmd)) or a standard input that never ends
// blocks in open or read, which no deadline reaches.
func loadManifests(ctx context.Context, files []string, recursive bool) ([]manifest.Object, []string, error) {
	type loaded struct {
		objs  []manifest.Object
		files []string
		err   error
	}
	ch := make(chan loaded, 1)
	go func() {
		load := manifest.Load
		if recursive {
			load = manifest.LoadRecursive
		}
		o, f, err := load(files, os.Stdin)
		ch <- loaded{o, f, err}
	}()
	select {
	case l := <-ch:
		return l.objs, l.files, l.err
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

// needManifests is the error of kube and its subcommands in the image's
// binary (-tags nocompose), which has neither the manifest reader nor the
// catalogue; nil in the full build.
func needManifests() error {
	if manifest.Built {
		return nil
	}
	return &exitError{code: exitInternal, err: manifest.ErrNotBuilt, hints: []string{"the image's binary leaves manifest reading and the catalogue out; build the full binary with scripts/build.sh (bin/preflight) and run it where the manifests are"}}
}

// loadHints say what to do about the manifests Load refused: empty input
// (a renderer that failed in a pipe), a directory whose manifests are in
// subdirectories, a document without kind (Helm values).
func loadHints(err error, inputs []string) []string {
	var nm *manifest.NoManifestsError
	switch {
	case errors.Is(err, manifest.ErrEmpty) && slices.Contains(inputs, "-"):
		return []string{"the command that renders the manifests printed nothing: check its errors, or run with set -o pipefail so that its failure fails the pipe"}
	case errors.Is(err, manifest.ErrEmpty):
		return []string{"the files hold only comments or empty documents: give the rendered manifests (kubectl kustomize DIR or helm template ... | preflight kube -f -)"}
	case errors.As(err, &nm) && len(nm.Subdirs) > 0:
		dirs := make([]string, len(nm.Subdirs))
		for i, d := range nm.Subdirs {
			dirs[i] = "-f " + shell.Quote(filepath.Join(nm.Dir, d))
		}
		return []string{"its subdirectories hold manifests: " + strings.Join(nm.Subdirs, ", ") + "; -f takes several paths (" + strings.Join(dirs, " ") + "), or -R reads the subdirectories"}
	case errors.Is(err, manifest.ErrNoKind):
		return []string{"a document without kind is not a Kubernetes object; if it is Helm values (values.yaml), render the chart first: helm template RELEASE CHART -f values.yaml | preflight kube -f -"}
	}
	return nil
}

// Run reads the manifests, judges them and prints the report.
func (c *KubeCmd) Run(g *Globals) error {
	if err := needManifests(); err != nil {
		return err
	}
	objs, files, err := loadManifests(g.ctx, c.File, c.Recursive)
	if g.ctx.Err() != nil {
		return fmt.Errorf("kube: interrupted: %w", context.Cause(g.ctx))
	}
	if err != nil {
		return usageError(err, loadHints(err, c.File)...)
	}
	opts := preflight.KubeOptions{Objects: objs, Files: files, DataClaims: c.DataClaim, Ignore: c.Ignore}
	for _, f := range c.Catalogue {
		cat, err := compose.ReadCatalogue(f)
		if err != nil {
			return usageError(err)
		}
		opts.Catalogue = cat.Merge(opts.Catalogue)
	}
	r, err := preflight.CheckKube(opts)
	if err != nil {
		if errors.Is(err, preflight.ErrKubeInput) {
			return usageError(err)
		}
		return err
	}
	for _, dc := range r.Manifests.DataClaimsUnused {
		fmt.Fprintf(g.stderr, "preflight: warning: --data-claim %s: no workload in the input mounts that claim\n", dc)
	}
	if err := renderKube(g.stdout, r, c.Format); err != nil {
		return err
	}
	if code := verdictCode(r.Verdict, c.FailOn); code != exitOK {
		return &exitError{code: code}
	}
	return nil
}

// renderKube writes the report: a table of the workload volumes (but
// configMaps, secrets and other volumes that hold no SQLite data), then
// the findings with their fixes and patches; or JSON, or SARIF.
func renderKube(w io.Writer, r *preflight.Report, format string) error {
	switch format {
	case "sarif":
		return renderSARIF(w, r)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	a := r.Manifests
	var b strings.Builder
	from := "manifests"
	if _, ok := r.Probes[preflight.ProbeKubeAudit]; ok {
		from = "cluster" // kube audit: Files is the API server
	}
	fmt.Fprintf(&b, "%s: %s (%s, %s)\n\n", from, strings.Join(a.Files, ", "), count(a.Objects, "object", "objects"), count(len(a.Workloads), "workload", "workloads"))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tVOLUME\tSOURCE\tCLASS\tMODES\tPATHS\tRW\tDATA")
	for _, m := range a.Mounts {
		if m.Source == "other" && !m.SQLite {
			continue // configMap, secret, projected: not data
		}
		src, class, modes := m.Source, string(m.Storage.Class), "-"
		if m.Claim >= 0 {
			cl := a.Claims[m.Claim]
			src += ":" + cl.Name
			class = string(cl.Storage.Class)
			if len(cl.AccessModes) > 0 {
				modes = strings.Join(cl.AccessModes, ",")
			}
		}
		data := "-"
		if m.SQLite {
			data = "sqlite"
			if m.App != "" {
				data += ":" + m.App
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Workloads[m.Workload].Key(), m.Volume, src, class, modes,
			strings.Join(m.Paths, ","), rwWord(!m.ReadOnly), data)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Findings) > 0 {
		b.WriteString("\n")
	}
	for _, f := range r.Findings {
		ign := ""
		if f.Ignored {
			ign = " (ignored)"
		}
		fmt.Fprintf(&b, "%s %s%s: %s\n", strings.ToUpper(string(f.Level)), f.ID, ign, f.Message)
		for _, rem := range f.Remedy {
			fmt.Fprintf(&b, "  fix: %s\n", rem)
		}
	}
	renderPatches(&b, r.Patches)
	renderNotJudged(&b, a)
	fmt.Fprintf(&b, "\nverdict: %s\n", r.Verdict)
	_, err := io.WriteString(w, b.String())
	return err
}

// renderPatches writes the findings' patches, merged into one per object
// (Report.Patches): the object (its file and line, or for a live one its
// namespace, kind and name), the findings it fixes, the patch and the
// command that applies it.
func renderPatches(b *strings.Builder, ps []preflight.KubePatch) {
	if len(ps) == 0 {
		return
	}
	fmt.Fprintf(b, "\npatches (one per object, each fixing every finding above on it):\n")
	for _, p := range ps {
		where := manifest.ObjectKey(p.Kind, p.Name, p.Namespace)
		if !p.At.Live() {
			where += fmt.Sprintf(", %s line %d", p.At.File, p.At.Line)
			if p.At.Template != "" {
				where += ", from " + p.At.Template
			}
		}
		fixes := make([]string, len(p.Fixes))
		for i, id := range p.Fixes {
			fixes[i] = string(id)
		}
		fmt.Fprintf(b, "  %s (fixes %s): %s\n", where, strings.Join(fixes, ", "), p.Merge)
		if p.Command != "" {
			fmt.Fprintf(b, "    run: %s\n", p.Command)
		}
	}
}

// renderNotJudged names the read-write claims of images the catalogue
// does not know (the verdict does not cover them), and the data
// directories that an application setting moves to another database
// engine.
func renderNotJudged(b *strings.Builder, a *manifest.Analysis) {
	var names []string
	for _, m := range a.Mounts {
		if m.Claim >= 0 && !m.SQLite && !m.ReadOnly && m.OtherEngine == "" {
			names = append(names, a.Workloads[m.Workload].Key()+" claim "+a.Claims[m.Claim].Key())
		}
	}
	if len(names) > 0 {
		fmt.Fprintf(b, "\nnot judged: %s of images not in the catalogue (name those that hold SQLite data with --data-claim):\n  %s\n", count(len(names), "read-write claim", "read-write claims"), strings.Join(names, "\n  "))
	}
	var other []string
	for _, m := range a.Mounts {
		if m.OtherEngine != "" && !m.SQLite {
			other = append(other, a.Workloads[m.Workload].Key()+" volume "+m.Volume+": "+m.OtherEngine)
		}
	}
	if len(other) > 0 {
		fmt.Fprintf(b, "\nnot SQLite:\n  %s\n", strings.Join(other, "\n  "))
	}
}
