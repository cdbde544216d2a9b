package kubetest

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.yaml.in/yaml/v4"
)

// WriteKubeconfig writes a kubeconfig file (mode 0600) to path with one
// cluster, user and context, all named "kubetest", which is the current
// context: server URL, the serving certificate as
// certificate-authority-data (base64 PEM), the bearer token as the user's
// token, and namespace "default". Errors are the file's write errors.
func (c *Cluster) WriteKubeconfig(path, token string) error {
	type named struct {
		Name    string         `yaml:"name"`
		Cluster map[string]any `yaml:"cluster,omitempty"`
		User    map[string]any `yaml:"user,omitempty"`
		Context map[string]any `yaml:"context,omitempty"`
	}
	cfg := struct {
		APIVersion     string  `yaml:"apiVersion"`
		Kind           string  `yaml:"kind"`
		Clusters       []named `yaml:"clusters"`
		Users          []named `yaml:"users"`
		Contexts       []named `yaml:"contexts"`
		CurrentContext string  `yaml:"current-context"`
	}{
		APIVersion: "v1",
		Kind:       "Config",
		Clusters: []named{{Name: "kubetest", Cluster: map[string]any{
			"server":                     c.URL,
			"certificate-authority-data": base64.StdEncoding.EncodeToString(c.CAPEM),
		}}},
		Users: []named{{Name: "kubetest", User: map[string]any{"token": token}}},
		Contexts: []named{{Name: "kubetest", Context: map[string]any{
			"cluster": "kubetest", "user": "kubetest", "namespace": "default",
		}}},
		CurrentContext: "kubetest",
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encode kubeconfig: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

// WriteServiceAccountDir lays dir out as the kubelet lays out
// /var/run/secrets/kubernetes.io/serviceaccount/ in a pod: the files
// token (the bearer token), ca.crt (the API server's certificate, PEM)
// and namespace (ns, no newline) are symlinks to ..data/NAME, ..data is a
// symlink to a directory ..TIMESTAMP holding the files (mode 0644). dir is
// made when missing. Calling it again on the same dir rotates the token as
// the kubelet does: a new ..TIMESTAMP directory, then ..data renamed to
// point at it in one step, then the old directory removed, so a reader
// that opens token by its path sees the old or the new token, never a mix.
// Errors are the file system's, naming the file.
func (c *Cluster) WriteServiceAccountDir(dir, ns, token string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("make service account dir: %w", err)
	}
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	stamp := ".." + time.Now().UTC().Format("2006_01_02_15_04_05.000000000")
	if err := os.Mkdir(filepath.Join(dir, stamp), 0o755); err != nil {
		return fmt.Errorf("make service account dir: %w", err)
	}
	files := map[string][]byte{"token": []byte(token), "ca.crt": c.CAPEM, "namespace": []byte(ns)}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, stamp, name), data, 0o644); err != nil {
			return fmt.Errorf("write service account %s: %w", name, err)
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(stamp, tmp); err != nil {
		return fmt.Errorf("link service account data: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		return fmt.Errorf("link service account data: %w", err)
	}
	for name := range files {
		err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name))
		if err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("link service account %s: %w", name, err)
		}
	}
	if old != "" && old != stamp && filepath.Base(old) == old {
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			return fmt.Errorf("remove old service account data: %w", err)
		}
	}
	return nil
}
