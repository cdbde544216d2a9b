package kube_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/probe/kube"
)

// selfSigned returns a PEM certificate and key for a client named cn.
func selfSigned(t *testing.T, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	tmpl.Subject.CommonName = cn
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// TestKubeconfigClientCertificate: a kubeconfig user with
// client-certificate (a file, relative to the kubeconfig) and
// client-key-data authenticates by TLS, and the CA from
// certificate-authority-data verifies the server.
func TestKubeconfigClientCertificate(t *testing.T) {
	var gotCN string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) > 0 {
			gotCN = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		http.NotFound(w, r)
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	cert, key := selfSigned(t, "operator")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "client.crt"), cert, 0o600); err != nil {
		t.Fatal(err)
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: c
clusters:
- name: k
  cluster: {server: %q, certificate-authority-data: %s}
contexts:
- name: c
  context: {cluster: k, user: u, namespace: app}
users:
- name: u
  user: {client-certificate: client.crt, client-key-data: %s}
`, srv.URL, base64.StdEncoding.EncodeToString(ca), base64.StdEncoding.EncodeToString(key))
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	res := kube.Probe(context.Background(), []string{"/data"}, kube.Options{Kubeconfig: kc, Pod: "app/me", Timeout: 5 * time.Second})
	if gotCN != "operator" {
		t.Fatalf("server saw client certificate %q (probe %s: %s), want operator", gotCN, res.Status, res.Err)
	}
	if res.Status != kube.StatusNoPod {
		t.Errorf("Probe = %s (%s), want no-pod (404 for app/me)", res.Status, res.Err)
	}
}

func FuzzParseKubeconfig(f *testing.F) {
	f.Add([]byte("current-context: c\nclusters: [{name: k, cluster: {server: 'https://h:6443'}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\nusers: [{name: u, user: {token: t}}]\n"))
	f.Add([]byte("users: [{name: u, user: {exec: {command: x}}}]\ncontexts: [{name: c, context: {user: u}}]\n"))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := kube.ParseKubeconfig(b, t.TempDir(), "fuzz")
		if err == nil && cfg.Server == "" {
			t.Errorf("ParseKubeconfig(%q) = no server, no error", b)
		}
	})
}
