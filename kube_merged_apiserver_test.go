package preflight_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/admission"
	"github.com/preflight-sqlite/preflight/internal/kubetest"
	"github.com/preflight-sqlite/preflight/manifest"
	"github.com/preflight-sqlite/preflight/rules"
)

// mergedCase is a Deployment of three findings with a patch each
// (rolling update, replicas, linter annotations), and its claim.
const mergedCase = `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: vw-data, namespace: merged}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vaultwarden
  namespace: merged
  annotations: {kube-score/enable: "deployment-strategy,deployment-replicas"}
spec:
  replicas: 3
  selector: {matchLabels: {app: vaultwarden}}
  template:
    metadata: {labels: {app: vaultwarden}}
    spec:
      containers:
        - name: vaultwarden
          image: vaultwarden/server:1.32.0
          volumeMounts: [{name: data, mountPath: /data}]
      volumes: [{name: data, persistentVolumeClaim: {claimName: vw-data}}]
`

// TestMergedPatchAdmitted creates the Deployment in a real kube-apiserver,
// then binds the deny policy (preflight kube policy) to its namespace,
// which refuses the Deployment as it is. The one merged patch kube -f
// prints for it, sent as the printed kubectl patch line sends it, is an
// update the policy admits, and the object the server answers lints
// clean.
func TestMergedPatchAdmitted(t *testing.T) {
	c := kubetest.Start(t)
	c.MustApply("apiVersion: v1\nkind: Namespace\nmetadata: {name: merged}\n")
	c.MustApply(mergedCase)
	objs, err := manifest.Parse(strings.NewReader(mergedCase), "merged.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := preflight.CheckKube(preflight.KubeOptions{Objects: objs, Files: []string{"merged.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []rules.ID{rules.RollingUpdateOnSQLiteClaim, rules.ReplicasOnSQLiteClaim, rules.LinterAnnotationConflict}
	if len(r.Patches) != 1 || !slices.Equal(r.Patches[0].Fixes, want) || !r.Patches[0].Live {
		t.Fatalf("CheckKube patches = %+v (findings %v), want one live patch of the Deployment fixing %v", r.Patches, kubeFindings(r), want)
	}
	p := r.Patches[0]
	y, err := admission.Policy(admission.Options{Namespaces: []string{"merged"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(y); err != nil {
		t.Fatalf("create the policy: %v", err)
	}
	// The binding takes a moment to be seen: wait until the Deployment,
	// unpatched, is refused (a dry-run update of it as it is).
	path := kubeObjectPath("Deployment", "merged", "vaultwarden")
	refused := false
	for range 50 {
		if status, _ := kubeRequest(t, c, http.MethodPatch, path+"?dryRun=All", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"touched":"yes"}}}`)); status == http.StatusForbidden || status == http.StatusUnprocessableEntity {
			refused = true
			break
		}
		sleepShort()
	}
	if !refused {
		t.Fatal("the deny policy never refused the unpatched Deployment")
	}
	kp := parseKubectlPatch(t, p.Command)
	if kp.kind != "Deployment" || kp.name != "vaultwarden" || kp.ns != "merged" || kp.local {
		t.Fatalf("%s patches %s %s in %q (local %v), want the live Deployment merged/vaultwarden", p.Command, kp.kind, kp.name, kp.ns, kp.local)
	}
	status, body := kubeRequest(t, c, http.MethodPatch, path, kp.ctype, kp.patch)
	if status != http.StatusOK {
		t.Fatalf("%s under the deny policy: HTTP %d, want 200: %s", p.Command, status, body)
	}
	again := replaceObject(t, objs, &p, body, "")
	r2, err := preflight.CheckKube(preflight.KubeOptions{Objects: again, Files: []string{"merged.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r2.Findings) != 0 || r2.Verdict != preflight.VerdictOK {
		t.Errorf("after %s: findings %v, verdict %s; want none", p.Command, kubeFindings(r2), r2.Verdict)
	}
	var live struct {
		Spec struct {
			Replicas int `json:"replicas"`
			Strategy struct {
				Type string `json:"type"`
			} `json:"strategy"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(body, &live); err != nil || live.Spec.Replicas != 1 || live.Spec.Strategy.Type != "Recreate" {
		t.Errorf("the patched Deployment: replicas %d, strategy %q (%v); want 1 and Recreate", live.Spec.Replicas, live.Spec.Strategy.Type, err)
	}
}

func sleepShort() { time.Sleep(200 * time.Millisecond) }
