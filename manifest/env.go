package manifest

import (
	"maps"
	"strings"

	"github.com/preflight-sqlite/preflight/internal/kubeapi"
)

// envSource is a ConfigMap or Secret of the input, which containers load
// with envFrom.
type envSource struct {
	kind, name, ns string
	values         map[string]string
}

// containerEnv is what is known of a container's environment: the values
// of the variables whose values the input states, and where each was
// read. A variable whose value is unknown (valueFrom, a $(VAR)
// reference, or one an envFrom source not in the input may set) is
// absent: it may be anything, so no catalogue setting is taken as given.
type containerEnv struct {
	values map[string]string
	from   map[string]string
}

// env is container c's environment as the kubelet builds it: envFrom in
// order (a later source wins), then env (which wins over envFrom). An
// envFrom source not in the input may set any variable, so every value
// read before it is unknown after it. The image's own environment is not
// in the manifest and is not known.
func (st *store) env(c kubeapi.Container, ns string) containerEnv {
	e := containerEnv{values: map[string]string{}, from: map[string]string{}}
	for _, ef := range c.EnvFrom {
		kind, name := "ConfigMap", ""
		switch {
		case ef.ConfigMapRef != nil:
			name = ef.ConfigMapRef.Name
		case ef.SecretRef != nil:
			kind, name = "Secret", ef.SecretRef.Name
		}
		src := st.envSource(kind, name, ns)
		if src == nil {
			clear(e.values)
			clear(e.from)
			continue
		}
		for k, v := range src.values {
			e.values[ef.Prefix+k], e.from[ef.Prefix+k] = v, kind+" "+name+", by envFrom"
		}
	}
	for _, v := range c.Env {
		if v.ValueFrom != nil || strings.Contains(v.Value, "$(") {
			delete(e.values, v.Name)
			continue
		}
		e.values[v.Name], e.from[v.Name] = v.Value, "env of container "+c.Name
	}
	return e
}

// envSource finds the ConfigMap or Secret a container in namespace ns
// names (one without a namespace, as helm template prints them, matches
// any); nil when the input does not hold it, or holds several that
// match with other values (which one the cluster keeps depends on the
// order they are applied in and the namespace they go to: unknown).
func (st *store) envSource(kind, name, ns string) *envSource {
	var found *envSource
	for i := range st.envs {
		s := &st.envs[i]
		if s.kind != kind || s.name != name || s.ns != ns && s.ns != "" && ns != "" {
			continue
		}
		if found != nil && !maps.Equal(found.values, s.values) {
			return nil
		}
		found = s
	}
	return found
}
