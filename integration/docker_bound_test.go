package integration_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/fakeengine"
)

// endlessListProxy serves the Docker Engine API on a unix socket, mode
// 0666, in front of the real engine, except GET /containers/json, whose
// answer is a JSON array whose first string never ends. It returns the
// socket path.
func endlessListProxy(t *testing.T) string {
	// One container whose id never ends: a decoder has to hold all of it.
	head := []byte(`[{"Id":"`)
	chunk := []byte(strings.Repeat("a", 64<<10))
	return listProxy(t, func(w io.Writer, ctx context.Context) {
		if _, err := w.Write(head); err != nil {
			return
		}
		for ctx.Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
}

// emptiesListProxy is listProxy whose container list is 16 MiB (the body
// bound, exactly) of [{},{},...]: 5.6 million empty containers.
func emptiesListProxy(t *testing.T) string {
	body := fakeengine.Empties("", "", 16<<20)
	return listProxy(t, func(w io.Writer, _ context.Context) { w.Write(body) })
}

// listProxy serves the Docker Engine API on a unix socket, mode 0666, in
// front of the real engine, except GET /containers/json, whose answer
// write writes. It returns the socket path.
func listProxy(t *testing.T, write func(w io.Writer, ctx context.Context)) string {
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
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/containers/json") {
			rp.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		write(w, r.Context())
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

// runBehind runs the image's entrypoint (preflight run, then demoapp) in a
// container limited to 128 MiB whose DOCKER_HOST is the proxy at sock,
// over a seeded WAL database, and waits for it to exit. It returns the
// logs and how long the container ran, after checking it was not
// OOM-killed and exited 0. The log is JSON (--log-format json), whose
// lines keep each finding's whole message (a text line is the short
// reason).
func runBehind(t *testing.T, sock string) (result, time.Duration) {
	t.Helper()
	requireDocker(t)
	vol := volume(t)
	seed(t, "-v", vol+":/data")
	id := startApp(t, "--memory", "128m", "--memory-swap", "128m",
		"-v", vol+":/data", "-v", sock+":/run/proxy.sock",
		"-e", "DOCKER_HOST=unix:///run/proxy.sock", "-e", "DEMO_ROWS=1", "-e", "PREFLIGHT_LOG_FORMAT=json", image)
	wantCode(t, docker(t, "wait", id), 0)
	took := ranFor(t, id)
	logs := docker(t, "logs", id)
	wantContains(t, "app stdout", logs.stdout, "demoapp: pid=1 journal_mode=wal db=/data/app.db")
	wantContains(t, "preflight stderr", logs.stderr, `{"level":"info","id":"docker-unreachable",`)
	wantContains(t, "preflight stderr", logs.stderr, `"url":"https://preflight-sqlite.github.io/preflight/reference/findings/#docker-unreachable"`)
	return logs, took
}

// ranFor checks that the exited container id was not OOM-killed and
// exited 0, and returns how long it ran, as the engine timed it.
func ranFor(t *testing.T, id string) time.Duration {
	t.Helper()
	r := docker(t, "inspect", "-f", "{{.State.OOMKilled}} {{.State.ExitCode}} {{.State.StartedAt}} {{.State.FinishedAt}}", id)
	f := strings.Fields(r.stdout)
	if len(f) != 4 || f[0] != "false" || f[1] != "0" {
		t.Fatalf("container OOMKilled, exit code, start and end = %q, want false 0 ...", r.stdout)
	}
	started, err1 := time.Parse(time.RFC3339Nano, f[2])
	finished, err2 := time.Parse(time.RFC3339Nano, f[3])
	if err1 != nil || err2 != nil {
		t.Fatalf("parse container times %q: %v %v", r.stdout, err1, err2)
	}
	return finished.Sub(started)
}

// An engine (or proxy) whose container list never ends costs preflight run
// at most 16 MiB of it: under --memory 128m the entrypoint is not
// OOM-killed, says the container answer is not sure, and starts the app.
func TestRunEndlessContainerList(t *testing.T) {
	logs, _ := runBehind(t, endlessListProxy(t))
	wantContains(t, "preflight stderr", logs.stderr, "longer than 16 MiB")
}

// An engine (or proxy) whose container list is 16 MiB of [{},{},...]
// passes the byte bound but would decode into 5.6 million structs (7 GB,
// half a minute): under --memory 128m the entrypoint is not OOM-killed,
// says the container answer is not sure, and starts the application
// within --docker-timeout (2s) and a few seconds.
func TestRunEmptiesContainerList(t *testing.T) {
	logs, took := runBehind(t, emptiesListProxy(t))
	t.Logf("container ran %s", took)
	if limit := 2*time.Second + 5*time.Second; took > limit {
		t.Errorf("container ran %s (preflight run, then the application), want at most %s (--docker-timeout 2s and 5s)", took, limit)
	}
	wantContains(t, "preflight stderr", logs.stderr, "an array of more than 10000 entries")
}
