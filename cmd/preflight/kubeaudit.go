package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/probe/kube"
)

// KubeAuditCmd is `preflight kube audit`.
type KubeAuditCmd struct {
	Kubeconfig string
	Namespace  []string
	Timeout    time.Duration
	DataClaim  []string
	Catalogue  []string
	Ignore     []string
	FailOn     string
	Format     string
}

func newKubeAuditCmd(g *Globals) *cobra.Command {
	c := &KubeAuditCmd{}
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Judge a live cluster as kube -f judges manifests.",
		Long: wrap("Read a live cluster's workloads, pods, claims, PersistentVolumes and StorageClasses through the API (GET and LIST only) and judge them as kube -f judges manifests, "+
			"plus the pods of one workload running now on one claim.", 0, helpWidth),
		Example: examples["kube audit"],
		Args:    cobra.NoArgs,
		RunE:    func(*cobra.Command, []string) error { return c.Run(g) },
	}
	fs := cmd.Flags()
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "Reach the Kubernetes API through kubeconfig `FILE` (the first existing file of a KUBECONFIG list); without one, the in-cluster service account.")
	envFor(fs, "kubeconfig", "PREFLIGHT_KUBECONFIG", "KUBECONFIG")
	sliceVar(fs, &c.Namespace, "namespace", "n", "Read only namespace `NS` (repeatable); default every namespace, by one cluster-wide list per kind (the ClusterRole of examples/kubernetes/audit-rbac.yaml).")
	fs.DurationVar(&c.Timeout, "timeout", time.Minute, "Longest wait for the whole audit, every request included.")
	envFor(fs, "timeout", "PREFLIGHT_KUBE_AUDIT_TIMEOUT")
	sliceVar(fs, &c.DataClaim, "data-claim", "", "A PersistentVolumeClaim `[NAMESPACE/]CLAIM` that holds SQLite data, whatever image mounts it (repeatable; the label preflight.io/sqlite: \"true\" on the claim says so too).")
	sliceVar(fs, &c.Catalogue, "catalogue", "", "More catalogue entries from `FILE` (the format of the built-in compose/catalogue.yaml), matched before the built-in ones (repeatable).")
	sliceVar(fs, &c.Ignore, "ignore", "", "Demote finding `ID` to info (repeatable).")
	enumVar(fs, &c.FailOn, "fail-on", "error", "Lowest level that makes the exit code non-zero (3 on an error-level finding; 4 on warnings with --fail-on warn).", "warn", "error", "never")
	enumVar(fs, &c.Format, "format", "text", "Output format: text, json (schema preflight/v1, the manifests field, each workload's running pods; each finding's patch) or sarif (SARIF 2.1.0).", "text", "json", "sarif")
	noEnv(fs, "namespace", "data-claim", "catalogue", "ignore", "fail-on")
	flagGroup(fs, kubeFlags, "kubeconfig", "timeout")
	return cmd
}

// Run reads the cluster, judges it and prints the report.
func (c *KubeAuditCmd) Run(g *Globals) error {
	if err := needManifests(); err != nil {
		return err
	}
	opts := preflight.KubeAuditOptions{
		Cluster:     kube.ClusterOptions{Kubeconfig: firstKubeconfig(c.Kubeconfig), Namespaces: c.Namespace, Timeout: c.Timeout},
		KubeOptions: preflight.KubeOptions{DataClaims: c.DataClaim, Ignore: c.Ignore},
	}
	for _, f := range c.Catalogue {
		cat, err := compose.ReadCatalogue(f)
		if err != nil {
			return usageError(err)
		}
		opts.Catalogue = cat.Merge(opts.Catalogue)
	}
	r, cl, err := preflight.AuditKube(g.ctx, opts)
	if err != nil {
		if g.ctx.Err() != nil {
			return fmt.Errorf("kube audit: interrupted: %w", err)
		}
		var ae *kube.APIError
		if errors.As(err, &ae) && ae.Code == 403 {
			return &exitError{code: exitInternal, err: err, hints: []string{"the audit lists every kind it judges: bind the ClusterRole of examples/kubernetes/audit-rbac.yaml, or read namespaces you may list with -n NS"}}
		}
		return err
	}
	for _, d := range cl.Denied {
		if d.Resource == "namespaces" {
			fmt.Fprintf(g.stderr, "preflight: warning: %s refused: whether the namespaces given with -n exist is unknown (grant get on namespaces, as examples/kubernetes/audit-rbac.yaml does)\n", d)
			continue
		}
		fmt.Fprintf(g.stderr, "preflight: warning: %s refused: the claims' storage is unknown where only those objects say it\n", d)
	}
	for _, ns := range cl.MissingNamespaces {
		fmt.Fprintf(g.stderr, "preflight: warning: -n %s: the cluster has no namespace %s; nothing was read there\n", ns, ns)
	}
	if err := renderKube(g.stdout, r, c.Format); err != nil {
		return err
	}
	if code := verdictCode(r.Verdict, c.FailOn); code != exitOK {
		return &exitError{code: code}
	}
	return nil
}
