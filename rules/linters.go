package rules

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/preflight-sqlite/preflight/manifest"
)

// Other Kubernetes linters whose default checks ask a Deployment for what
// SQLite cannot have, and the annotations that exempt one object from
// them. kube-score's "Deployment Strategy" (deployment-strategy) wants
// RollingUpdate and its "Deployment Replicas" (deployment-replicas) at
// least 2 replicas for a Deployment a Service targets (zegl/kube-score
// score/deployment; kube-score/ignore lists the checks an object skips,
// kube-score/enable the optional ones it runs). Polaris's
// deploymentMissingReplicas wants replicas of 2 or more for a Deployment,
// and its mutation (polaris fix, the mutating webhook) sets 3;
// polaris.fairwinds.com/CHECK-exempt: "true" exempts the object
// (FairwindsOps/polaris checks/deploymentMissingReplicas.yaml). Neither
// has a check on StatefulSets' replicas or on a CronJob's
// concurrencyPolicy.
const (
	kubeScoreIgnore       = "kube-score/ignore"
	kubeScoreEnable       = "kube-score/enable"
	polarisReplicasExempt = "polaris.fairwinds.com/deploymentMissingReplicas-exempt"
)

// kubeScoreChecks are the kube-score checks that contradict one writer.
var kubeScoreChecks = []string{"deployment-strategy", "deployment-replicas"}

// linterAnnotations are the annotations that keep kube-score and Polaris
// from asking workload w back for RollingUpdate and more replicas, with
// w's own kube-score/ignore checks kept (a merge patch replaces an
// annotation's value whole); nil for kinds those checks do not judge.
func linterAnnotations(w *manifest.Workload) map[string]any {
	if w.Kind != manifest.KindDeployment {
		return nil
	}
	ignore := splitChecks(w.Annotations[kubeScoreIgnore])
	for _, c := range kubeScoreChecks {
		if !slices.Contains(ignore, c) {
			ignore = append(ignore, c)
		}
	}
	out := map[string]any{kubeScoreIgnore: strings.Join(ignore, ","), polarisReplicasExempt: "true"}
	if enable := splitChecks(w.Annotations[kubeScoreEnable]); slices.ContainsFunc(enable, isKubeScoreCheck) {
		if rest := slices.DeleteFunc(enable, isKubeScoreCheck); len(rest) > 0 {
			out[kubeScoreEnable] = strings.Join(rest, ",")
		} else {
			out[kubeScoreEnable] = nil // a merge patch's null removes the key
		}
	}
	return out
}

func isKubeScoreCheck(c string) bool { return slices.Contains(kubeScoreChecks, c) }

// splitChecks splits a kube-score annotation's comma-separated checks.
func splitChecks(v string) []string {
	var out []string
	for _, c := range strings.Split(v, ",") {
		if c = strings.TrimSpace(c); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// linterConflicts lists the annotations of workload w that ask kube-score
// or Polaris to hold it to what SQLite cannot have: kube-score/enable
// naming deployment-strategy or deployment-replicas, Polaris's
// deploymentMissingReplicas exemption set to anything but "true".
func linterConflicts(w *manifest.Workload) []string {
	if w.Kind != manifest.KindDeployment {
		return nil
	}
	var out []string
	if v, ok := w.Annotations[kubeScoreEnable]; ok && slices.ContainsFunc(splitChecks(v), isKubeScoreCheck) {
		out = append(out, fmt.Sprintf("%s: %q", kubeScoreEnable, v))
	}
	if v, ok := w.Annotations[polarisReplicasExempt]; ok && v != "true" {
		out = append(out, fmt.Sprintf("%s: %q", polarisReplicasExempt, v))
	}
	return out
}

// withLinterAnnotations adds to merge patch patch (of workload w, a JSON
// object) the annotations of linterAnnotations, first, leaving the rest
// as written.
func withLinterAnnotations(w *manifest.Workload, patch string) string {
	ann := linterAnnotations(w)
	if ann == nil {
		return patch
	}
	b, err := json.Marshal(map[string]any{"annotations": ann})
	if err != nil {
		panic(err)
	}
	rest := strings.TrimPrefix(patch, "{")
	if rest != "}" {
		rest = "," + rest
	}
	return `{"metadata":` + string(b) + rest
}
