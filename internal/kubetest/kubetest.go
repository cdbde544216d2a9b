// Package kubetest starts a real Kubernetes API server (kube-apiserver
// v1.37.2 over its own etcd 3.7) on loopback for tests, and creates, reads
// and patches objects in it over plain net/http and encoding/json: the main
// module takes no k8s.io dependency for its tests either.
//
// No kubelet, scheduler or controller manager runs. Pods never run, but what
// the API holds is real: a pod "runs on node X" when created with
// spec.nodeName X, its phase is whatever PatchPodPhase sets, PVCs stay
// Pending unless created with volumeName, Deployments make no ReplicaSets,
// and no namespace gets its "default" ServiceAccount by itself (Apply and
// Create make it for every Namespace they create, and Start makes it for
// "default"). Authentication is a static token file (AdminToken, in
// system:masters) plus ServiceAccount tokens (Token); authorization is RBAC,
// enforced as in a real cluster.
//
// The binaries come from scripts/kube-tools.sh, which builds them once into
// ~/.cache/preflight-tools/kube-v1.37.2 (see BinDir). Without them Start
// skips the test with a message saying how to build them; under CI=true or
// PREFLIGHT_REQUIRE_KUBE=1 it fails instead.
//
// Each Start costs about 2 to 10 s (etcd, then the API server's readiness)
// and some 300 MB of memory while the test runs; tests that need many
// objects should share one Cluster and keep apart by namespace.
package kubetest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Version is the Kubernetes version of the API server the harness runs.
const Version = "v1.37.2"

// ReadyTimeout bounds how long Start waits for etcd's /health and then for
// the API server's /readyz, each; past it Start fails the test with the tail
// of the server's log.
const ReadyTimeout = 2 * time.Minute

// requestTimeout bounds every request a Cluster helper makes.
const requestTimeout = 30 * time.Second

// maxBody bounds the bytes read from any one response of the API server.
const maxBody = 64 << 20

// Cluster is a running API server and its etcd, stopped by t.Cleanup.
type Cluster struct {
	// URL is the API server's base URL, https://127.0.0.1:PORT (no
	// trailing slash).
	URL string
	// CAFile is the path of the serving certificate the API server made
	// for itself in its --cert-dir (apiserver.crt: the serving certificate
	// then the CA that signed it, PEM). Clients trust the server with it.
	CAFile string
	// CAPEM is the content of CAFile.
	CAPEM []byte
	// AdminToken is a bearer token of user "admin" in group
	// system:masters (every verb on every resource).
	AdminToken string
	// Dir is the temporary directory holding etcd's data, the token file,
	// the ServiceAccount keys, the certificates and the servers' logs
	// (etcd.log, kube-apiserver.log).
	Dir string

	t         testing.TB
	client    *http.Client
	procs     []*proc
	mu        sync.Mutex
	resources map[string]map[string]resource // group/version -> kind -> resource
}

// BinDir returns the directory that holds the etcd and kube-apiserver
// binaries: $PREFLIGHT_KUBE_BIN if set, else
// $PREFLIGHT_TOOLS_DIR/kube-v1.37.2, else
// $HOME/.cache/preflight-tools/kube-v1.37.2 (where scripts/kube-tools.sh
// builds them). The error says which binary is missing, and where it was
// looked for.
func BinDir() (string, error) {
	dir := os.Getenv("PREFLIGHT_KUBE_BIN")
	if dir == "" {
		tools := os.Getenv("PREFLIGHT_TOOLS_DIR")
		if tools == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("find kube binaries: %w", err)
			}
			tools = filepath.Join(home, ".cache", "preflight-tools")
		}
		dir = filepath.Join(tools, "kube-"+Version)
	}
	for _, name := range []string{"etcd", "kube-apiserver"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return "", fmt.Errorf("find kube binaries: %w", err)
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", fmt.Errorf("find kube binaries: %s is not an executable file", filepath.Join(dir, name))
		}
	}
	return dir, nil
}

// Required reports whether a missing binary fails the test instead of
// skipping it: CI=true or PREFLIGHT_REQUIRE_KUBE=1.
func Required() bool {
	return os.Getenv("CI") == "true" || os.Getenv("PREFLIGHT_REQUIRE_KUBE") == "1"
}

// NeedBinaries skips the test (fails it when Required) unless BinDir
// finds both binaries, and returns their directory.
func NeedBinaries(t testing.TB) string {
	t.Helper()
	dir, err := BinDir()
	if err == nil {
		return dir
	}
	msg := fmt.Sprintf("Kubernetes API server test: %v (build them with scripts/kube-tools.sh, or set PREFLIGHT_KUBE_BIN)", err)
	if Required() {
		t.Fatal(msg + " (CI=true or PREFLIGHT_REQUIRE_KUBE=1)")
	}
	t.Skip(msg)
	return ""
}

// Start starts etcd and kube-apiserver on free loopback ports, each with
// data of its own in a temporary directory, waits (at most ReadyTimeout
// each) until etcd is healthy and the API server answers /readyz with 200,
// creates the "default" ServiceAccount in namespace "default", and returns
// the Cluster. t.Cleanup stops both processes by their pid (SIGTERM, then
// SIGKILL after 10 s) before the directory is removed. Start skips or fails
// the test as NeedBinaries does when the binaries are missing, and fails it
// when a server does not start (with the tail of its log).
func Start(t testing.TB) *Cluster {
	t.Helper()
	bin := NeedBinaries(t)
	c := &Cluster{Dir: t.TempDir(), t: t, resources: map[string]map[string]resource{}}
	t.Cleanup(c.stop)
	if err := c.start(bin); err != nil {
		t.Fatalf("start Kubernetes API server: %v", err)
	}
	return c
}

// start runs the two servers, retrying with fresh ports when a port picked
// as free was taken before the server bound it.
func (c *Cluster) start(bin string) error {
	secrets, err := writeSecrets(c.Dir)
	if err != nil {
		return err
	}
	c.AdminToken = secrets.token
	var last error
	for attempt := 1; attempt <= 3; attempt++ {
		etcdURL, err := c.startEtcd(bin, attempt)
		if err == nil {
			err = c.startAPIServer(bin, attempt, etcdURL, secrets)
		}
		if err == nil {
			return c.bootstrap()
		}
		last = err
		c.stop()
		if !errors.Is(err, errExited) {
			return err
		}
	}
	return last
}

// bootstrap loads the CA, makes the client and creates what a controller
// manager would have: the default namespace's ServiceAccount.
func (c *Cluster) bootstrap() error {
	pem, err := os.ReadFile(c.CAFile)
	if err != nil {
		return fmt.Errorf("read serving certificate: %w", err)
	}
	c.CAPEM = pem
	c.client, err = newClient(pem)
	if err != nil {
		return err
	}
	return c.ensureDefaultServiceAccount("default")
}

// newClient returns an HTTP client that trusts exactly the CA in pem.
func newClient(pem []byte) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("parse serving certificate: no PEM certificate")
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	return &http.Client{Transport: tr, Timeout: requestTimeout}, nil
}

// HTTPClient returns an HTTP client that trusts the API server's
// certificate (and nothing else) and times out requests after 30 s. It
// sends no credentials: set "Authorization: Bearer TOKEN" per request.
func (c *Cluster) HTTPClient() *http.Client {
	return c.client
}

// ctx returns the test's context bounded by requestTimeout.
func (c *Cluster) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.t.Context(), requestTimeout)
}

// InClusterEnv returns the environment a pod has for this API server:
// KUBERNETES_SERVICE_HOST=127.0.0.1 and KUBERNETES_SERVICE_PORT=PORT (the
// API server listens on loopback only: a container reaches it on the host
// network). With WriteServiceAccountDir's files at
// /var/run/secrets/kubernetes.io/serviceaccount/, that is the in-cluster
// configuration.
func (c *Cluster) InClusterEnv() []string {
	u, err := url.Parse(c.URL)
	if err != nil {
		return nil
	}
	return []string{"KUBERNETES_SERVICE_HOST=" + u.Hostname(), "KUBERNETES_SERVICE_PORT=" + u.Port()}
}

// Stop stops the API server and etcd now (as t.Cleanup would), for a test
// of what a client does when the API goes away: URL then refuses
// connections. The Cluster's helpers fail afterwards. Calling it again, or
// the cleanup after it, does nothing.
func (c *Cluster) Stop() {
	c.stop()
}

// NeedKubectl returns the path of the kubectl that scripts/kube-tools.sh
// builds beside the API server (in BinDir's directory), skipping the test
// (failing it when Required) when it is missing, as NeedBinaries does.
func NeedKubectl(t testing.TB) string {
	t.Helper()
	path := filepath.Join(NeedBinaries(t), "kubectl")
	fi, err := os.Stat(path)
	if err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		return path
	}
	msg := fmt.Sprintf("kubectl test: no executable %s (build it with scripts/kube-tools.sh, or set PREFLIGHT_KUBE_BIN)", path)
	if Required() {
		t.Fatal(msg + " (CI=true or PREFLIGHT_REQUIRE_KUBE=1)")
	}
	t.Skip(msg)
	return ""
}
