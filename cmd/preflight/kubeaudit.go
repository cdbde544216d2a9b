package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/probe/kube"
)

// KubeAuditCmd is `preflight kube audit`.
type KubeAuditCmd struct {
	Kubeconfig string        `name:"kubeconfig" env:"PREFLIGHT_KUBECONFIG,KUBECONFIG" placeholder:"FILE" help:"Reach the Kubernetes API through this kubeconfig (the first existing file of a KUBECONFIG list); without one, the in-cluster service account."`
	Namespace  []string      `name:"namespace" short:"n" env:"-" placeholder:"NS" help:"Read only namespace NS (repeatable); default every namespace, by one cluster-wide list per kind (the ClusterRole of examples/kubernetes/audit-rbac.yaml)."`
	Timeout    time.Duration `name:"timeout" env:"PREFLIGHT_KUBE_AUDIT_TIMEOUT" default:"60s" help:"Longest wait for the whole audit, every request included."`
	DataClaim  []string      `name:"data-claim" env:"-" placeholder:"[NAMESPACE/]CLAIM" help:"A PersistentVolumeClaim that holds SQLite data, whatever image mounts it (repeatable; the label preflight.io/sqlite: \"true\" on the claim says so too)."`
	Catalogue  []string      `name:"catalogue" env:"-" placeholder:"FILE" help:"More catalogue entries (the format of the built-in compose/catalogue.yaml), matched before the built-in ones (repeatable)."`
	Ignore     []string      `name:"ignore" env:"-" sep:"," placeholder:"ID" help:"Demote finding ID to info (repeatable)."`
	FailOn     string        `name:"fail-on" env:"-" enum:"warn,error,never" default:"error" help:"Lowest level that makes the exit code non-zero (3 on an error-level finding; 4 on warnings with --fail-on warn)."`
	Format     string        `name:"format" enum:"text,json,sarif" default:"text" env:"PREFLIGHT_FORMAT" help:"Output format: text, json (schema preflight/v1, the manifests field, each workload's running pods; each finding's patch) or sarif (SARIF 2.1.0)."`
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
		fmt.Fprintf(g.stderr, "preflight: warning: %s refused: the claims' storage is unknown where only those objects say it\n", d)
	}
	if err := renderKube(g.stdout, r, c.Format); err != nil {
		return err
	}
	if code := verdictCode(r.Verdict, c.FailOn); code != exitOK {
		return &exitError{code: code}
	}
	return nil
}
