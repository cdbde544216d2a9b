//go:build unix

package kube_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/probe/kube"
)

// within runs f and fails the test when it has not returned after 20
// seconds: the files below are FIFOs, whose open blocks until a writer
// comes, so a probe that opens them without O_NONBLOCK never returns.
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("blocked opening a FIFO")
	}
}

func fifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return p
}

func TestKubeconfigFIFO(t *testing.T) {
	p := fifo(t)
	within(t, func() {
		if _, err := kube.LoadKubeconfig(p); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("LoadKubeconfig(FIFO) err = %v, want not a regular file", err)
		}
	})
}

func TestTokenFileFIFO(t *testing.T) {
	srv := peer(t, api(nil))
	kc := writeKubeconfig(t, strings.TrimSpace(serverOf(t, srv)), "    tokenFile: "+fifo(t)+"\n", "")
	within(t, func() {
		res := probe(t, kc, 2*time.Second)
		if res.Sure || !strings.Contains(res.Err, "not a regular file") {
			t.Errorf("Probe(tokenFile FIFO) = status %s sure %v err %q, want not sure, the token named", res.Status, res.Sure, res.Err)
		}
	})
}

func TestDevZeroCA(t *testing.T) {
	kc := writeKubeconfig(t, "https://127.0.0.1:1", "    token: t\n", "")
	b, err := os.ReadFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), "insecure-skip-tls-verify: true", "certificate-authority: /dev/zero", 1))
	if err := os.WriteFile(kc, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.LoadKubeconfig(kc); err == nil {
		t.Error("LoadKubeconfig(CA /dev/zero) = nil error")
	}
}

// serverOf reads the server: line of a kubeconfig written by peer.
func serverOf(t *testing.T, kc string) string {
	t.Helper()
	b, err := os.ReadFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if s, ok := strings.CutPrefix(strings.TrimSpace(l), "server: "); ok {
			return s
		}
	}
	t.Fatal("no server in kubeconfig")
	return ""
}
