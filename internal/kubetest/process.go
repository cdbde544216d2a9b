package kubetest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// errExited marks a server that exited while Start waited for it (most
// often a port taken between picking it and binding it): Start retries.
var errExited = errors.New("exited before it was ready")

// stopGrace is how long stop waits after SIGTERM before SIGKILL.
const stopGrace = 10 * time.Second

// proc is one server process and the file its output goes to.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when the process has been waited for
}

// secrets are the files the API server authenticates with.
type secrets struct {
	token     string // the admin bearer token
	tokenFile string // token,user,uid,group CSV (--token-auth-file)
	keyFile   string // RSA private key, PKCS #1 PEM (ServiceAccount signing)
	pubFile   string // its public key, PKIX PEM (ServiceAccount verification)
}

// writeSecrets makes an admin token and a 2048-bit RSA ServiceAccount
// signing key pair in dir.
func writeSecrets(dir string) (secrets, error) {
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return secrets{}, fmt.Errorf("make admin token: %w", err)
	}
	s := secrets{
		token:     hex.EncodeToString(raw),
		tokenFile: filepath.Join(dir, "tokens.csv"),
		keyFile:   filepath.Join(dir, "sa.key"),
		pubFile:   filepath.Join(dir, "sa.pub"),
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return secrets{}, fmt.Errorf("make service account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return secrets{}, fmt.Errorf("encode service account key: %w", err)
	}
	files := map[string][]byte{
		s.tokenFile: []byte(s.token + ",admin,admin,system:masters\n"),
		s.keyFile:   pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		s.pubFile:   pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
	}
	for name, data := range files {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			return secrets{}, fmt.Errorf("write %s: %w", name, err)
		}
	}
	return s, nil
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startEtcd runs etcd on two free ports with its data in Dir/etcd-N and
// returns its client URL once /health answers.
func (c *Cluster) startEtcd(bin string, attempt int) (string, error) {
	client, err := freePort()
	if err != nil {
		return "", err
	}
	peer, err := freePort()
	if err != nil {
		return "", err
	}
	clientURL := "http://127.0.0.1:" + strconv.Itoa(client)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
	p, err := c.run("etcd", filepath.Join(bin, "etcd"),
		"--name", "kubetest",
		"--data-dir", filepath.Join(c.Dir, "etcd-"+strconv.Itoa(attempt)),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "kubetest="+peerURL)
	if err != nil {
		return "", err
	}
	return clientURL, waitReady(p, &http.Client{Timeout: 5 * time.Second}, clientURL+"/health")
}

// startAPIServer runs kube-apiserver over etcdURL on a free port and sets
// URL and CAFile once /readyz answers 200.
func (c *Cluster) startAPIServer(bin string, attempt int, etcdURL string, s secrets) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	certDir := filepath.Join(c.Dir, "certs-"+strconv.Itoa(attempt))
	p, err := c.run("kube-apiserver", filepath.Join(bin, "kube-apiserver"),
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--cert-dir", certDir,
		"--token-auth-file", s.tokenFile,
		"--service-account-key-file", s.pubFile,
		"--service-account-signing-key-file", s.keyFile,
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--authorization-mode", "RBAC",
		"--service-cluster-ip-range", "10.96.0.0/16")
	if err != nil {
		return err
	}
	c.URL = "https://127.0.0.1:" + strconv.Itoa(port)
	c.CAFile = filepath.Join(certDir, "apiserver.crt")
	// Readiness only: the certificate is not there before the server is,
	// and bootstrap's first request verifies it with CAFile.
	probe := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // our own loopback server, readiness only
	}}
	return waitReady(p, probe, c.URL+"/readyz")
}

// run starts one server with its output in Dir/NAME.log.
func (c *Cluster) run(name, path string, args ...string) (*proc, error) {
	logPath := filepath.Join(c.Dir, name+".log")
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", name, err)
	}
	defer out.Close()
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	c.procs = append(c.procs, p)
	return p, nil
}

// waitReady polls url every 100 ms until it answers 200, the process exits
// (errExited) or ReadyTimeout passes. Both errors carry the log's tail.
func waitReady(p *proc, client *http.Client, url string) error {
	deadline := time.Now().Add(ReadyTimeout)
	for time.Now().Before(deadline) {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s %w (%v): %s", p.name, errExited, p.cmd.ProcessState, logTail(p.log))
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not ready at %s after %v: %s", p.name, url, ReadyTimeout, logTail(p.log))
}

// logTail returns the last 4 KiB of a log file.
func logTail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(data) > 4096 {
		data = data[len(data)-4096:]
	}
	return string(data)
}

// stop ends every process Start began, last first, by its pid: SIGTERM,
// then SIGKILL after stopGrace. It may be called more than once.
func (c *Cluster) stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(stopGrace):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	c.procs = nil
}
