package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// hungAPI is a listener that accepts connections and never answers.
func hungAPI(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var held []net.Conn
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	return ln.Addr().String()
}

func kubeconfigFor(t *testing.T, addr string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster: {server: 'https://%s', insecure-skip-tls-verify: true}\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\nusers:\n- name: u\n  user: {token: t}\n", addr)
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCheckKubeHungAndUnreachable: an API server that accepts and never
// answers, and one that is not there, give kube-unreachable within
// --kube-timeout, never "no other pods"; with --kube required the verdict
// is unsafe.
func TestCheckKubeHungAndUnreachable(t *testing.T) {
	dir := t.TempDir()
	testdb.Make(t, filepath.Join(dir, "app.db"), "wal", 1)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	for _, c := range []struct {
		name, addr, mode string
		code             int
	}{
		{"hung", hungAPI(t), "auto", 0},
		{"hung-required", hungAPI(t), "required", 3},
		{"unreachable", closed, "auto", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			out, errs, code, _ := runBin(t, []string{"KUBECONFIG=" + kubeconfigFor(t, c.addr)}, "check", "--format", "json", "--docker", "off",
				"--kube", c.mode, "--kube-timeout", "400ms", "--pod", "app/me", dir)
			took := time.Since(start)
			if code != c.code {
				t.Fatalf("check exit %d, want %d\n%s%s", code, c.code, out, errs)
			}
			if took > 5*time.Second {
				t.Errorf("check took %s with --kube-timeout 400ms", took)
			}
			r := decodeReport(t, out)
			ids := findingIDs(r)
			want := "kube-unreachable:info"
			if c.mode == "required" {
				want = "kube-unreachable:error"
			}
			if !slices.Contains(ids, want) {
				t.Errorf("findings %v, want %s", ids, want)
			}
			db := r.DataDirs[0].Databases[0]
			if db.WriterProbes.Sure || !strings.Contains(strings.Join(db.WriterProbes.Blind, "; "), "pods: Kubernetes API ") {
				t.Errorf("writer_probes %+v, want not sure, pods blind", db.WriterProbes)
			}
		})
	}
}

// TestCheckKubeOutsideCluster: with no in-cluster environment and no
// kubeconfig, auto asks nothing and the report has no kube part.
func TestCheckKubeOutsideCluster(t *testing.T) {
	dir := t.TempDir()
	testdb.Make(t, filepath.Join(dir, "app.db"), "delete", 1)
	out, errs, code, _ := runBin(t, []string{"KUBECONFIG=", "PREFLIGHT_KUBECONFIG=", "KUBERNETES_SERVICE_HOST="}, "check", "--format", "json", "--docker", "off", dir)
	if code != 0 {
		t.Fatalf("check exit %d\n%s%s", code, out, errs)
	}
	if strings.Contains(out, `"kube"`) {
		t.Errorf("report outside a cluster mentions kube:\n%s", out)
	}
}
