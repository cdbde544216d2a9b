package preflight

import (
	"errors"
	"fmt"

	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/manifest"
	"github.com/preflight-sqlite/preflight/report"
	"github.com/preflight-sqlite/preflight/rules"
)

// ErrKubeInput is returned (wrapped) by CheckKube when the manifests
// cannot be read or decoded. Callers treat it as bad input.
var ErrKubeInput = errors.New("bad manifests")

// KubeOptions configure CheckKube.
type KubeOptions struct {
	// Objects and Files are the input, as manifest.Load returns them.
	Objects []manifest.Object
	Files   []string
	// DataClaims are --data-claim values (manifest.Options.DataClaims).
	DataClaims []string
	// Catalogue holds user entries (--catalogue), matched before the
	// built-in ones; nil for none.
	Catalogue *compose.Catalogue
	// Ignore lists finding IDs to demote to info.
	Ignore []string
}

// CheckKube judges Kubernetes manifests without a cluster (preflight
// kube): it finds the workload volumes that hold SQLite data (by the
// catalogue's images and data directories, and the claims named in
// DataClaims), judges them with the kube rules of the one rules table
// (rolling-update-on-sqlite-claim, replicas-on-sqlite-claim,
// cronjob-overlap-on-sqlite-claim, rwx-on-network-class,
// daemonset-on-sqlite-claim, shared-sqlite-claim, and claim-not-judged
// for a claim of unknown content that several pods write on shared
// storage)
// and returns the Report with Manifests set. It reads nothing but the objects.
func CheckKube(opts KubeOptions) (*Report, error) {
	return checkManifests(opts, nil, "manifest")
}

// checkManifests is CheckKube of the objects with the live pods, the
// probe named probe.
func checkManifests(opts KubeOptions, pods []manifest.Pod, probe string) (*Report, error) {
	cat := compose.Builtin()
	if opts.Catalogue != nil {
		cat = opts.Catalogue.Merge(cat)
	}
	a, err := manifest.Analyze(opts.Objects, opts.Files, manifest.Options{Catalogue: cat, DataClaims: opts.DataClaims, Pods: pods})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKubeInput, err)
	}
	r := &Report{Schema: Schema, Probes: map[string]report.ProbeStatus{probe: report.ProbeRan}, DataDirs: []DataDir{}, Manifests: a}
	r.Findings = judge(r, rules.Input{}, opts.Ignore)
	r.Patches = rules.MergePatches(r.Findings)
	r.Verdict = report.VerdictOf(r.Worst())
	r.JournalMode, r.FSClass = rules.JournalMode(r)
	return r, nil
}
