package preflight_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	preflight "github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/internal/kubetest"
	"github.com/preflight-sqlite/preflight/manifest"
)

// TestKubectlLinesAsPrinted runs every kubectl line that kube -f prints
// for the cases, exactly as printed (sh -c, the real kubectl built by
// scripts/kube-tools.sh, a kubeconfig for the real kube-apiserver), with
// each case's objects created in the namespaces the manifests name. A live
// patch must succeed and leave an object that no longer gets the finding;
// a --local line must print the patched manifest, which no longer gets it
// either and which the API server accepts as a new object (dry run).
func TestKubectlLinesAsPrinted(t *testing.T) {
	kubectl := kubetest.NeedKubectl(t)
	c := kubetest.Start(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := c.WriteKubeconfig(kubeconfig, c.AdminToken); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+filepath.Dir(kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"))
	run := func(line string) ([]byte, error) {
		cmd := exec.CommandContext(t.Context(), "sh", "-c", line)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return out, fmt.Errorf("%w: %s", err, stderr.Bytes())
		}
		return out, nil
	}
	// A claim in a file of its own gets a kubectl patch --local line (the
	// cases keep their claims beside the workloads).
	split := t.TempDir()
	for name, text := range map[string]string{
		"deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: kuma, namespace: split}
spec:
  replicas: 1
  strategy: {type: Recreate}
  selector: {matchLabels: {app: kuma}}
  template:
    metadata: {labels: {app: kuma}}
    spec:
      containers:
        - name: kuma
          image: louislam/uptime-kuma:1
          volumeMounts: [{name: data, mountPath: /app/data}]
      volumes: [{name: data, persistentVolumeClaim: {claimName: kuma-data}}]
`,
		"pvc.yaml": `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: kuma-data, namespace: split}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: nfs-client
  resources: {requests: {storage: 1Gi}}
`,
	} {
		if err := os.WriteFile(filepath.Join(split, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := append(slices.Clone(kubeCases), kubeCase{name: "claim in a file of its own", inputs: []string{split}})
	live, local := 0, 0
	for _, kc := range cases {
		objs, files := loadKube(t, kc.inputs)
		r := checkKube(t, objs, files, kc)
		if !slices.ContainsFunc(r.Patches, func(p preflight.KubePatch) bool { return p.Command != "" }) {
			continue
		}
		created := createAsIs(t, c, objs)
		// The printed lines: one merged patch per object.
		for _, p := range r.Patches {
			if p.Command == "" {
				continue
			}
			if !strings.HasPrefix(p.Command, "kubectl ") {
				t.Errorf("%s: %s: not a kubectl line", kc.name, p.Command)
				continue
			}
			out, err := run(p.Command)
			if err != nil {
				t.Errorf("%s: %s: %v", kc.name, p.Command, err)
				continue
			}
			var again []manifest.Object
			if p.Live {
				live++
				status, body := kubeRequest(t, c, http.MethodGet, kubeObjectPath(p.Kind, nsOrDefault(p.Namespace), p.Name), "", nil)
				if status != http.StatusOK {
					t.Errorf("%s: GET %s %s after %s: HTTP %d: %s", kc.name, p.Kind, p.Name, p.Command, status, body)
					continue
				}
				again = replaceObject(t, objs, &p, body, "")
			} else {
				local++
				n, err := manifest.Parse(bytes.NewReader(out), p.At.File)
				if err != nil || len(n) != 1 || n[0].Kind != p.Kind || n[0].Name != p.Name {
					t.Errorf("%s: %s printed %d objects (%v), want the patched %s %s:\n%s", kc.name, p.Command, len(n), err, p.Kind, p.Name, out)
					continue
				}
				n[0].At = p.At
				again = slices.Clone(objs)
				for i, o := range objs {
					if o.Kind == p.Kind && o.Name == p.Name && o.At == p.At {
						again[i] = n[0]
					}
				}
				// The claim exists under its name, and access modes are
				// immutable: the remedy creates it under a new one.
				var m map[string]any
				if err := json.Unmarshal(n[0].JSON, &m); err != nil {
					t.Fatal(err)
				}
				md := m["metadata"].(map[string]any)
				md["name"] = p.Name + "-new"
				md["namespace"] = nsOrDefault(p.Namespace)
				b, _ := json.Marshal(m)
				res := kubeResources[p.Kind]
				path := res.prefix + "/namespaces/" + nsOrDefault(p.Namespace) + "/" + res.plural + "?dryRun=All"
				if status, body := kubeRequest(t, c, http.MethodPost, path, "application/json", b); status != http.StatusCreated {
					t.Errorf("%s: the manifest %s prints, as a new object (dry run): HTTP %d: %s", kc.name, p.Command, status, body)
				}
			}
			after := checkKube(t, again, files, kc).Findings
			for _, f := range r.Findings {
				if f.Patch == nil || f.Ignored || f.Patch.Kind != p.Kind || f.Patch.Name != p.Name || f.Patch.Namespace != p.Namespace {
					continue
				}
				for _, f2 := range after {
					if f2.ID == f.ID && f2.Path == f.Path {
						t.Errorf("%s: after %s, %s %s still gets %s: %s", kc.name, p.Command, p.Kind, p.Name, f.ID, f2.Message)
					}
				}
			}
		}
		for _, o := range created {
			// No controller manager runs here to remove the finalizers the
			// API server adds (pvc-protection): drop them, then delete.
			path := kubeObjectPath(o.Kind, nsOrDefault(o.Namespace), o.Name)
			if status, body := kubeRequest(t, c, http.MethodPatch, path, "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)); status != http.StatusOK {
				t.Fatalf("%s: drop the finalizers of %s %s: HTTP %d: %s", kc.name, o.Kind, o.Name, status, body)
			}
			if err := c.Delete(o.JSON); err != nil {
				t.Fatalf("%s: delete %s %s: %v", kc.name, o.Kind, o.Name, err)
			}
		}
	}
	if live < 4 || local < 1 {
		t.Errorf("ran %d live and %d --local kubectl lines, want every printed line of the cases (at least 4 and 1)", live, local)
	}
}

// createAsIs creates the objects of the kinds in kubeResources in the
// namespaces their manifests name (made here when missing), as a person
// who applied the manifests has them, and returns them as created, for
// deleting after the case. Cluster-scoped objects that exist are kept.
func createAsIs(t *testing.T, c *kubetest.Cluster, objs []manifest.Object) []manifest.Object {
	t.Helper()
	var out []manifest.Object
	for _, o := range objs {
		res, ok := kubeResources[o.Kind]
		if !ok {
			continue
		}
		if res.namespaced {
			_, err := c.Create(fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", nsOrDefault(o.Namespace)))
			if ae := (*kubetest.APIError)(nil); err != nil && !(errors.As(err, &ae) && ae.Reason == "AlreadyExists") {
				t.Fatalf("create namespace %s: %v", nsOrDefault(o.Namespace), err)
			}
		}
		var m map[string]any
		if err := json.Unmarshal(o.JSON, &m); err != nil {
			t.Fatal(err)
		}
		if res.namespaced {
			m["metadata"].(map[string]any)["namespace"] = nsOrDefault(o.Namespace)
		}
		b, _ := json.Marshal(m)
		if _, err := c.Create(b); err != nil {
			if ae := (*kubetest.APIError)(nil); errors.As(err, &ae) && ae.Reason == "AlreadyExists" && !res.namespaced {
				continue
			}
			t.Fatalf("create %s %s: %v", o.Kind, o.Name, err)
		}
		o.JSON = b
		out = append(out, o)
	}
	return out
}
