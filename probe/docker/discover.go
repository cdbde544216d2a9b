package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// DefaultHost is the engine address when nothing else is configured:
// unix:///var/run/docker.sock, and on Windows npipe:////./pipe/docker_engine
// (what the docker CLI uses there).
const DefaultHost = defaultHost

// Discover finds the engine address the way the docker CLI does
// (cli/command/cli.go resolveContextName and the context store):
//
//  1. Options.Host, Source "option";
//  2. $DOCKER_HOST, Source "DOCKER_HOST";
//  3. $DOCKER_CONTEXT, else "currentContext" in <ConfigDir>/config.json:
//     the docker endpoint "Endpoints.docker.Host" of
//     <ConfigDir>/contexts/meta/<hex sha256 of the name>/meta.json,
//     Source "context NAME" (Docker Desktop for Linux, Colima, Lima,
//     Rancher Desktop and OrbStack install such contexts);
//  4. DefaultHost, Source SourceDefault (also for the context "default").
//
// It reads files but contacts nothing. It returns an error when config.json
// is malformed, or a named context has no readable meta.json or no docker
// endpoint; a missing config.json is not an error.
func Discover(opts Options) (Endpoint, error) {
	env := opts.env()
	if opts.Host != "" {
		return Endpoint{Host: opts.Host, Source: "option"}, nil
	}
	if h := env("DOCKER_HOST"); h != "" {
		return Endpoint{Host: h, Source: "DOCKER_HOST"}, nil
	}
	dir := opts.configDir()
	name := env("DOCKER_CONTEXT")
	if name == "" && dir != "" {
		b, err := os.ReadFile(filepath.Join(dir, "config.json"))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return Endpoint{}, fmt.Errorf("read docker config: %w", err)
		default:
			name, err = ParseCurrentContext(b)
			if err != nil {
				return Endpoint{}, err
			}
		}
	}
	if name == "" || name == "default" {
		return Endpoint{Host: DefaultHost, Source: SourceDefault}, nil
	}
	if dir == "" {
		return Endpoint{}, fmt.Errorf("find docker context %q: no config directory", name)
	}
	f, err := os.Open(ContextMetaPath(dir, name))
	if err != nil {
		return Endpoint{}, fmt.Errorf("find docker context %q: %w", name, err)
	}
	defer f.Close()
	host, err := ParseContextMeta(f)
	if err != nil {
		return Endpoint{}, fmt.Errorf("read docker context %q: %w", name, err)
	}
	return Endpoint{Host: host, Source: "context " + name}, nil
}

// ContextMetaPath is the docker CLI context store path of the metadata of
// context name: <configDir>/contexts/meta/<hex sha256(name)>/meta.json.
func ContextMetaPath(configDir, name string) string {
	sum := sha256.Sum256([]byte(name))
	return filepath.Join(configDir, "contexts", "meta", hex.EncodeToString(sum[:]), "meta.json")
}

// ParseCurrentContext returns "currentContext" from a docker CLI
// config.json; "" when it is unset.
func ParseCurrentContext(configJSON []byte) (string, error) {
	var c struct {
		CurrentContext string `json:"currentContext"`
	}
	if err := json.Unmarshal(configJSON, &c); err != nil {
		return "", fmt.Errorf("parse docker config.json: %w", err)
	}
	return c.CurrentContext, nil
}

// ParseContextMeta returns Endpoints.docker.Host from a context meta.json,
// e.g. {"Name":"colima","Endpoints":{"docker":{"Host":"unix:///Users/me/.colima/default/docker.sock"}}}.
func ParseContextMeta(r io.Reader) (string, error) {
	var m struct {
		Endpoints map[string]struct {
			Host string `json:"Host"`
		} `json:"Endpoints"`
	}
	if err := json.NewDecoder(r).Decode(&m); err != nil {
		return "", fmt.Errorf("parse context meta.json: %w", err)
	}
	ep, ok := m.Endpoints["docker"]
	if !ok || ep.Host == "" {
		return "", errors.New("parse context meta.json: no docker endpoint host")
	}
	return ep.Host, nil
}

func (o Options) env() func(string) string {
	if o.Env != nil {
		return o.Env
	}
	return os.Getenv
}

func (o Options) configDir() string {
	if o.ConfigDir != "" {
		return o.ConfigDir
	}
	env := o.env()
	if d := env("DOCKER_CONFIG"); d != "" {
		return d
	}
	home := env("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".docker")
}

func (o Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultTimeout
}
