// Package manifest reads Kubernetes manifests (multi-document YAML or
// JSON, as kubectl apply -f takes them and helm template and kubectl
// kustomize print them) and states where SQLite data lives in them: which
// workloads (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, bare
// Pod) mount which volumes, which claims those are, what backs each claim
// (its PersistentVolume or StorageClass when the input holds them,
// classified by internal/kubeapi), and how each workload updates and
// scales. It states facts only: the rules table (the root package) judges
// them.
//
// The objects are decoded into the minimal structs of internal/kubeapi,
// not k8s.io/api, which would add megabytes to the binary for the few
// fields read here.
package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v4"
)

// MaxInput is the most bytes Parse reads from one input (a file or
// standard input): 64 MiB, far above any real manifest set, so that a
// stream that never ends cannot exhaust memory.
const MaxInput = 64 << 20

// ErrTooLarge is returned (wrapped) when an input exceeds MaxInput.
var ErrTooLarge = errors.New("manifest input larger than 64 MiB")

// ErrNotBuilt is returned by Load in the nocompose build (the images'
// binary), which leaves manifest reading out.
var ErrNotBuilt = errors.New("this preflight binary was built without manifest support (-tags nocompose); run preflight kube from the full build")

// ErrEmpty is returned (wrapped) by Load when the input holds no object.
var ErrEmpty = errors.New("no Kubernetes object in the input")

// ErrNoKind is returned (wrapped) by Parse for a mapping document without
// kind (Helm values, a kustomization's patch, a config file).
var ErrNoKind = errors.New("a document without kind")

// NoManifestsError is returned by Load for a directory that holds no
// manifest file. Subdirs are its subdirectories (relative to Dir, in
// lexical order) that hold manifest files at any depth.
type NoManifestsError struct {
	Dir     string
	Subdirs []string
}

func (e *NoManifestsError) Error() string {
	return fmt.Sprintf("read manifests: %s holds no .yaml, .yml or .json file", e.Dir)
}

// LiveFile is the File of the Location of an object read from a live
// cluster (preflight kube audit), whose Line is 0: it is named by its
// namespace, kind and name (ObjectKey), not a place in a file.
const LiveFile = "cluster"

// Live reports whether the object was read from a live cluster.
func (l Location) Live() bool { return l.File == LiveFile && l.Line == 0 }

// ObjectKey names an object as kubectl does (deployment/NAME), after its
// namespace when it has one: "admin-tools/deployment/uptime-kuma".
func ObjectKey(kind, name, ns string) string { return objectKey(kind, name, ns) }

// Location is where an object starts: the file ("-" for standard input)
// and the 1-based line of its first key.
type Location struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	// Template is the chart template that rendered the object, from the
	// "# Source: CHART/templates/FILE" comment helm template writes
	// before each document; empty when there is none.
	Template string `json:"template,omitempty"`
}

// Object is one Kubernetes object of the input.
type Object struct {
	APIVersion string   `json:"api_version"`
	Kind       string   `json:"kind"`
	Name       string   `json:"name"`
	Namespace  string   `json:"namespace,omitempty"`
	At         Location `json:"at"`
	// JSON is the object as JSON, the form a JSON merge patch applies to.
	JSON json.RawMessage `json:"-"`
	// Duplicates are the keys written more than once in one mapping of
	// the object, of which the last was kept (as kubectl does).
	Duplicates []DuplicateKey `json:"-"`
}

// DuplicateKey is a mapping key written twice or more in one mapping of
// an object. kubectl apply keeps the last value (and warns under strict
// field validation); so does Parse, and the earlier ones are dropped.
type DuplicateKey struct {
	// Object is the object's key, as Workload.Key names workloads:
	// "NAMESPACE/KIND/NAME", or "KIND/NAME" without a namespace.
	Object string `json:"object"`
	// At is the key written last (the one kept).
	At Location `json:"at"`
	// Key is the key as written; Path is the dotted path of its mapping
	// ("spec.template.spec"; list items are [N]), empty at the root.
	Key  string `json:"key"`
	Path string `json:"path,omitempty"`
	// Dropped are the lines of the earlier values, which were dropped.
	Dropped []int `json:"dropped"`
}

// header is the part of every object Parse reads to name it.
type header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// Parse reads every document of a multi-document YAML stream (JSON is
// YAML) from r, named name in locations. Empty documents (only comments,
// or null) are skipped; a kind: List (kubectl get -o yaml) gives its
// items. A document that is not a mapping with a kind is an error naming
// its line, as is input over MaxInput.
func Parse(r io.Reader, name string) ([]Object, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxInput+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(b) > MaxInput {
		return nil, fmt.Errorf("read %s: %w", name, ErrTooLarge)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var out []Object
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", name, err)
		}
		if len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
			continue
		}
		dups := dedupe(doc.Content[0], "", nil)
		objs, err := documentObjects(doc.Content[0], name)
		if err != nil {
			return nil, err
		}
		if t := helmSource(&doc); t != "" {
			for i := range objs {
				objs[i].At.Template = t
			}
		}
		attachDuplicates(objs, dups)
		out = append(out, objs...)
	}
}

// documentObjects converts one document's root node to its objects (the
// items of a List).
func documentObjects(n *yaml.Node, name string) ([]Object, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("parse %s: line %d: a document is not a mapping (an object with apiVersion and kind)", name, n.Line)
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, fmt.Errorf("parse %s: line %d: %w", name, n.Line, err)
	}
	raw, err := json.Marshal(stringKeys(v))
	if err != nil {
		return nil, fmt.Errorf("parse %s: line %d: not representable as JSON: %w", name, n.Line, err)
	}
	var h header
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, fmt.Errorf("parse %s: line %d: %w", name, n.Line, err)
	}
	if h.Kind == "" {
		return nil, fmt.Errorf("parse %s: line %d: %w", name, n.Line, ErrNoKind)
	}
	if strings.HasSuffix(h.Kind, "List") && h.Items != nil {
		items := itemNodes(n)
		var out []Object
		for i, it := range h.Items {
			line := n.Line
			if i < len(items) {
				line = items[i].Line
			}
			var ih header
			if err := json.Unmarshal(it, &ih); err != nil || ih.Kind == "" {
				return nil, fmt.Errorf("parse %s: line %d: a list item without kind", name, line)
			}
			out = append(out, Object{APIVersion: ih.APIVersion, Kind: ih.Kind, Name: ih.Metadata.Name,
				Namespace: ih.Metadata.Namespace, At: Location{File: name, Line: line}, JSON: it})
		}
		return out, nil
	}
	return []Object{{APIVersion: h.APIVersion, Kind: h.Kind, Name: h.Metadata.Name, Namespace: h.Metadata.Namespace,
		At: Location{File: name, Line: n.Line}, JSON: raw}}, nil
}

// itemNodes returns the nodes of a List's items.
func itemNodes(n *yaml.Node) []*yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "items" && n.Content[i+1].Kind == yaml.SequenceNode {
			return n.Content[i+1].Content
		}
	}
	return nil
}

// stringKeys turns the keys of every mapping decoded with non-string keys
// (1: x, true: y) into strings, as kubectl's YAML-to-JSON conversion does.
func stringKeys(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = stringKeys(e)
		}
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = stringKeys(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = stringKeys(e)
		}
	}
	return v
}

// helmSource returns the template path of a "# Source: PATH" comment at
// the head of a document (on the document, its root or its first key).
func helmSource(doc *yaml.Node) string {
	heads := []string{doc.HeadComment, doc.Content[0].HeadComment}
	if len(doc.Content[0].Content) > 0 {
		heads = append(heads, doc.Content[0].Content[0].HeadComment)
	}
	for _, h := range heads {
		for _, l := range strings.Split(h, "\n") {
			if p, ok := strings.CutPrefix(strings.TrimSpace(l), "# Source: "); ok && strings.TrimSpace(p) != "" {
				return strings.TrimSpace(p)
			}
		}
	}
	return ""
}

// dedupe removes from every mapping below n the earlier of two pairs with
// the same scalar key, so that the last value wins as in kubectl (the YAML
// decoder refuses such a mapping: mapping key "x" already defined), and
// returns what it removed, where (path) and in document order. Merge keys
// (<<) are left to the decoder; a node reached twice through an alias is
// walked once.
func dedupe(n *yaml.Node, where string, seen map[*yaml.Node]bool) []DuplicateKey {
	if seen == nil {
		seen = map[*yaml.Node]bool{}
	}
	if seen[n] {
		return nil
	}
	seen[n] = true
	var out []DuplicateKey
	switch n.Kind {
	case yaml.MappingNode:
		last := map[string]int{} // tag and value of a key -> index of its last pair
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Value != "<<" {
				last[k.ShortTag()+" "+k.Value] = i
			}
		}
		dropped := map[int][]int{}
		var kept []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.ScalarNode && k.Value != "<<" {
				if j := last[k.ShortTag()+" "+k.Value]; j != i {
					dropped[j] = append(dropped[j], k.Line)
					continue
				}
			}
			kept = append(kept, k, n.Content[i+1])
		}
		for i := 0; i+1 < len(kept); i += 2 {
			k := kept[i]
			for j := 0; j+1 < len(n.Content); j += 2 {
				if n.Content[j] == k && dropped[j] != nil {
					out = append(out, DuplicateKey{At: Location{Line: k.Line}, Key: k.Value, Path: where, Dropped: dropped[j]})
				}
			}
			out = append(out, dedupe(kept[i+1], joinPath(where, k.Value), seen)...)
		}
		n.Content = kept
	case yaml.SequenceNode:
		for i, e := range n.Content {
			out = append(out, dedupe(e, fmt.Sprintf("%s[%d]", where, i), seen)...)
		}
	case yaml.AliasNode:
		if n.Alias != nil {
			out = append(out, dedupe(n.Alias, where, seen)...)
		}
	}
	return out
}

func joinPath(where, key string) string {
	if where == "" {
		return key
	}
	return where + "." + key
}

// attachDuplicates gives each duplicate key of a document to the object
// it is in: the last of objs (a List's items, in order) that starts at or
// before its line.
func attachDuplicates(objs []Object, dups []DuplicateKey) {
	for _, d := range dups {
		at := -1
		for i := range objs {
			if objs[i].At.Line <= d.Dropped[0] {
				at = i
			}
		}
		if at < 0 {
			continue // the List's own keys: not an object's
		}
		o := &objs[at]
		d.At.File, d.At.Template = o.At.File, o.At.Template
		d.Object = objectKey(o.Kind, o.Name, o.Namespace)
		o.Duplicates = append(o.Duplicates, d)
	}
}

// objectKey names an object as kubectl does (deployment/NAME), after its
// namespace when it has one: "admin-tools/deployment/uptime-kuma".
func objectKey(kind, name, ns string) string {
	k := strings.ToLower(kind) + "/" + name
	if ns != "" {
		k = ns + "/" + k
	}
	return k
}

// FromJSON makes the Object of one object's JSON (as an API server
// returns it), at location at.
func FromJSON(b []byte, at Location) (Object, error) {
	var h header
	if err := json.Unmarshal(b, &h); err != nil {
		return Object{}, fmt.Errorf("decode an object: %w", err)
	}
	if h.Kind == "" {
		return Object{}, errors.New("decode an object: no kind")
	}
	return Object{APIVersion: h.APIVersion, Kind: h.Kind, Name: h.Metadata.Name, Namespace: h.Metadata.Namespace, At: at, JSON: b}, nil
}
