package integration_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// endlessListProxy serves the Docker Engine API on a unix socket, mode
// 0666, in front of the real engine, except GET /containers/json, whose
// answer is a JSON array whose first string never ends. It returns the
// socket path.
func endlessListProxy(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pf-endless-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "docker.sock")
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(&url.URL{Scheme: "http", Host: "docker"}) },
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", dockerSocket)
		}},
	}
	// One container whose id never ends: a decoder has to hold all of it.
	head := []byte(`[{"Id":"`)
	chunk := []byte(strings.Repeat("a", 64<<10))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/containers/json") {
			rp.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if _, err := w.Write(head); err != nil {
			return
		}
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return sock
}

// An engine (or proxy) whose container list never ends costs preflight run
// at most 16 MiB of it: under --memory 128m the entrypoint is not
// OOM-killed, says the container answer is not sure, and starts the app.
func TestRunEndlessContainerList(t *testing.T) {
	requireDocker(t)
	sock := endlessListProxy(t)
	vol := volume(t)
	seed(t, "-v", vol+":/data")
	id := startApp(t, "--memory", "128m", "--memory-swap", "128m",
		"-v", vol+":/data", "-v", sock+":/run/endless.sock",
		"-e", "DOCKER_HOST=unix:///run/endless.sock", "-e", "DEMO_ROWS=1", image)
	wantCode(t, docker(t, "wait", id), 0)
	r := docker(t, "inspect", "-f", "{{.State.OOMKilled}} {{.State.ExitCode}}", id)
	if got := strings.TrimSpace(r.stdout); got != "false 0" {
		t.Errorf("container OOMKilled and exit code = %q, want \"false 0\"", got)
	}
	logs := docker(t, "logs", id)
	wantContains(t, "app stdout", logs.stdout, "demoapp: pid=1 journal_mode=wal db=/data/app.db")
	wantContains(t, "preflight stderr", logs.stderr, "preflight: info: docker-unreachable: ")
	wantContains(t, "preflight stderr", logs.stderr, "longer than 16 MiB")
}
