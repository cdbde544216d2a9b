//go:build linux

package docker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/probe/docker"
)

// TestProbeVolume: A, B and C mount one named volume; B read-write with
// compose labels, C read-only. Probe runs inside A with the real docker
// socket bind-mounted.
func TestProbeVolume(t *testing.T) {
	testImage(t)
	vol := runID + "-vol"
	mustDocker(t, "volume", "create", "--label", "preflight.test="+runID, vol)
	b := runSleeper(t, "--label", "com.docker.compose.project=demo", "--label", "com.docker.compose.service=app", "--label", "com.docker.compose.config-hash=0123abcd",
		"-v", vol+":/srv/data")
	c := runSleeper(t, "-v", vol+":/data:ro")

	a, r := probeInside(t, []string{"-v", "/var/run/docker.sock:/var/run/docker.sock", "-v", vol + ":/data"}, "/data/app.db")
	t.Logf("Probe inside A = %s", dumpJSON(r))
	if r.Status != docker.StatusRan || !r.Sure {
		t.Fatalf("Probe: status %q sure %v err %q, want ran and sure", r.Status, r.Sure, r.Err)
	}
	if r.SelfHow != "mountinfo" || r.Self == nil || r.Self.ID != a {
		t.Errorf("Probe: SelfHow %q Self %+v, want mountinfo and id %s", r.SelfHow, r.Self, a)
	}
	if !r.InContainer {
		t.Errorf("Probe: InContainer false inside a container")
	}
	if len(r.Paths) != 1 || r.Paths[0].Mount == nil || r.Paths[0].Mount.Type != "volume" || r.Paths[0].Mount.Name != vol {
		t.Errorf("Probe: Paths %+v, want /data/app.db on volume %s", r.Paths, vol)
	} else if want := r.Paths[0].Mount.Source + "/app.db"; r.Paths[0].HostPath != want {
		t.Errorf("Probe: HostPath %q, want %q", r.Paths[0].HostPath, want)
	}
	if r.Engine == nil || r.Engine.APIVersion != "1.41" || r.Engine.Kind != "docker" {
		t.Errorf("Probe: Engine %+v, want kind docker, API 1.41", r.Engine)
	}
	ws := writerNames(r.Writers)
	if len(r.Writers) != 1 {
		t.Errorf("Probe: %d writers, want 1 (B)", len(r.Writers))
	}
	w, ok := ws[b]
	switch {
	case !ok:
		t.Errorf("Probe: B %s not reported", b)
	case w.Relation != docker.SameVolume || w.Container.ComposeProject != "demo" || w.Container.ComposeService != "app" ||
		w.Mount.Destination != "/srv/data" || !w.Mount.RW || w.Path != "/data/app.db":
		t.Errorf("Probe: writer B = %+v, want same volume, demo/app, /srv/data rw", w)
	}
	if _, ok := ws[a]; ok {
		t.Errorf("Probe reported its own container")
	}
	if _, ok := ws[c]; ok {
		t.Errorf("Probe reported read-only C")
	}

	// On the host: A has exited, C is read-only, so B alone.
	h := docker.WritersOf(context.Background(), vol, "", docker.Options{Host: docker.DefaultHost})
	if h.Status != docker.StatusRan || !h.Sure || len(h.Writers) != 1 || h.Writers[0].Container.ID != b {
		t.Errorf("WritersOf(%q) = %s, want B only", vol, dumpJSON(h))
	}
}

// getOnlyProxy is a reverse proxy on a unix socket in front of the real
// docker socket that answers 403 to every non-GET request and records
// what it saw.
type getOnlyProxy struct {
	sock     string
	mu       sync.Mutex
	requests []string // "METHOD path"
	deny     string   // a path (after the API version) answered 403, as a proxy without that section does
}

func startProxy(t *testing.T) *getOnlyProxy {
	dir, err := os.MkdirTemp("", "pfproxy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	p := &getOnlyProxy{sock: filepath.Join(dir, "docker.sock")}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(&url.URL{Scheme: "http", Host: "docker"}) },
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", "/var/run/docker.sock")
		}},
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.requests = append(p.requests, r.Method+" "+r.URL.Path)
		deny := p.deny
		p.mu.Unlock()
		if r.Method != http.MethodGet || deny != "" && strings.HasSuffix(r.URL.Path, deny) {
			http.Error(w, "forbidden by proxy", http.StatusForbidden)
			return
		}
		rp.ServeHTTP(w, r)
	})
	l, err := net.Listen("unix", p.sock)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(p.sock, 0o666)
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return p
}

func (p *getOnlyProxy) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.requests)
}

// checkGETOnly fails on any non-GET request or a path outside /_ping,
// /version, /info, /volumes and /containers, and the Swarm lists
// (/services, /tasks, /nodes) that the probe reads when the engine is a
// Swarm manager (as it is while integration's Swarm tests, which may run
// beside these, hold it in a one-node swarm).
func (p *getOnlyProxy) checkGETOnly(t *testing.T) {
	t.Helper()
	for _, r := range p.seen() {
		method, path, _ := strings.Cut(r, " ")
		path = strings.TrimPrefix(path, "/v1.41")
		ok := method == http.MethodGet && (path == "/_ping" || path == "/version" || path == "/info" || path == "/volumes" ||
			path == "/services" || path == "/tasks" || path == "/nodes" || strings.HasPrefix(path, "/containers/"))
		if !ok {
			t.Errorf("proxy saw %q: want only GET on /_ping, /version, /info, /volumes, /containers and the Swarm lists", r)
		}
	}
}

// TestProbeBindThroughProxy: A binds X/data; B binds X (contains ours), E
// binds X/data/sub (inside ours), D binds an unrelated directory. Probe
// runs inside A through a GET-only proxy socket mounted as the docker
// socket.
func TestProbeBindThroughProxy(t *testing.T) {
	testImage(t)
	p := startProxy(t)
	x := t.TempDir()
	data := filepath.Join(x, "data")
	other := t.TempDir()
	for _, d := range []string{data, filepath.Join(data, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b := runSleeper(t, "-v", x+":/x")
	e := runSleeper(t, "-v", filepath.Join(data, "sub")+":/sub")
	d := runSleeper(t, "-v", other+":/data")

	a, r := probeInside(t, []string{"-v", p.sock + ":/var/run/docker.sock", "-v", data + ":/data"}, "/data")
	t.Logf("Probe inside A = %s", dumpJSON(r))
	t.Logf("proxy saw %q", p.seen())
	p.checkGETOnly(t)
	if r.Status != docker.StatusRan || !r.Sure || r.Self == nil || r.Self.ID != a {
		t.Fatalf("Probe: status %q sure %v self %+v err %q, want ran, sure, self %s", r.Status, r.Sure, r.Self, r.Err, a)
	}
	if r.Engine == nil || r.Engine.APIVersion != "1.41" {
		t.Errorf("Probe: Engine %+v, want API 1.41", r.Engine)
	}
	ws := writerNames(r.Writers)
	if w, ok := ws[b]; !ok || w.Relation != docker.BindContainsOurs {
		t.Errorf("Probe: B (binds %s) = %+v, want %q", x, w, docker.BindContainsOurs)
	}
	if w, ok := ws[e]; !ok || w.Relation != docker.BindInsideOurs {
		t.Errorf("Probe: E (binds %s/sub) = %+v, want %q", data, w, docker.BindInsideOurs)
	}
	if _, ok := ws[d]; ok {
		t.Errorf("Probe reported D, which binds an unrelated directory")
	}
	if len(r.Writers) != 2 {
		t.Errorf("Probe: %d writers, want 2 (B, E)", len(r.Writers))
	}

	// The same from the host, through the proxy.
	h := docker.WritersOf(context.Background(), "", data, docker.Options{Host: "unix://" + p.sock})
	t.Logf("WritersOf(%q) via proxy = %d writers", data, len(h.Writers))
	p.checkGETOnly(t)
	hw := writerNames(h.Writers)
	if h.Status != docker.StatusRan || len(h.Writers) != 2 || hw[b].Relation != docker.BindContainsOurs || hw[e].Relation != docker.BindInsideOurs {
		t.Errorf("WritersOf(%q) via proxy = %s, want B contains, E inside", data, dumpJSON(h))
	}
	if h.Engine == nil || h.Engine.APIVersion != "1.41" {
		t.Errorf("WritersOf via proxy: Engine %+v, want API 1.41", h.Engine)
	}
}

// TestWritersOfHostPath: a read-write bind of the exact path is "same bind
// source"; a read-only one is not a writer.
func TestWritersOfHostPath(t *testing.T) {
	testImage(t)
	dir := t.TempDir()
	rw := runSleeper(t, "-v", dir+":/data")
	runSleeper(t, "-v", dir+":/data:ro")
	r := docker.WritersOf(context.Background(), "", dir, docker.Options{})
	if r.Status != docker.StatusRan || len(r.Writers) != 1 || r.Writers[0].Container.ID != rw || r.Writers[0].Relation != docker.SameBindSource {
		t.Errorf("WritersOf(%q) = %s, want the rw container, same bind source", dir, dumpJSON(r))
	}
	// A file below the bind: the bind contains it.
	f := filepath.Join(dir, "app.db")
	r = docker.WritersOf(context.Background(), "", f, docker.Options{})
	if r.Status != docker.StatusRan || len(r.Writers) != 1 || r.Writers[0].Relation != docker.BindContainsOurs {
		t.Errorf("WritersOf(%q) = %s, want the rw container, bind contains ours", f, dumpJSON(r))
	}
}

// TestInspectContainer returns mounts and engine; a missing name wraps
// ErrNotFound.
func TestInspectContainer(t *testing.T) {
	testImage(t)
	dir := t.TempDir()
	id := runSleeper(t, "--label", "com.docker.compose.oneoff=True", "-v", dir+":/data:ro", "--tmpfs", "/tmp")
	c, e, err := docker.InspectContainer(context.Background(), id[:12], docker.Options{})
	if err != nil {
		t.Fatalf("InspectContainer(%s): %v", id[:12], err)
	}
	if c.ID != id || !c.OneOff || c.State != "running" || e == nil || e.APIVersion != "1.41" {
		t.Errorf("InspectContainer(%s) = %+v, %+v", id[:12], c, e)
	}
	var found bool
	for _, m := range c.Mounts {
		if m.Destination == "/data" && m.Type == "bind" && m.Source == dir && !m.RW {
			found = true
		}
	}
	if !found {
		t.Errorf("InspectContainer(%s).Mounts = %+v, want /data ro bind of %s", id[:12], c.Mounts, dir)
	}
	_, _, err = docker.InspectContainer(context.Background(), runID+"-nonexistent", docker.Options{})
	if !errorsIs(err, docker.ErrNotFound) {
		t.Errorf("InspectContainer(missing) error = %v, want ErrNotFound", err)
	}
}

// TestHostnameFallback: with the docker socket but no container id in
// mountinfo or cgroup... cannot be arranged inside a Docker container on
// this engine, so the hostname path is checked indirectly: a container
// given --hostname that is no container name is not confirmed.
func TestProbeCustomHostname(t *testing.T) {
	testImage(t)
	_, r := probeInside(t, []string{"--hostname", "db-host", "-v", "/var/run/docker.sock:/var/run/docker.sock"}, "/tmp")
	if r.Status != docker.StatusRan || r.SelfHow != "mountinfo" || r.Self == nil {
		t.Errorf("Probe with --hostname: %s, want self from mountinfo", dumpJSON(r))
	}
	// /tmp is on the container's own layer: no writers, sure.
	if len(r.Paths) != 1 || r.Paths[0].Mount != nil || len(r.Writers) != 0 || !r.Sure {
		t.Errorf("Probe(/tmp) = %s, want a private path, no writers, sure", dumpJSON(r))
	}
}

// TestProbeNoSocketInContainer: inside a container without the socket the
// answer is unreachable, not no-daemon.
func TestProbeNoSocketInContainer(t *testing.T) {
	testImage(t)
	_, r := probeInside(t, nil, "/data")
	if r.Status != docker.StatusUnreachable || r.Sure || !r.InContainer {
		t.Errorf("Probe without socket = %s, want unreachable, not sure", dumpJSON(r))
	}
}

// TestConfiguredSocketMissing: a socket that DOCKER_HOST or a context
// names and that does not exist is an engine that is down (its socket
// removed, its containers maybe still running with live-restore):
// unreachable and not sure, never no-daemon.
func TestConfiguredSocketMissing(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "docker.sock")
	meta := docker.ContextMetaPath(dir, "colima")
	if err := os.MkdirAll(filepath.Dir(meta), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(meta, []byte(`{"Name":"colima","Endpoints":{"docker":{"Host":"unix://`+sock+`"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, env := range map[string]map[string]string{
		"DOCKER_HOST":    {"DOCKER_HOST": "unix://" + sock},
		"context colima": {"DOCKER_CONTEXT": "colima", "DOCKER_CONFIG": dir},
	} {
		opts := docker.Options{Env: func(k string) string { return env[k] }}
		r := docker.WritersOf(context.Background(), "v", "", opts)
		if r.Status != docker.StatusUnreachable || r.Sure || r.Endpoint.Source != name {
			t.Errorf("%s: WritersOf(missing socket) = %s, want unreachable, not sure, source %q", name, dumpJSON(r), name)
		}
		if !strings.Contains(r.Err, "no socket at unix://"+sock) {
			t.Errorf("%s: error %q, want it to name the missing socket", name, r.Err)
		}
		r = docker.Probe(context.Background(), []string{dir}, opts)
		if r.Status != docker.StatusUnreachable || r.Sure {
			t.Errorf("%s: Probe(missing socket) = %s, want unreachable, not sure", name, dumpJSON(r))
		}
	}
	_, _, err := docker.InspectContainer(context.Background(), "x", docker.Options{Host: "unix://" + sock})
	if !errorsIs(err, docker.ErrUnreachable) {
		t.Errorf("InspectContainer(missing socket) error = %v, want ErrUnreachable", err)
	}
}

// TestDenied re-executes the test binary as uid 65534 against a socket
// owned by root with mode 0600.
func TestDenied(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: needs root to run a child as uid 65534")
	}
	dir, err := os.MkdirTemp("", "pfdenied")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	sock := filepath.Join(dir, "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Chmod(sock, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "docker.test")
	if err := copyFile(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	r := runAs65534(t, bin, dir, "unix://"+sock)
	if r.Status != docker.StatusDenied || r.Sure {
		t.Errorf("WritersOf as uid 65534 on a 0600 root socket = %s, want denied", dumpJSON(r))
	}
}

// TestHung: a socket that accepts and never answers is unreachable
// within Timeout (+1s).
func TestHung(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "hung.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // hold it open, never read or answer
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	const timeout = 500 * time.Millisecond
	start := time.Now()
	r := docker.Probe(context.Background(), []string{"/data"}, docker.Options{Host: "unix://" + sock, Timeout: timeout})
	elapsed := time.Since(start)
	t.Logf("Probe against a hung socket: %s after %v (%s)", r.Status, elapsed.Round(time.Millisecond), r.Err)
	if r.Status != docker.StatusUnreachable || r.Sure {
		t.Errorf("Probe(hung) = %s, want unreachable", dumpJSON(r))
	}
	if elapsed > timeout+time.Second {
		t.Errorf("Probe(hung) took %v, want at most %v", elapsed, timeout+time.Second)
	}
	start = time.Now()
	_, _, err = docker.InspectContainer(context.Background(), "x", docker.Options{Host: "unix://" + sock, Timeout: timeout})
	if !errorsIs(err, docker.ErrUnreachable) || time.Since(start) > timeout+time.Second {
		t.Errorf("InspectContainer(hung) = %v after %v, want ErrUnreachable within %v", err, time.Since(start), timeout+time.Second)
	}
}

func TestModeOff(t *testing.T) {
	r := docker.Probe(context.Background(), []string{"/data"}, docker.Options{Mode: docker.ModeOff, Host: "unix:///nonexistent"})
	if r.Status != docker.StatusOff || r.Sure || r.Endpoint.Host != "" {
		t.Errorf("Probe(off) = %s, want off and nothing contacted", dumpJSON(r))
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// runAs65534 runs bin (a copy of this test binary) as uid/gid 65534 in
// helper mode and decodes the Result it prints.
func runAs65534(t *testing.T, bin, dir, host string) docker.Result {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Dir = dir
	cmd.Env = []string{"PREFLIGHT_DOCKER_HELPER=1", "PREFLIGHT_DOCKER_HELPER_HOST=" + host, "HOME=" + dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run helper as uid 65534: %v: %s", err, out)
	}
	var r docker.Result
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("decode helper output: %v\n%s", err, out)
	}
	t.Logf("helper as uid 65534: status %s: %s", r.Status, r.Err)
	return r
}

// TestProbeVolumesDenied: a proxy that denies GET /volumes leaves volumes
// compared by name only, so a check of data on a volume is not sure (one
// of them may bind the same host directory as another container's bind).
func TestProbeVolumesDenied(t *testing.T) {
	testImage(t)
	p := startProxy(t)
	p.mu.Lock()
	p.deny = "/volumes"
	p.mu.Unlock()
	vol := "preflight-probe-denied-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	if out, err := exec.Command("docker", "volume", "create", vol).CombinedOutput(); err != nil {
		t.Fatalf("docker volume create: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "volume", "rm", "-f", vol).Run() })
	_, r := probeInside(t, []string{"-v", p.sock + ":/var/run/docker.sock", "-v", vol + ":/data"}, "/data")
	if r.Status != docker.StatusRan || r.Sure || !strings.Contains(r.Err, "list volumes") {
		t.Errorf("Probe with /volumes denied: status %q sure %v err %q; want ran, not sure, naming the volume list", r.Status, r.Sure, r.Err)
	}
}

// TestWritersOfBindAlias: a container binds the data directory by
// another path that is a bind mount of it (mount --bind, as a host's
// /mnt/pool and /srv views of one dataset): the paths differ, the
// directory is one, and the container is a writer, as it is of a file in
// it; a directory beside it is not.
func TestWritersOfBindAlias(t *testing.T) {
	testImage(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to bind-mount a directory")
	}
	dir, alias := t.TempDir(), t.TempDir()
	if err := syscall.Mount(dir, alias, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("bind mount: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(alias, syscall.MNT_DETACH) })
	rw := runSleeper(t, "-v", alias+":/data")
	for _, c := range []struct {
		path, rel string
	}{{dir, docker.SameBindSource}, {filepath.Join(dir, "app.db"), docker.BindContainsOurs}} {
		r := docker.WritersOf(context.Background(), "", c.path, docker.Options{})
		if r.Status != docker.StatusRan || len(r.Writers) != 1 || r.Writers[0].Container.ID != rw || r.Writers[0].Relation != c.rel {
			t.Errorf("WritersOf(%q), a container binding %s = %s, want the container, %s", c.path, alias, dumpJSON(r), c.rel)
		}
	}
	if r := docker.WritersOf(context.Background(), "", t.TempDir(), docker.Options{}); r.Status != docker.StatusRan || len(r.Writers) != 0 {
		t.Errorf("WritersOf(another directory) = %s, want no writer", dumpJSON(r))
	}
}
