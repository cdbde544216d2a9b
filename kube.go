package preflight

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/manifest"
	"github.com/preflight-sqlite/preflight/probe/mounts"
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

// KubePatch is a JSON merge patch (RFC 7386) that fixes a finding on one
// object of the input.
type KubePatch struct {
	Kind      string            `json:"kind"`
	Name      string            `json:"name"`
	Namespace string            `json:"namespace,omitempty"`
	At        manifest.Location `json:"at"`
	// Merge is the patch document.
	Merge json.RawMessage `json:"merge"`
	// Live is set when the API server accepts the patch on the existing
	// object (kubectl patch KIND NAME); a claim's access modes cannot
	// change once it exists, so that patch is for the manifest.
	Live bool `json:"live"`
	// Command applies it: kubectl patch KIND NAME --type merge -p PATCH,
	// or for a manifest file that holds only that object kubectl patch
	// --local -f FILE ... -o yaml; empty when neither applies.
	Command string `json:"command,omitempty"`
}

// CheckKube judges Kubernetes manifests without a cluster (preflight
// kube): it finds the workload volumes that hold SQLite data (by the
// catalogue's images and data directories, and the claims named in
// DataClaims), judges them with the kube rules of the one rules table
// (rolling-update-on-sqlite-claim, replicas-on-sqlite-claim,
// cronjob-overlap-on-sqlite-claim, rwx-on-network-class,
// daemonset-on-sqlite-claim, shared-sqlite-claim)
// and returns the Report with Manifests set. It reads nothing but the objects.
func CheckKube(opts KubeOptions) (*Report, error) {
	cat := compose.Builtin()
	if opts.Catalogue != nil {
		cat = opts.Catalogue.Merge(cat)
	}
	a, err := manifest.Analyze(opts.Objects, opts.Files, manifest.Options{Catalogue: cat, DataClaims: opts.DataClaims})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKubeInput, err)
	}
	r := &Report{Schema: Schema, Probes: map[string]string{"manifest": "ran"}, DataDirs: []DataDir{}, Manifests: a}
	r.Findings = judge(r, opts.Ignore)
	r.Verdict = verdictOf(r.Worst())
	r.FSClass = manifestFSClass(r)
	r.JournalMode = "wal"
	if unsafeForWAL(r.FSClass) || r.FSClass == mounts.ClassUnknown {
		r.JournalMode = "delete"
	}
	return r, nil
}

// manifestFSClass is the least safe class of the storage behind any volume
// that holds SQLite data; local when there is none.
func manifestFSClass(r *Report) mounts.Class {
	worst := mounts.ClassLocal
	for i := range r.Manifests.Mounts {
		if !r.Manifests.Mounts[i].SQLite {
			continue
		}
		if c := manifestClass(subject{r: r, km: &r.Manifests.Mounts[i]}); riskier(c, worst) {
			worst = c
		}
	}
	return worst
}
