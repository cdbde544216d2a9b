package kubetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"go.yaml.in/yaml/v4"
)

// resource is one entry of an API group version's discovery document.
type resource struct {
	Name       string `json:"name"` // the plural in the path: pods, persistentvolumeclaims
	Kind       string `json:"kind"`
	Namespaced bool   `json:"namespaced"`
}

// Create creates every object in manifest (see Objects for the forms it
// takes) with POST, in order, as admin, and returns the server's answers
// (with uid, resourceVersion and defaults filled in) in the same order. A
// namespaced object without metadata.namespace goes to "default". A
// Namespace created here also gets its "default" ServiceAccount, which no
// controller manager makes here. The first failure stops it: an
// *APIError (AlreadyExists, Invalid, NotFound for a missing namespace,
// ...) or an error naming the object whose kind the server does not
// serve; the objects before it stay created.
func (c *Cluster) Create(manifest any) ([]map[string]any, error) {
	return c.each(manifest, func(obj map[string]any, path, name string) (map[string]any, error) {
		var out map[string]any
		err := c.do(http.MethodPost, path, c.AdminToken, "application/json", obj, &out)
		return out, err
	})
}

// Apply is Create by server-side apply (PATCH with
// application/apply-patch+yaml, fieldManager kubetest, force): an object
// that exists is updated to the manifest, one that does not is created.
// Fields under status are not applied for kinds with a status subresource
// (use PatchPodPhase for pods). Errors as for Create.
func (c *Cluster) Apply(manifest any) ([]map[string]any, error) {
	return c.each(manifest, func(obj map[string]any, path, name string) (map[string]any, error) {
		var out map[string]any
		p := path + "/" + url.PathEscape(name) + "?fieldManager=kubetest&force=true"
		err := c.do(http.MethodPatch, p, c.AdminToken, "application/apply-patch+yaml", obj, &out)
		return out, err
	})
}

// Delete deletes every object in manifest (by kind, namespace and name;
// the rest is ignored) with background propagation. Objects that are not
// there are skipped; other failures stop it as for Create.
func (c *Cluster) Delete(manifest any) error {
	_, err := c.each(manifest, func(obj map[string]any, path, name string) (map[string]any, error) {
		body := map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
		err := c.do(http.MethodDelete, path+"/"+url.PathEscape(name), c.AdminToken, "application/json", body, nil)
		var apiErr *APIError
		if errors.As(err, &apiErr) && apiErr.Code == http.StatusNotFound {
			err = nil
		}
		return nil, err
	})
	return err
}

// MustApply is Apply that fails the test (t.Fatal) on an error.
func (c *Cluster) MustApply(manifest any) []map[string]any {
	c.t.Helper()
	out, err := c.Apply(manifest)
	if err != nil {
		c.t.Fatalf("apply: %v", err)
	}
	return out
}

// each resolves every object of manifest to its collection path and name
// and calls fn on it; after a Namespace it makes the namespace's default
// ServiceAccount.
func (c *Cluster) each(manifest any, fn func(obj map[string]any, path, name string) (map[string]any, error)) ([]map[string]any, error) {
	objs, err := Objects(manifest)
	if err != nil {
		return nil, err
	}
	var outs []map[string]any
	for _, obj := range objs {
		path, name, err := c.collection(obj)
		if err != nil {
			return outs, err
		}
		out, err := fn(obj, path, name)
		if err != nil {
			return outs, err
		}
		if out != nil {
			outs = append(outs, out)
		}
		if obj["kind"] == "Namespace" && out != nil {
			if err := c.ensureDefaultServiceAccount(name); err != nil {
				return outs, err
			}
		}
	}
	return outs, nil
}

// Objects returns the objects manifest holds, each a JSON object as a map:
// manifest is a string or []byte of YAML or JSON text (several YAML
// documents separated by "---"; empty documents are skipped), a
// map[string]any, or any other value that encoding/json turns into one
// object (a struct with json tags). Items of a kind ending in "List" (v1
// List, PodList, ...) are returned in its place. Each object must have
// apiVersion, kind and metadata.name: else an error naming the document.
func Objects(manifest any) ([]map[string]any, error) {
	var docs []map[string]any
	switch m := manifest.(type) {
	case string:
		return Objects([]byte(m))
	case []byte:
		dec := yaml.NewDecoder(bytes.NewReader(m))
		for {
			var doc map[string]any
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("decode manifest document %d: %w", len(docs)+1, err)
			}
			if doc != nil {
				docs = append(docs, doc)
			}
		}
	default:
		data, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("encode manifest: %w", err)
		}
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("manifest is not one object: %w", err)
		}
		docs = append(docs, doc)
	}
	return flatten(docs)
}

// flatten replaces List objects by their items and checks that each object
// names its apiVersion, kind and name.
func flatten(docs []map[string]any) ([]map[string]any, error) {
	var out []map[string]any
	for i, doc := range docs {
		kind, _ := doc["kind"].(string)
		if items, ok := doc["items"].([]any); ok && strings.HasSuffix(kind, "List") {
			var objs []map[string]any
			for _, item := range items {
				obj, ok := item.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("manifest document %d: an item of %s is not an object", i+1, kind)
				}
				objs = append(objs, obj)
			}
			flat, err := flatten(objs)
			if err != nil {
				return nil, fmt.Errorf("manifest document %d: %w", i+1, err)
			}
			out = append(out, flat...)
			continue
		}
		apiVersion, _ := doc["apiVersion"].(string)
		if apiVersion == "" || kind == "" || objectName(doc) == "" {
			return nil, fmt.Errorf("manifest document %d: needs apiVersion, kind and metadata.name", i+1)
		}
		out = append(out, doc)
	}
	return out, nil
}

// objectName returns metadata.name, or "".
func objectName(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	return name
}

// collection returns the path of obj's collection
// (/api/v1/namespaces/NS/pods, /apis/storage.k8s.io/v1/storageclasses) and
// its name, from the server's discovery document for its apiVersion. A
// namespaced object without a namespace is put in "default" (in obj too).
func (c *Cluster) collection(obj map[string]any) (string, string, error) {
	apiVersion, kind, name := obj["apiVersion"].(string), obj["kind"].(string), objectName(obj)
	res, err := c.resource(apiVersion, kind)
	if err != nil {
		return "", "", fmt.Errorf("%s %s: %w", kind, name, err)
	}
	prefix := "/apis/" + apiVersion
	if !strings.Contains(apiVersion, "/") {
		prefix = "/api/" + apiVersion
	}
	if !res.Namespaced {
		return prefix + "/" + res.Name, name, nil
	}
	meta := obj["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	if ns == "" {
		ns = "default"
		meta["namespace"] = ns
	}
	return prefix + "/namespaces/" + url.PathEscape(ns) + "/" + res.Name, name, nil
}

// resource looks kind up in the discovery document of apiVersion (fetched
// once per group version and kept).
func (c *Cluster) resource(apiVersion, kind string) (resource, error) {
	c.mu.Lock()
	kinds, ok := c.resources[apiVersion]
	c.mu.Unlock()
	if !ok {
		path := "/apis/" + apiVersion
		if !strings.Contains(apiVersion, "/") {
			path = "/api/" + apiVersion
		}
		var list struct {
			Resources []resource `json:"resources"`
		}
		if err := c.Get(path, c.AdminToken, &list); err != nil {
			return resource{}, fmt.Errorf("discover %s: %w", apiVersion, err)
		}
		kinds = map[string]resource{}
		for _, r := range list.Resources {
			if !strings.Contains(r.Name, "/") { // not a subresource
				kinds[r.Kind] = r
			}
		}
		c.mu.Lock()
		c.resources[apiVersion] = kinds
		c.mu.Unlock()
	}
	r, ok := kinds[kind]
	if !ok {
		return resource{}, fmt.Errorf("the server serves no kind %s in %s", kind, apiVersion)
	}
	return r, nil
}

// ensureDefaultServiceAccount creates ServiceAccount ns/default unless it
// is there: the ServiceAccount admission plugin refuses pods without it.
func (c *Cluster) ensureDefaultServiceAccount(ns string) error {
	sa := map[string]any{
		"apiVersion": "v1", "kind": "ServiceAccount",
		"metadata": map[string]any{"name": "default", "namespace": ns},
	}
	path := "/api/v1/namespaces/" + url.PathEscape(ns) + "/serviceaccounts"
	err := c.do(http.MethodPost, path, c.AdminToken, "application/json", sa, nil)
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.Code == http.StatusConflict {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create the default ServiceAccount of namespace %s: %w", ns, err)
	}
	return nil
}
