package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/preflight-sqlite/preflight/admission"
	"github.com/preflight-sqlite/preflight/compose"
)

// KubePolicyCmd is `preflight kube policy`.
type KubePolicyCmd struct {
	Action           string
	Namespace        []string
	ExcludeNamespace []string
	NamespaceLabel   []string
	Name             string
	Catalogue        []string
}

func newKubePolicyCmd(g *Globals) *cobra.Command {
	c := &KubePolicyCmd{}
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Write an admission policy that refuses a second writer.",
		Long: wrap("Write a ValidatingAdmissionPolicy and its binding (YAML for kubectl apply -f -) with which the API server refuses a second writer of a SQLite volume: "+
			"more than one replica, a surging RollingUpdate, a DaemonSet, an overlapping CronJob.", 0, helpWidth),
		Example: examples["kube policy"],
		Args:    cobra.NoArgs,
		RunE:    func(*cobra.Command, []string) error { return c.Run(g) },
	}
	fs := cmd.Flags()
	enumVar(fs, &c.Action, "action", "deny", "What the API server does with a workload that would be a second writer: deny (refuse it), warn (admit it; kubectl prints the refusal as a warning) or audit (admit it; the audit log records it).", "deny", "warn", "audit")
	sliceVar(fs, &c.Namespace, "namespace", "n", "Judge only workloads in namespace `NS` (repeatable; default every namespace).")
	sliceVar(fs, &c.ExcludeNamespace, "exclude-namespace", "", "Never judge workloads in namespace `NS` (repeatable).")
	sliceVar(fs, &c.NamespaceLabel, "namespace-label", "", "Judge only namespaces with label `KEY=VALUE` (repeatable: all must match).")
	fs.StringVar(&c.Name, "name", "preflight-sqlite", "Prefix of the policies' and bindings' names (one of each per workload kind).")
	sliceVar(fs, &c.Catalogue, "catalogue", "", "More catalogue entries from `FILE` (the format of the built-in compose/catalogue.yaml), compiled in before the built-in ones (repeatable).")
	noEnv(fs, "action", "namespace", "exclude-namespace", "namespace-label", "name", "catalogue")
	return cmd
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
