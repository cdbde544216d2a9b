package main

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/owenrumney/go-sarif/v2/sarif"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/manifest"
	"github.com/preflight-sqlite/preflight/rules"
)

// SARIF output (--format sarif): one SARIF 2.1.0 log with one run.
// tool.driver.rules holds every finding ID of the rules table
// (preflight.Rules), in its order, with the ID's meaning as its help text
// and its default level; each finding is a result whose ruleIndex points
// there. Locations:
//   - compose findings sit at the file, line and column that declare the
//     service mount (compose.Location); a report-wide finding at the
//     first compose file;
//   - check findings sit at the database or data directory they are about;
//     a report-wide finding at the first data directory.
//
// A path under the working directory is written relative to it with
// uriBaseId SRCROOT (what GitHub code scanning resolves against the
// repository), any other as an absolute file: URI. A finding demoted by
// --ignore is a "note" with the property ignored: true.

// srcRoot is the uriBaseId of paths relative to the working directory.
const srcRoot = "SRCROOT"

// sarifURL is the tool's home; each rule's helpUri is its anchor on the
// docs site (rules.FindingURL).
const sarifURL = "https://github.com/preflight-sqlite/preflight"

// renderSARIF writes r as a SARIF 2.1.0 log to w.
func renderSARIF(w io.Writer, r *preflight.Report) error {
	log, err := sarif.New(sarif.Version210)
	if err != nil {
		return fmt.Errorf("sarif: %w", err)
	}
	run := sarif.NewRunWithInformationURI("preflight", sarifURL)
	run.Tool.Driver.WithVersion(strings.TrimPrefix(buildVersion(), "v"))
	// compose.Location columns count characters, not UTF-16 code units.
	run.WithColumnKind("unicodeCodePoints")
	index := map[string]int{}
	for i, rl := range preflight.Rules() {
		index[string(rl.ID)] = i
		run.AddRule(string(rl.ID)).
			WithShortDescription(sarif.NewMultiformatMessageString(firstSentence(rl.Doc))).
			WithFullDescription(sarif.NewMultiformatMessageString(rl.Doc)).
			WithTextHelp(rl.Doc).
			WithHelpURI(rules.FindingURL(rl.ID)).
			WithDefaultConfiguration(sarif.NewReportingConfiguration().WithLevel(sarifLevel(rl.Level)))
	}
	root, _ := os.Getwd()
	relative := false
	for _, f := range r.Findings {
		loc := findingLocation(r, f)
		uri, rel := sarifURI(loc.File, root)
		if _, ok := r.Probes[preflight.ProbeKubeAudit]; ok {
			uri, rel, loc.Line = auditURI(f), false, 0 // an object of the cluster, not a file
		}
		relative = relative || rel
		al := sarif.NewArtifactLocation().WithUri(uri)
		if rel {
			al.WithUriBaseId(srcRoot)
		}
		pl := sarif.NewPhysicalLocation().WithArtifactLocation(al)
		if loc.Line > 0 {
			reg := sarif.NewRegion().WithStartLine(loc.Line)
			if loc.Column > 0 {
				reg.WithStartColumn(loc.Column)
			}
			pl.WithRegion(reg)
		}
		res := run.CreateResultForRule(string(f.ID)).
			WithLevel(sarifLevel(f.Level)).
			WithMessage(sarif.NewTextMessage(findingText(f))).
			WithLocations([]*sarif.Location{sarif.NewLocationWithPhysicalLocation(pl)})
		if i, ok := index[string(f.ID)]; ok {
			res.WithRuleIndex(i)
		}
		pb := sarif.NewPropertyBag()
		pb.Add("path", f.Path)
		if f.Ignored {
			pb.Add("ignored", true)
		}
		res.AttachPropertyBag(pb)
	}
	if relative && root != "" {
		run.WithOriginalUriBaseIds(map[string]*sarif.ArtifactLocation{
			srcRoot: sarif.NewArtifactLocation().WithUri(dirURI(root)),
		})
	}
	inv := run.AddInvocation(true)
	verdict := sarif.NewPropertyBag()
	verdict.Add("verdict", string(r.Verdict))
	inv.AttachPropertyBag(verdict)
	log.AddRun(run)
	return log.PrettyWrite(w)
}

// sarifLevel maps a finding level to SARIF's result level.
func sarifLevel(l preflight.Level) string {
	switch l {
	case preflight.LevelError:
		return "error"
	case preflight.LevelWarn:
		return "warning"
	case preflight.LevelInfo:
		return "note"
	}
	return "none"
}

// findingLocation is where a finding points: the declaring compose file
// and line of its service mount, or the path it is about (line 0).
func findingLocation(r *preflight.Report, f preflight.Finding) compose.Location {
	if a := r.Manifests; a != nil {
		return kubeLocation(a, f)
	}
	if a := r.Compose; a != nil {
		for _, m := range a.Mounts {
			if m.Key() == f.Path && m.Declared != nil {
				return *m.Declared
			}
		}
		if len(a.Files) > 0 {
			return compose.Location{File: a.Files[0]}
		}
		return compose.Location{File: a.WorkingDir}
	}
	if f.Path != "" {
		return compose.Location{File: f.Path}
	}
	if len(r.DataDirs) > 0 {
		return compose.Location{File: r.DataDirs[0].Path}
	}
	return compose.Location{File: "."}
}

// sarifURI returns p as a URI: relative to root (and true) when p is under
// it, else an absolute file: URI.
func sarifURI(p, root string) (string, bool) {
	abs, err := filepath.Abs(p)
	if err != nil {
		abs = p
	}
	if root != "" {
		if rel, err := filepath.Rel(root, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return (&url.URL{Path: filepath.ToSlash(rel)}).EscapedPath(), true
		}
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String(), false
}

// dirURI is the file: URI of directory dir, ending in a slash as SARIF's
// originalUriBaseIds require.
func dirURI(dir string) string {
	u := (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
	if !strings.HasSuffix(u, "/") {
		u += "/"
	}
	return u
}

// findingText is the result message: the finding's message, then each
// remedy on a line of its own.
func findingText(f preflight.Finding) string {
	var b strings.Builder
	b.WriteString(f.Message)
	for _, rem := range f.Remedy {
		b.WriteString("\nfix: ")
		b.WriteString(rem)
	}
	return b.String()
}

// firstSentence is the text up to and including the first ". " (the whole
// text when there is none).
func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// kubeLocation is where a kube finding points: the object its patch
// changes, else the line it is about (a duplicate key), else the object
// it is about (a workload), else the first manifest.
func kubeLocation(a *manifest.Analysis, f preflight.Finding) compose.Location {
	if p := f.Patch; p != nil && p.At.File != "" {
		return kubeAt(p.At)
	}
	if f.At != nil && f.At.File != "" {
		return kubeAt(*f.At)
	}
	if at, ok := a.ObjectAt(f.Path); ok {
		return kubeAt(at)
	}
	if len(a.Files) > 0 {
		return compose.Location{File: a.Files[0]}
	}
	return compose.Location{File: "."}
}

// auditURI is where a kube audit finding points: the live object its
// patch changes, else the object it is about, as k8s:NAMESPACE/KIND/NAME
// (the finding's path form).
func auditURI(f preflight.Finding) string {
	key := f.Path
	if p := f.Patch; p != nil {
		key = strings.ToLower(p.Kind) + "/" + p.Name
		if p.Namespace != "" {
			key = p.Namespace + "/" + key
		}
	}
	return (&url.URL{Scheme: "k8s", Opaque: key}).String()
}

// kubeAt is an object's location; an object read from stdin that helm
// template rendered is at its chart template (no line: the template's
// lines are not the output's).
func kubeAt(at manifest.Location) compose.Location {
	if at.File == "-" && at.Template != "" {
		return compose.Location{File: at.Template}
	}
	return compose.Location{File: at.File, Line: at.Line}
}
