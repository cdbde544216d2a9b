package kube

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v4"
)

// DefaultServiceAccountDir is where the kubelet mounts a pod's service
// account token, CA and namespace.
const DefaultServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// ErrExecUnsupported is returned (wrapped) for a kubeconfig user that
// gets its credentials from an exec plugin or an auth provider: preflight
// does not run programs named in a kubeconfig; give it a token.
var ErrExecUnsupported = errors.New("unsupported: exec credential plugins and auth providers are not run; use a token (kubectl create token SERVICEACCOUNT) or a client certificate")

// Config is how to reach one API server.
type Config struct {
	// Source is "in-cluster" or the kubeconfig path.
	Source string `json:"source"`
	// Server is the API server's base URL (https://host:port).
	Server string `json:"server"`
	// Namespace is the service account's namespace (in-cluster) or the
	// kubeconfig context's; empty when none is set.
	Namespace string `json:"namespace,omitempty"`
	// CAData is the PEM CA bundle; empty uses the system roots.
	CAData   []byte `json:"-"`
	Insecure bool   `json:"insecure,omitempty"`
	// Token is a bearer token; TokenFile, when set, is re-read whenever
	// its modification time changes (rotated projected tokens).
	Token     string `json:"-"`
	TokenFile string `json:"-"`
	// CertData and KeyData are a PEM client certificate and key.
	CertData []byte `json:"-"`
	KeyData  []byte `json:"-"`
}

// InCluster reads the in-cluster configuration: KUBERNETES_SERVICE_HOST
// and KUBERNETES_SERVICE_PORT from env, and token, ca.crt and namespace
// under dir (DefaultServiceAccountDir when empty). ok is false when
// KUBERNETES_SERVICE_HOST is unset (not in a pod); err is set when it is
// set but the service account files cannot be read (a pod with
// automountServiceAccountToken: false).
func InCluster(env func(string) string, dir string) (cfg *Config, ok bool, err error) {
	host, port := env("KUBERNETES_SERVICE_HOST"), env("KUBERNETES_SERVICE_PORT")
	if host == "" {
		return nil, false, nil
	}
	if port == "" {
		port = "443"
	}
	if dir == "" {
		dir = DefaultServiceAccountDir
	}
	cfg = &Config{Source: "in-cluster", Server: "https://" + net.JoinHostPort(host, port), TokenFile: filepath.Join(dir, "token")}
	if _, err := os.Stat(cfg.TokenFile); err != nil {
		return nil, true, fmt.Errorf("read service account token: %w", err)
	}
	if cfg.CAData, err = readBounded(filepath.Join(dir, "ca.crt"), 1<<20); err != nil {
		return nil, true, fmt.Errorf("read service account CA: %w", err)
	}
	if ns, err := readBounded(filepath.Join(dir, "namespace"), 4096); err == nil {
		cfg.Namespace = strings.TrimSpace(string(ns))
	}
	return cfg, true, nil
}

// kubeconfig is the part of a kubeconfig file (clientcmd v1) read here.
type kubeconfig struct {
	CurrentContext string `yaml:"current-context"`
	Clusters       []struct {
		Name    string `yaml:"name"`
		Cluster struct {
			Server                   string `yaml:"server"`
			CertificateAuthority     string `yaml:"certificate-authority"`
			CertificateAuthorityData string `yaml:"certificate-authority-data"`
			InsecureSkipTLSVerify    bool   `yaml:"insecure-skip-tls-verify"`
		} `yaml:"cluster"`
	} `yaml:"clusters"`
	Contexts []struct {
		Name    string `yaml:"name"`
		Context struct {
			Cluster   string `yaml:"cluster"`
			User      string `yaml:"user"`
			Namespace string `yaml:"namespace"`
		} `yaml:"context"`
	} `yaml:"contexts"`
	Users []struct {
		Name string `yaml:"name"`
		User struct {
			Token                 string    `yaml:"token"`
			TokenFile             string    `yaml:"tokenFile"`
			ClientCertificate     string    `yaml:"client-certificate"`
			ClientCertificateData string    `yaml:"client-certificate-data"`
			ClientKey             string    `yaml:"client-key"`
			ClientKeyData         string    `yaml:"client-key-data"`
			Exec                  yaml.Node `yaml:"exec"`
			AuthProvider          yaml.Node `yaml:"auth-provider"`
		} `yaml:"user"`
	} `yaml:"users"`
}

// LoadKubeconfig reads the current context of the kubeconfig at path
// (one file; for a KUBECONFIG list pass its first element): server, CA
// (file or data), token (or tokenFile), client certificate and key (file
// or data). Relative file names are relative to the kubeconfig's
// directory. A user with exec or auth-provider is ErrExecUnsupported.
func LoadKubeconfig(path string) (*Config, error) {
	b, err := readBounded(path, 4<<20)
	if err != nil {
		return nil, fmt.Errorf("read kubeconfig: %w", err)
	}
	return ParseKubeconfig(b, filepath.Dir(path), path)
}

// ParseKubeconfig parses kubeconfig bytes; dir resolves relative file
// names, source is recorded in Config.Source.
func ParseKubeconfig(b []byte, dir, source string) (*Config, error) {
	var kc kubeconfig
	if err := yaml.Unmarshal(b, &kc); err != nil {
		return nil, fmt.Errorf("parse kubeconfig %s: %w", source, err)
	}
	ctxName := kc.CurrentContext
	if ctxName == "" && len(kc.Contexts) == 1 {
		ctxName = kc.Contexts[0].Name
	}
	cfg := &Config{Source: source}
	var clusterName, userName string
	found := false
	for _, c := range kc.Contexts {
		if c.Name == ctxName {
			clusterName, userName, cfg.Namespace, found = c.Context.Cluster, c.Context.User, c.Context.Namespace, true
		}
	}
	if !found {
		return nil, fmt.Errorf("kubeconfig %s: context %q not found", source, ctxName)
	}
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	var err error
	found = false
	for _, c := range kc.Clusters {
		if c.Name != clusterName {
			continue
		}
		found = true
		cfg.Server, cfg.Insecure = c.Cluster.Server, c.Cluster.InsecureSkipTLSVerify
		if cfg.CAData, err = fileOrData(rel(c.Cluster.CertificateAuthority), c.Cluster.CertificateAuthorityData); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: certificate-authority: %w", source, err)
		}
	}
	if !found || cfg.Server == "" {
		return nil, fmt.Errorf("kubeconfig %s: cluster %q not found or has no server", source, clusterName)
	}
	for _, u := range kc.Users {
		if u.Name != userName {
			continue
		}
		if !u.User.Exec.IsZero() || !u.User.AuthProvider.IsZero() {
			return nil, fmt.Errorf("kubeconfig %s: user %q: %w", source, userName, ErrExecUnsupported)
		}
		cfg.Token, cfg.TokenFile = u.User.Token, rel(u.User.TokenFile)
		if cfg.CertData, err = fileOrData(rel(u.User.ClientCertificate), u.User.ClientCertificateData); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: client-certificate: %w", source, err)
		}
		if cfg.KeyData, err = fileOrData(rel(u.User.ClientKey), u.User.ClientKeyData); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: client-key: %w", source, err)
		}
	}
	return cfg, nil
}

// fileOrData returns the file's bytes, else the base64-decoded data.
func fileOrData(file, data string) ([]byte, error) {
	if file != "" {
		return readBounded(file, 1<<20)
	}
	if data == "" {
		return nil, nil
	}
	return base64.StdEncoding.DecodeString(strings.TrimSpace(data))
}
