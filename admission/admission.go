// Package admission writes a ValidatingAdmissionPolicy
// (admissionregistration.k8s.io/v1, GA since Kubernetes 1.30) and its
// binding that make the API server itself refuse, at apply time, the
// workload shapes the kube rules of the rules table find in manifests: a
// Deployment, ReplicaSet, StatefulSet (on a claim of its pod template) or
// Job with more than one pod, a Deployment whose RollingUpdate surges, a
// DaemonSet, or a CronJob whose runs may overlap, on a shared volume
// (a claim, nfs, csi, an in-tree network or block source such as
// azureFile or iscsi, or a hostPath but for a DaemonSet) that holds SQLite
// data and that a container mounts read-write. Each refusal names the
// finding ID, the object and the volume, and gives the finding's remedy.
//
// A volume holds SQLite data when a container whose image is in the
// catalogue (registry, tag and digest ignored, as compose.Repository
// does) mounts it at, above or inside one of the application's data
// directories, when a container of any image declares its data directory
// (runs preflight run --data-dir DIR, or sets PREFLIGHT_DATA_DIR=DIR in
// its env) and mounts the volume at, above or inside DIR, or when the
// workload carries the label
// preflight.io/sqlite: "true" (then every such volume does); the label
// set to "false" exempts the workload. The catalogue is compiled into the
// CEL expressions: the policy reads no other object (a claim's labels, a
// ConfigMap's settings) and runs no webhook.
package admission

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"encoding/json"

	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/internal/kubeapi"
	"github.com/preflight-sqlite/preflight/manifest"
	"github.com/preflight-sqlite/preflight/rules"
)

// Label is the label that marks a workload as a SQLite application
// ("true") or exempts it ("false").
const Label = manifest.SQLiteLabel

// Actions a binding may take on a refused request (validationActions).
const (
	ActionDeny  = "deny"
	ActionWarn  = "warn"
	ActionAudit = "audit"
)

// Options configure Policy.
type Options struct {
	// Name prefixes every policy's and binding's name; default
	// "preflight-sqlite".
	Name string
	// Action is ActionDeny (default), ActionWarn or ActionAudit.
	Action string
	// Namespaces, if any, are the only namespaces the bindings judge;
	// ExcludeNamespaces are never judged; NamespaceLabels must all match a
	// namespace's labels. Together they make the bindings'
	// namespaceSelector.
	Namespaces        []string
	ExcludeNamespaces []string
	NamespaceLabels   map[string]string
	// Catalogue is the catalogue compiled in (compose.Builtin, merged with
	// user entries); nil for the built-in one.
	Catalogue *compose.Catalogue
}

// Policy returns the policies and their bindings as a YAML stream for
// kubectl apply -f -: documents separated by "---", each written as
// indented JSON (JSON is YAML; encoding/json keeps a YAML encoder out of
// the binary, whose linux/amd64 budget is 16 MiB). Errors are bad options
// (an unknown action).
func Policy(opts Options) ([]byte, error) {
	if opts.Name == "" {
		opts.Name = "preflight-sqlite"
	}
	actions := map[string]string{"": "Deny", ActionDeny: "Deny", ActionWarn: "Warn", ActionAudit: "Audit"}
	action, ok := actions[opts.Action]
	if !ok {
		return nil, fmt.Errorf("unknown action %q: want deny, warn or audit", opts.Action)
	}
	if opts.Catalogue == nil {
		opts.Catalogue = compose.Builtin()
	}
	held := dataExpr(opts.Catalogue)
	var b strings.Builder
	b.WriteString("# preflight kube policy: refuse a second writer of a SQLite database (" + rules.DocsURL + "kubernetes/)\n")
	for _, k := range kinds {
		name := opts.Name + "-" + strings.ToLower(k.kind)
		docs := []any{k.policy(name, held), binding(name, action, opts)}
		for _, d := range docs {
			out, err := json.MarshalIndent(d, "", "  ")
			if err != nil {
				return nil, fmt.Errorf("encode %s: %w", name, err)
			}
			b.WriteString("---\n")
			b.Write(out)
			b.WriteString("\n")
		}
	}
	return []byte(b.String()), nil
}

// The objects written, in the fields they use.
type (
	meta struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels,omitempty"`
	}
	validatingAdmissionPolicy struct {
		APIVersion string     `json:"apiVersion"`
		Kind       string     `json:"kind"`
		Metadata   meta       `json:"metadata"`
		Spec       policySpec `json:"spec"`
	}
	policySpec struct {
		FailurePolicy    string           `json:"failurePolicy"`
		MatchConstraints matchResources   `json:"matchConstraints"`
		Variables        []variable       `json:"variables"`
		Validations      []validation     `json:"validations"`
		AuditAnnotations []auditAnnotaton `json:"auditAnnotations,omitempty"`
	}
	matchResources struct {
		NamespaceSelector *labelSelector `json:"namespaceSelector,omitempty"`
		ResourceRules     []resourceRule `json:"resourceRules,omitempty"`
	}
	resourceRule struct {
		APIGroups   []string `json:"apiGroups"`
		APIVersions []string `json:"apiVersions"`
		Operations  []string `json:"operations"`
		Resources   []string `json:"resources"`
	}
	variable struct {
		Name       string `json:"name"`
		Expression string `json:"expression"`
	}
	validation struct {
		Expression        string `json:"expression"`
		Message           string `json:"message"`
		MessageExpression string `json:"messageExpression"`
		Reason            string `json:"reason"`
	}
	auditAnnotaton struct {
		Key             string `json:"key"`
		ValueExpression string `json:"valueExpression"`
	}
	validatingAdmissionPolicyBinding struct {
		APIVersion string      `json:"apiVersion"`
		Kind       string      `json:"kind"`
		Metadata   meta        `json:"metadata"`
		Spec       bindingSpec `json:"spec"`
	}
	bindingSpec struct {
		PolicyName        string         `json:"policyName"`
		ValidationActions []string       `json:"validationActions"`
		MatchResources    matchResources `json:"matchResources,omitempty"`
	}
	labelSelector struct {
		MatchLabels      map[string]string `json:"matchLabels,omitempty"`
		MatchExpressions []labelExpression `json:"matchExpressions,omitempty"`
	}
	labelExpression struct {
		Key      string   `json:"key"`
		Operator string   `json:"operator"`
		Values   []string `json:"values"`
	}
)

const apiVersion = "admissionregistration.k8s.io/v1"

func binding(name, action string, opts Options) validatingAdmissionPolicyBinding {
	b := validatingAdmissionPolicyBinding{APIVersion: apiVersion, Kind: "ValidatingAdmissionPolicyBinding",
		Metadata: meta{Name: name, Labels: labels},
		Spec:     bindingSpec{PolicyName: name, ValidationActions: []string{action}}}
	sel := &labelSelector{MatchLabels: opts.NamespaceLabels}
	const nsName = "kubernetes.io/metadata.name"
	if len(opts.Namespaces) > 0 {
		sel.MatchExpressions = append(sel.MatchExpressions, labelExpression{nsName, "In", opts.Namespaces})
	}
	if len(opts.ExcludeNamespaces) > 0 {
		sel.MatchExpressions = append(sel.MatchExpressions, labelExpression{nsName, "NotIn", opts.ExcludeNamespaces})
	}
	if len(sel.MatchLabels) > 0 || len(sel.MatchExpressions) > 0 {
		b.Spec.MatchResources.NamespaceSelector = sel
	}
	return b
}

var labels = map[string]string{"app.kubernetes.io/managed-by": "preflight"}

// kind is one workload kind the policies judge: where its pod template
// is, and the rules that apply to it.
type kind struct {
	kind, group, resource string
	// pod is the CEL path of the pod spec.
	pod string
	// templates: the StatefulSet's volumeClaimTemplates make claims per
	// replica, not shared ones.
	templates bool
	// hostPathShared: a hostPath is one volume for every pod (false for a
	// DaemonSet, whose pods are one per node).
	hostPathShared bool
	checks         []check
}

// check is one validation: the finding ID, when the object passes (CEL,
// over variables.volumes: the names of the shared read-write volumes that
// hold SQLite data), and what the message says it does.
type check struct {
	id     rules.ID
	passes string
	// does is a CEL string expression: what the object does ("runs 3
	// pods").
	does string
}

var (
	replicas = func(path string) check {
		return check{rules.ReplicasOnSQLiteClaim,
			fmt.Sprintf("(has(%[1]s) ? %[1]s : 1) <= 1", path),
			fmt.Sprintf("'runs ' + string(%s) + ' pods at once'", path)}
	}
	kinds = []kind{
		{kind: "Deployment", group: "apps", resource: "deployments", pod: "object.spec.template.spec", hostPathShared: true, checks: []check{
			replicas("object.spec.replicas"),
			{rules.RollingUpdateOnSQLiteClaim,
				"has(object.spec.strategy) && has(object.spec.strategy.type) && object.spec.strategy.type == 'Recreate' || " +
					"has(object.spec.strategy) && has(object.spec.strategy.rollingUpdate) && has(object.spec.strategy.rollingUpdate.maxSurge) && " +
					"string(object.spec.strategy.rollingUpdate.maxSurge).matches('^0+%?$')",
				"'updates by RollingUpdate with maxSurge ' + (has(object.spec.strategy) && has(object.spec.strategy.rollingUpdate) && has(object.spec.strategy.rollingUpdate.maxSurge) ? string(object.spec.strategy.rollingUpdate.maxSurge) : '25%') + ' (the new pod starts while the old one still writes)'"},
		}},
		{kind: "ReplicaSet", group: "apps", resource: "replicasets", pod: "object.spec.template.spec", hostPathShared: true, checks: []check{
			replicas("object.spec.replicas"),
		}},
		{kind: "StatefulSet", group: "apps", resource: "statefulsets", pod: "object.spec.template.spec", templates: true, hostPathShared: true, checks: []check{
			replicas("object.spec.replicas"),
		}},
		{kind: "DaemonSet", group: "apps", resource: "daemonsets", pod: "object.spec.template.spec", checks: []check{
			{rules.DaemonsetOnSQLiteClaim, "false", "'runs a pod on every node'"},
		}},
		{kind: "Job", group: "batch", resource: "jobs", pod: "object.spec.template.spec", hostPathShared: true, checks: []check{
			replicas("object.spec.parallelism"),
		}},
		{kind: "CronJob", group: "batch", resource: "cronjobs", pod: "object.spec.jobTemplate.spec.template.spec", hostPathShared: true, checks: []check{
			{rules.CronjobOverlapOnSQLiteClaim,
				"has(object.spec.concurrencyPolicy) && object.spec.concurrencyPolicy in ['Forbid', 'Replace']",
				"'has concurrencyPolicy ' + (has(object.spec.concurrencyPolicy) ? object.spec.concurrencyPolicy : 'Allow') + ', so a run still going when the next is due is joined by it'"},
			replicas("object.spec.jobTemplate.spec.parallelism"),
		}},
	}
)

// policy is the kind's ValidatingAdmissionPolicy; held is dataExpr's
// variable.
func (k kind) policy(name, held string) validatingAdmissionPolicy {
	shared := "has(v.persistentVolumeClaim) || has(v.nfs) || has(v.csi)"
	for _, s := range kubeapi.OtherSources {
		shared += " || has(v." + s + ")"
	}
	if k.hostPathShared {
		shared += " || has(v.hostPath)"
	}
	notTemplate := "true"
	if k.templates {
		notTemplate = "!(has(object.spec.volumeClaimTemplates) && object.spec.volumeClaimTemplates.exists(t, has(t.metadata.name) && t.metadata.name == v.name))"
	}
	vars := []variable{
		{"label", fmt.Sprintf("has(object.metadata.labels) && %q in object.metadata.labels ? object.metadata.labels[%q] : ''", Label, Label)},
		{"containers", fmt.Sprintf("(has(%[1]s.initContainers) ? %[1]s.initContainers : []) + %[1]s.containers", k.pod)},
		// Per container, the names of the volumes it mounts read-write.
		{"written", "variables.containers.map(c, has(c.volumeMounts) ? c.volumeMounts.filter(m, !(has(m.readOnly) && m.readOnly)).map(m, m.name) : [])"},
		// Per catalogued container, per data directory of its entry, the
		// names of the volumes it mounts there.
		{"data", held},
		// Per container that runs preflight run --data-dir or sets
		// PREFLIGHT_DATA_DIR, the names of the volumes it mounts there.
		{"declared", declaredExpr()},
		{"volumes", fmt.Sprintf(`variables.label == 'false' || !has(%[1]s.volumes) ? [] : %[1]s.volumes.filter(v, (%[2]s) && %[3]s && `+
			`!(has(v.persistentVolumeClaim) && has(v.persistentVolumeClaim.readOnly) && v.persistentVolumeClaim.readOnly) && `+
			`variables.written.exists(names, v.name in names) && `+
			`(variables.label == 'true' || variables.data.exists(c, c.exists(names, v.name in names)) || variables.declared.exists(names, v.name in names))).map(v, v.name)`,
			k.pod, shared, notTemplate)},
	}
	p := validatingAdmissionPolicy{APIVersion: apiVersion, Kind: "ValidatingAdmissionPolicy", Metadata: meta{Name: name, Labels: labels},
		Spec: policySpec{FailurePolicy: "Fail", Variables: vars,
			MatchConstraints: matchResources{ResourceRules: []resourceRule{{
				APIGroups: []string{k.group}, APIVersions: []string{"v1"}, Operations: []string{"CREATE", "UPDATE"}, Resources: []string{k.resource}}}}}}
	for _, c := range k.checks {
		remedy := rules.ManifestRemedy(c.id)
		if len(remedy) == 0 {
			panic("admission: no remedy for " + string(c.id))
		}
		// The finding's remedy; its patch is in preflight kube -f's and
		// kube audit's output, not in the refusal.
		fix := strings.ReplaceAll(strings.Join(remedy, " "), "the patch below", "the patch preflight kube -f and kube audit print")
		url := rules.FindingURL(c.id)
		p.Spec.Validations = append(p.Spec.Validations, validation{
			Expression: fmt.Sprintf("size(variables.volumes) == 0 || %s", c.passes),
			Message:    fmt.Sprintf("%s: this %s mounts a shared volume that holds SQLite data; fix: %s (%s)", c.id, k.kind, fix, url),
			MessageExpression: fmt.Sprintf("%s + ' ' + object.metadata.name + ' ' + %s + ' and mounts ' + variables.volumes.map(n, 'volume ' + n).join(', ') + ', which holds SQLite data: two writers of one database. Fix: ' + %s + ' (' + %s + ')'",
				cel(string(c.id)+": "+k.kind), c.does, cel(fix), cel(url)),
			Reason: "Forbidden",
		})
	}
	return p
}

// dataExpr is the CEL expression of the variable "data": for each
// container whose image is in the catalogue, for each data directory of
// its entry, the names of the volumes it mounts at, above or inside that
// directory, or the directories the container's env moves them to (one of
// the entry's moved_by settings). The entry is found by a chain of conditionals in catalogue
// order, by image repository (compose.Catalogue.MatchHow's first match),
// then, for an image no entry names, by a path segment equal to an
// entry's name; consecutive entries with the same data directories share
// one regular expression, and one expression of every image first lets a
// container of no catalogued image cost one match (the API server's CEL
// cost budget). The mount path is compared as an absolute path (the API
// server admits "data", which a runtime that accepts it mounts from the
// container's root) with a trailing slash, "//" and "/./" folded; a path
// with a ".." component, or a directory still spelled with "//" after
// the folding, matches every directory.
func dataExpr(cat *compose.Catalogue) string {
	type arm struct {
		re   []string
		dirs []string
		envs []string
	}
	var arms []arm
	add := func(re string, a compose.App) {
		dirs := dirList(a.DataDirs)
		var envs []string
		for _, m := range a.MovedBy {
			suffix := "''" // a file: its directory
			if m.Kind == "dir" {
				suffix = cel(m.Suffix + "/")
			}
			envs = append(envs, cel(m.Env)+": "+suffix)
		}
		if n := len(arms); n > 0 && slices.Equal(arms[n-1].dirs, dirs) && slices.Equal(arms[n-1].envs, envs) {
			arms[n-1].re = append(arms[n-1].re, re)
			return
		}
		arms = append(arms, arm{[]string{re}, dirs, envs})
	}
	for _, a := range cat.Apps {
		for _, im := range a.Images {
			add(repoPattern(im), a)
		}
	}
	for _, a := range cat.Apps {
		if len(a.DataDirs) > 0 && !strings.ContainsAny(a.Name, " /") {
			add(`(?:[^/:@]+/)*`+regexp.QuoteMeta(strings.ToLower(a.Name))+`(?:/[^/:@]+)*`, a)
		}
	}
	chain := "[]"
	for i := len(arms) - 1; i >= 0; i-- {
		var dirs []string
		for _, d := range arms[i].dirs {
			dirs = append(dirs, cel(d))
		}
		held := "[" + strings.Join(dirs, ", ") + "]"
		if len(arms[i].envs) > 0 {
			// A setting of the entry's moved_by given in env
			// (compose.App.DataDirsUnder; a valueFrom is unknown, as
			// kube -f takes it): an absolute directory, with its suffix,
			// or a file's directory; a URL, a path with . or .. or a
			// query: every mount.
			moved := fmt.Sprintf("e.name in {%s} && has(e.value) && e.value.trim() != '' && !e.value.contains('$(')", strings.Join(arms[i].envs, ", "))
			dir := fmt.Sprintf("e.value.startsWith('/') && !e.value.contains('/.') && !e.value.contains('?') ? ({%s}[e.name] != '' ? e.value + {%[1]s}[e.name] : e.value.substring(0, e.value.lastIndexOf('/') + 1)).replace('//', '/').replace('//', '/').replace('//', '/') : '/'", strings.Join(arms[i].envs, ", "))
			held = fmt.Sprintf("has(c.env) && c.env.exists(e, %s) ? c.env.filter(e, %[1]s).map(e, %s) : %s", moved, dir, held)
		}
		chain = fmt.Sprintf("c.image.lowerAscii().matches(%s) ? (%s) : %s", celRaw(imageRegexp(strings.Join(arms[i].re, "|"))), held, chain)
	}
	var all []string
	for _, a := range arms {
		all = append(all, a.re...)
	}
	q := "((m.mountPath.startsWith('/') ? '' : '/') + m.mountPath + '/').replace('/./', '/').replace('//', '/').replace('//', '/').replace('//', '/')"
	return fmt.Sprintf("variables.containers.filter(c, has(c.image) && has(c.volumeMounts) && c.image.lowerAscii().matches(%s)).map(c, (%s).map(d, c.volumeMounts.filter(m, d.startsWith(%s) || %s.startsWith(d) || %s.matches(r'/\\.{0,2}/') || d.matches(r'/\\.{0,2}/')).map(m, m.name)))",
		celRaw(imageRegexp(strings.Join(all, "|"))), chain, q, q, q)
}

// declaredExpr is the CEL expression of the variable "declared": for
// each container that declares its data directories itself, whatever its
// image (manifest's declaredDir), the names of the volumes it mounts at,
// above or inside one: the --data-dir values (comma-separated lists) of a
// `preflight run` in its command and args (an argument whose base name is
// preflight, then run after any --mountinfo FILE, up to "--"; the
// arguments as they are, and split into words as a shell's command
// string is, as compose.PreflightRunDirs reads them), or the value of
// PREFLIGHT_DATA_DIR in its env (a valueFrom is unknown). The arguments
// are joined with newlines so that regular expressions find the run and
// its flags; a directory with a ".." component matches every mount.
func declaredExpr() string {
	const (
		argv = `('\n' + ((has(c.command) ? c.command : []) + (has(c.args) ? c.args : [])).join('\n') + '\n')`
		// The same split into words, as a shell's command string (sh -c
		// "exec preflight run --data-dir /data -- app") holds them:
		// quotes dropped, a space, tab or carriage return a line break;
		// read only when the arguments hold one (the cost budget).
		words = `.replace('"', '').replace("'", '').replace(' ', '\n').replace('\t', '\n').replace('\r', '\n')`
		split = `.matches(r'[ \t\r"\x27]')`
		// A preflight run (after preflight's global flag --mountinfo) and
		// its arguments up to "--": each argument, but "--", then a
		// newline (empty arguments, between words, allowed).
		run  = `\n(?:[^\n]*/)?preflight\n+(?:--mountinfo(?:=[^\n]*|\n+[^\n]*)\n+)*run\n(?:(?:[^-\n][^\n]*|-|-[^-\n][^\n]*|--[^\n]+)?\n)*`
		flag = `\n--data-dir(?:=|\n+)[^\n]*`
		env  = "(has(c.env) ? c.env.filter(e, e.name == 'PREFLIGHT_DATA_DIR' && has(e.value) && !e.value.contains('$(')).map(e, e.value) : []).join(',')"
		q    = "((m.mountPath.startsWith('/') ? '' : '/') + m.mountPath + '/').replace('/./', '/').replace('//', '/').replace('//', '/').replace('//', '/')"
		dir  = "((d.trim().startsWith('/') ? '' : '/') + d.trim() + '/').replace('/./', '/').replace('//', '/').replace('//', '/').replace('//', '/')"
	)
	// Per container, its declared directories, each computed once (a
	// one-element list mapped binds them) and compared with every mount:
	// a directory or mount path still spelled with "//", "/./" or "/../"
	// after the folding matches every mount.
	args := fmt.Sprintf("([%[1]s] + (%[1]s%[2]s ? [%[1]s%[3]s] : [])).map(a, a.findAll(%[4]s).map(s, s.findAll(%[5]s).map(f, f.substring(12)).join(',')).join(',')).join(',')",
		argv, split, words, celRaw(run), celRaw(flag))
	dirs := fmt.Sprintf("(%s + ',' + %s).split(',').filter(d, d.trim() != '').map(d, %s)", args, env, dir)
	held := fmt.Sprintf(`d.startsWith(%[1]s) || %[1]s.startsWith(d) || %[1]s.matches(r'/\.{0,2}/') || d.matches(r'/\.{0,2}/')`, q)
	return fmt.Sprintf("variables.containers.filter(c, has(c.volumeMounts) && (has(c.env) && c.env.exists(e, e.name == 'PREFLIGHT_DATA_DIR') || (has(c.command) ? c.command : []).exists(a, a.contains('preflight')) || (has(c.args) ? c.args : []).exists(a, a.contains('preflight')))).map(c, [%s].map(ds, c.volumeMounts.filter(m, ds.exists(d, %s)).map(m, m.name))[0])", dirs, held)
}

// dirList is an entry's data directories, each with one trailing slash,
// "//" folded.
func dirList(dirs []string) []string {
	out := []string{}
	for _, d := range dirs {
		for strings.Contains(d, "//") {
			d = strings.ReplaceAll(d, "//", "/")
		}
		out = append(out, strings.TrimSuffix(d, "/")+"/")
	}
	return out
}

// repoPattern is the regular expression of a catalogue image: a
// repository, or a path ending in /* (every repository under it).
func repoPattern(im string) string {
	im = strings.ToLower(im)
	if p, ok := strings.CutSuffix(im, "/*"); ok {
		return regexp.QuoteMeta(p) + `/[^:@]+`
	}
	return regexp.QuoteMeta(im)
}

// imageRegexp anchors a repository pattern in a whole image reference: an
// optional registry host (a first path component with a dot or a colon,
// or localhost), Docker Hub's optional library/, then the repository, an
// optional tag and an optional digest; as compose.Repository reads one.
func imageRegexp(repos string) string {
	return `^(?:(?:[^/]*[.:][^/]*|localhost)/)?(?:library/)?(?:` + repos + `)(?::[^/@]*)?(?:@.*)?$`
}

// cel quotes s as a CEL string literal.
func cel(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`)
	return "'" + r.Replace(s) + "'"
}

// celRaw quotes a regular expression as a raw CEL string literal.
func celRaw(s string) string {
	if strings.Contains(s, "'") {
		panic("admission: a quote in a regular expression: " + s)
	}
	return "r'" + s + "'"
}
