package kubetest_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/kubetest"
)

// exampleCollections maps each kind in examples/kubernetes/ to the
// collection path it is created in (namespace app).
var exampleCollections = map[string]string{
	"PersistentVolumeClaim": "/api/v1/namespaces/app/persistentvolumeclaims",
	"ServiceAccount":        "/api/v1/namespaces/app/serviceaccounts",
	"Deployment":            "/apis/apps/v1/namespaces/app/deployments",
	"Role":                  "/apis/rbac.authorization.k8s.io/v1/namespaces/app/roles",
	"RoleBinding":           "/apis/rbac.authorization.k8s.io/v1/namespaces/app/rolebindings",
	"ClusterRole":           "/apis/rbac.authorization.k8s.io/v1/clusterroles",
	"ClusterRoleBinding":    "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
}

// TestExampleManifests creates every object of examples/kubernetes/, in
// the order kubectl apply -f takes the directory's files, with kubectl's
// strict field validation (an unknown or misspelt field is refused), once
// namespace app exists as the README says; then the pod the Deployment
// makes (its service account must exist); then every GET the Kubernetes
// probe sends, with that service account's token, must not be forbidden.
func TestExampleManifests(t *testing.T) {
	c := kubetest.Start(t)
	c.MustApply("apiVersion: v1\nkind: Namespace\nmetadata: {name: app}\n")
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "kubernetes", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("examples/kubernetes/*.yaml: %v, %d files", err, len(files))
	}
	sort.Strings(files)
	var template map[string]any
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := kubetest.Objects(data)
		if err != nil {
			t.Fatalf("Objects(%s): %v", f, err)
		}
		for _, obj := range objs {
			kind, _ := obj["kind"].(string)
			path, ok := exampleCollections[kind]
			if !ok {
				t.Fatalf("%s: kind %s not in exampleCollections", f, kind)
			}
			if err := post(c, path+"?fieldValidation=Strict", obj); err != nil {
				t.Errorf("%s: create %s: %v", f, kind, err)
			}
			if kind == "Deployment" {
				spec, _ := obj["spec"].(map[string]any)
				template, _ = spec["template"].(map[string]any)
			}
		}
	}
	if template == nil {
		t.Fatal("examples/kubernetes/: no Deployment with a pod template")
	}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "sqlite-app-1", "namespace": "app", "labels": template["metadata"].(map[string]any)["labels"]},
		"spec":     template["spec"]}
	if err := post(c, "/api/v1/namespaces/app/pods?fieldValidation=Strict", pod); err != nil {
		t.Fatalf("create the Deployment's pod: %v", err)
	}
	tok, err := c.Token("app", "sqlite-app")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		"/api/v1/namespaces/app/pods/sqlite-app-1", "/api/v1/namespaces/app/pods?limit=250",
		"/api/v1/namespaces/app/persistentvolumeclaims/app-data",
		"/apis/apps/v1/namespaces/app/replicasets/x", "/apis/apps/v1/namespaces/app/deployments/sqlite-app",
		"/apis/apps/v1/namespaces/app/statefulsets/x", "/api/v1/persistentvolumes/x",
		"/api/v1/persistentvolumes?limit=250", "/apis/storage.k8s.io/v1/storageclasses/x",
	} {
		err := c.Get(p, tok, nil)
		var apiErr *kubetest.APIError
		if err != nil && !(errors.As(err, &apiErr) && apiErr.Code == http.StatusNotFound) {
			t.Errorf("GET %s as app/sqlite-app: %v, want allowed", p, err)
		}
	}
}

// post creates obj at path as admin; an answer other than 201 is an
// error with the server's message.
func post(c *kubetest.Cluster, path string, obj map[string]any) error {
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, c.URL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.AdminToken)
	resp, err := c.HTTPClient().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusCreated {
		return errors.New(resp.Status + ": " + strings.TrimSpace(string(msg)))
	}
	return nil
}
