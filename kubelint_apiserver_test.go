package preflight_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/internal/kubetest"
	"github.com/preflight-sqlite/preflight/manifest"
)

// kubeResources are the API paths of the kinds the cases hold, with
// whether they are namespaced.
var kubeResources = map[string]struct {
	prefix, plural string
	namespaced     bool
}{
	"Deployment":            {"/apis/apps/v1", "deployments", true},
	"StatefulSet":           {"/apis/apps/v1", "statefulsets", true},
	"DaemonSet":             {"/apis/apps/v1", "daemonsets", true},
	"Job":                   {"/apis/batch/v1", "jobs", true},
	"CronJob":               {"/apis/batch/v1", "cronjobs", true},
	"Pod":                   {"/api/v1", "pods", true},
	"PersistentVolumeClaim": {"/api/v1", "persistentvolumeclaims", true},
	"PersistentVolume":      {"/api/v1", "persistentvolumes", false},
	"StorageClass":          {"/apis/storage.k8s.io/v1", "storageclasses", false},
}

// TestKubePatchesOnAPIServer puts each case's objects into a real
// kube-apiserver (internal/kubetest), sends every live patch as kubectl
// patch --type merge does (PATCH, application/merge-patch+json), and lints
// the object the server answers, with its defaults filled in: the finding
// is gone. A claim's patch (not live) is refused on the existing object,
// as access modes are immutable, and the patched manifest is accepted as
// a new object (dry run).
func TestKubePatchesOnAPIServer(t *testing.T) {
	c := kubetest.Start(t)
	checked := 0
	for i, kc := range kubeCases {
		objs, files := loadKube(t, kc.inputs)
		r := checkKube(t, objs, files, kc)
		if !slices.ContainsFunc(r.Findings, func(f preflight.Finding) bool { return f.Patch != nil }) {
			continue
		}
		prefix := fmt.Sprintf("c%d-", i)
		created := createCase(t, c, objs, prefix)
		for _, f := range r.Findings {
			if f.Patch == nil {
				continue
			}
			checked++
			p := f.Patch
			if p.Command == "" {
				if p.Live {
					t.Errorf("%s: the live patch of %s %s has no command", kc.name, p.Kind, p.Name)
				}
				continue
			}
			// The command as printed, as the shell and kubectl read it.
			kp := parseKubectlPatch(t, p.Command)
			if kp.kind != p.Kind || kp.name != p.Name || kp.local == p.Live || kp.ns != p.Namespace || (kp.local && kp.file != p.At.File) {
				t.Errorf("%s: %s patches %s %s in namespace %q (local %v, file %q); want %s %s in %q (live %v, file %q)",
					kc.name, p.Command, kp.kind, kp.name, kp.ns, kp.local, kp.file, p.Kind, p.Name, p.Namespace, p.Live, p.At.File)
				continue
			}
			path := kubeObjectPath(kp.kind, prefix+nsOrDefault(kp.ns), kp.name)
			status, body := kubeRequest(t, c, http.MethodPatch, path, kp.ctype, kp.patch)
			if kp.local {
				if status != http.StatusUnprocessableEntity {
					t.Errorf("%s: %s on the existing %s %s: HTTP %d, want 422 (immutable): %s", kc.name, kp.patch, p.Kind, p.Name, status, body)
				}
				dryRunPatched(t, c, kc.name, created[p.Kind+"/"+p.Name], kp, prefix)
				continue
			}
			if status != http.StatusOK {
				t.Errorf("%s: %s: HTTP %d: %s", kc.name, p.Command, status, body)
				continue
			}
			if p.Kind == "Deployment" {
				linterExempt(t, kc.name, p, created[p.Kind+"/"+p.Name], body)
			}
			again := replaceObject(t, objs, p, body, prefix)
			r2 := checkKube(t, again, files, kc)
			for _, f2 := range r2.Findings {
				if f2.ID == f.ID && f2.Path == f.Path {
					t.Errorf("%s: the live %s %s after %s still gets %s: %s", kc.name, p.Kind, p.Name, p.Merge, f.ID, f2.Message)
				}
			}
		}
	}
	if checked < 6 {
		t.Errorf("%d patches sent to the API server, want every patch of the cases (at least 6)", checked)
	}
}

// linterExempt checks the annotations of a Deployment the API server
// answered after a patch: kube-score skips deployment-strategy and
// deployment-replicas (and every check the object skipped before), Polaris
// exempts it from deploymentMissingReplicas, and kube-score/enable names
// neither check.
func linterExempt(t *testing.T, name string, p *preflight.KubePatch, before, after []byte) {
	t.Helper()
	var b, a struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(before, &b); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(after, &a); err != nil {
		t.Fatal(err)
	}
	ann := a.Metadata.Annotations
	ignore := strings.Split(ann["kube-score/ignore"], ",")
	want := []string{"deployment-strategy", "deployment-replicas"}
	if old := b.Metadata.Annotations["kube-score/ignore"]; old != "" {
		want = append(strings.Split(old, ","), want...)
	}
	for _, c := range want {
		if !slices.Contains(ignore, c) {
			t.Errorf("%s: after %s the live %s has kube-score/ignore %q, want %s in it", name, p.Merge, p.Name, ann["kube-score/ignore"], c)
		}
	}
	if v := ann["polaris.fairwinds.com/deploymentMissingReplicas-exempt"]; v != "true" {
		t.Errorf("%s: after %s the live %s has polaris.fairwinds.com/deploymentMissingReplicas-exempt %q, want \"true\"", name, p.Merge, p.Name, v)
	}
	for _, c := range strings.Split(ann["kube-score/enable"], ",") {
		if c == "deployment-strategy" || c == "deployment-replicas" {
			t.Errorf("%s: after %s the live %s still enables kube-score's %s", name, p.Merge, p.Name, c)
		}
	}
}

func nsOrDefault(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

func kubeObjectPath(kind, ns, name string) string {
	res := kubeResources[kind]
	if !res.namespaced {
		return res.prefix + "/" + res.plural + "/" + url.PathEscape(name)
	}
	return res.prefix + "/namespaces/" + url.PathEscape(ns) + "/" + res.plural + "/" + url.PathEscape(name)
}

// createCase creates the objects of the kinds in kubeResources, each
// namespaced one in namespace prefix+NAMESPACE (made here), cluster-scoped
// ones once. It returns the objects as created, by KIND/NAME.
func createCase(t *testing.T, c *kubetest.Cluster, objs []manifest.Object, prefix string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	made := map[string]bool{}
	for _, o := range objs {
		res, ok := kubeResources[o.Kind]
		if !ok {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(o.JSON, &m); err != nil {
			t.Fatal(err)
		}
		md, _ := m["metadata"].(map[string]any)
		if res.namespaced {
			ns := prefix + nsOrDefault(o.Namespace)
			md["namespace"] = ns
			if !made[ns] {
				if _, err := c.Create(fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns)); err != nil {
					t.Fatalf("create namespace %s: %v", ns, err)
				}
				made[ns] = true
			}
		}
		b, _ := json.Marshal(m)
		if _, err := c.Create(b); err != nil {
			if ae, ok := err.(*kubetest.APIError); ok && ae.Reason == "AlreadyExists" && !res.namespaced {
				continue
			}
			t.Fatalf("create %s %s: %v", o.Kind, o.Name, err)
		}
		out[o.Kind+"/"+o.Name] = b
	}
	return out
}

// kubeRequest sends one request as admin and returns the status and body.
func kubeRequest(t *testing.T, c *kubetest.Cluster, method, path, ctype string, body []byte) (int, []byte) {
	t.Helper()
	r, err := c.Send(method, path, ctype, body)
	if err != nil {
		t.Fatal(err)
	}
	return r.Status, r.Body
}

// replaceObject returns objs with the patched object replaced by the
// server's answer, its namespace as in the manifest again.
func replaceObject(t *testing.T, objs []manifest.Object, p *preflight.KubePatch, live []byte, prefix string) []manifest.Object {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(live, &m); err != nil {
		t.Fatal(err)
	}
	md, _ := m["metadata"].(map[string]any)
	md["namespace"] = p.Namespace
	b, _ := json.Marshal(m)
	n, err := manifest.Parse(bytes.NewReader(b), p.At.File)
	if err != nil || len(n) != 1 {
		t.Fatalf("parse the server's %s %s: %v", p.Kind, p.Name, err)
	}
	out := slices.Clone(objs)
	for i, o := range objs {
		if o.Kind == p.Kind && o.Name == p.Name && o.At == p.At {
			n[0].At = o.At
			out[i] = n[0]
			return out
		}
	}
	t.Fatalf("no object %s %s for the patch", p.Kind, p.Name)
	return nil
}

// dryRunPatched creates the created object with the printed command's
// patch applied as kubectl patch --local does (a merge patch,
// evanphx/json-patch), under a new name, as a dry run: the API server
// accepts the patched manifest.
func dryRunPatched(t *testing.T, c *kubetest.Cluster, name string, created []byte, kp kubectlPatch, prefix string) {
	t.Helper()
	if kp.ctype != "application/merge-patch+json" {
		t.Fatalf("%s: kubectl patch --local of %s %s with %s: only merge patches are applied here", name, kp.kind, kp.name, kp.ctype)
	}
	b, err := jsonpatch.MergePatch(created, kp.patch)
	if err != nil {
		t.Fatalf("%s: MergePatch(%s %s, %s): %v", name, kp.kind, kp.name, kp.patch, err)
	}
	b, err = jsonpatch.MergePatch(b, []byte(`{"metadata":{"name":"`+kp.name+`-new"}}`))
	if err != nil {
		t.Fatal(err)
	}
	res := kubeResources[kp.kind]
	var md struct {
		Metadata struct{ Namespace string } `json:"metadata"`
	}
	_ = json.Unmarshal(created, &md)
	path := res.prefix + "/namespaces/" + md.Metadata.Namespace + "/" + res.plural + "?dryRun=All"
	if status, body := kubeRequest(t, c, http.MethodPost, path, "application/json", b); status != http.StatusCreated {
		t.Errorf("%s: the patched %s %s as a new object: HTTP %d, want 201: %s", name, kp.kind, kp.name, status, body)
	}
}

// kubectlPatch is a printed kubectl patch line as kubectl reads it: the
// object (kind from kubeResources, name, namespace; or --local -f FILE),
// the content type of its --type (strategic without one) and the -p text.
type kubectlPatch struct {
	kind, name, ns, ctype, file string
	local                       bool
	patch                       []byte
}

// parseKubectlPatch splits line as the shell does, exactly as printed
// (sh -c with kubectl a function that prints its arguments: kubectl is
// not installed here), and reads kubectl patch's flags from the words.
func parseKubectlPatch(t *testing.T, line string) kubectlPatch {
	t.Helper()
	out, err := exec.Command("sh", "-c", `kubectl() { printf '%s\0' "$@"; }; `+line).Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", line, err)
	}
	args := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(args) < 2 || args[0] != "patch" {
		t.Fatalf("%s: not a kubectl patch command (words %q)", line, args)
	}
	kp := kubectlPatch{ctype: "application/strategic-merge-patch+json"}
	var pos []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		val := func() string {
			if i++; i >= len(args) {
				t.Fatalf("%s: %s without a value", line, a)
			}
			return args[i]
		}
		switch a {
		case "-n", "--namespace":
			kp.ns = val()
		case "--type":
			types := map[string]string{"merge": "application/merge-patch+json", "json": "application/json-patch+json", "strategic": "application/strategic-merge-patch+json"}
			v := val()
			if kp.ctype = types[v]; kp.ctype == "" {
				t.Fatalf("%s: kubectl patch has no --type %q", line, v)
			}
		case "-p", "--patch":
			kp.patch = []byte(val())
		case "--local":
			kp.local = true
		case "-f", "--filename":
			kp.file = val()
		case "-o", "--output":
			val()
		default:
			if strings.HasPrefix(a, "-") {
				t.Fatalf("%s: flag %s is not read here", line, a)
			}
			pos = append(pos, a)
		}
	}
	if kp.local {
		// kubectl patch --local -f FILE: the one object the file holds.
		objs, _, err := manifest.Load([]string{kp.file}, nil)
		if err != nil || len(objs) != 1 || len(pos) != 0 {
			t.Fatalf("%s: -f %s holds %d objects (%v), arguments %q; want one object and none", line, kp.file, len(objs), err, pos)
		}
		kp.kind, kp.name, kp.ns = objs[0].Kind, objs[0].Name, objs[0].Namespace
	} else {
		// kubectl patch TYPE NAME: the type as kubectl resolves it (the
		// kind in any case, or the plural).
		if len(pos) != 2 {
			t.Fatalf("%s: want TYPE NAME, got %q", line, pos)
		}
		for k, res := range kubeResources {
			if strings.EqualFold(k, pos[0]) || res.plural == pos[0] {
				kp.kind = k
			}
		}
		kp.name = pos[1]
	}
	if !json.Valid(kp.patch) {
		t.Fatalf("%s: -p %q is not JSON", line, kp.patch)
	}
	return kp
}
