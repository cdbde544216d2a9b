package main

import (
	"fmt"
	"strings"

	"github.com/preflight-sqlite/preflight/admission"
	"github.com/preflight-sqlite/preflight/compose"
)

// KubePolicyCmd is `preflight kube policy`.
type KubePolicyCmd struct {
	Action           string   `name:"action" env:"-" enum:"deny,warn,audit" default:"deny" help:"What the API server does with a workload that would be a second writer: deny (refuse it), warn (admit it; kubectl prints the refusal as a warning) or audit (admit it; the audit log records it)."`
	Namespace        []string `name:"namespace" env:"-" short:"n" placeholder:"NS" help:"Judge only workloads in namespace NS (repeatable; default every namespace)."`
	ExcludeNamespace []string `name:"exclude-namespace" env:"-" placeholder:"NS" help:"Never judge workloads in namespace NS (repeatable)."`
	NamespaceLabel   []string `name:"namespace-label" env:"-" placeholder:"KEY=VALUE" help:"Judge only namespaces with this label (repeatable: all must match)."`
	Name             string   `name:"name" env:"-" default:"preflight-sqlite" help:"Prefix of the policies' and bindings' names (one of each per workload kind)."`
	Catalogue        []string `name:"catalogue" env:"-" placeholder:"FILE" help:"More catalogue entries (the format of the built-in compose/catalogue.yaml), compiled in before the built-in ones (repeatable)."`
}

// Run writes the policies and their bindings to standard output.
func (c *KubePolicyCmd) Run(g *Globals) error {
	if err := needManifests(); err != nil {
		return err
	}
	opts := admission.Options{Name: c.Name, Action: c.Action, Namespaces: c.Namespace, ExcludeNamespaces: c.ExcludeNamespace}
	for _, l := range c.NamespaceLabel {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return usageError(fmt.Errorf("--namespace-label %q: want KEY=VALUE", l))
		}
		if opts.NamespaceLabels == nil {
			opts.NamespaceLabels = map[string]string{}
		}
		opts.NamespaceLabels[k] = v
	}
	var cat *compose.Catalogue
	for _, f := range c.Catalogue {
		more, err := compose.ReadCatalogue(f)
		if err != nil {
			return usageError(err)
		}
		cat = more.Merge(cat)
	}
	if cat != nil {
		opts.Catalogue = cat.Merge(compose.Builtin())
	}
	y, err := admission.Policy(opts)
	if err != nil {
		return usageError(err)
	}
	_, err = g.stdout.Write(y)
	return err
}
