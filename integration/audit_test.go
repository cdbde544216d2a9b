package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/fuseloop"
	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// auditReport is the part of `preflight audit --format json` (schema
// preflight-audit/v1) these tests assert on.
type auditReport struct {
	Schema       string `json:"schema"`
	Docker       string `json:"docker"`
	HostPID      bool   `json:"host_pid"`
	OnEngineHost bool   `json:"on_engine_host"`
	Verdict      string `json:"verdict"`
	Containers   []struct {
		Container struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"container"`
		Mounts []struct {
			Destination  string `json:"destination"`
			Class        string `json:"class"`
			ReadVia      string `json:"read_via"`
			NotInspected string `json:"not_inspected"`
		} `json:"mounts"`
		Report  report `json:"report"`
		Verdict string `json:"verdict"`
	} `json:"containers"`
}

// exitOf is the exit code audit gives verdict v with --fail-on warn.
func exitOf(v string) int {
	switch v {
	case "unsafe":
		return 3
	case "warn":
		return 4
	}
	return 0
}

func decodeAudit(t *testing.T, r result) auditReport {
	t.Helper()
	var ar auditReport
	if err := json.Unmarshal([]byte(r.stdout), &ar); err != nil {
		t.Fatalf("decode audit: %v\n%s", err, r)
	}
	if ar.Schema != "preflight-audit/v1" || ar.Docker != "ran" {
		t.Fatalf("audit: schema %q docker %q, want preflight-audit/v1, ran\n%s", ar.Schema, ar.Docker, r)
	}
	// The engine is shared with other tests: whatever else it runs, the
	// exit code is the worst verdict's.
	wantCode(t, r, exitOf(ar.Verdict))
	return ar
}

// auditOf is the audit entry of container id; the test fails without one.
func (ar auditReport) of(t *testing.T, id string) (class, readVia, dbMode, verdict string, findings map[string]string) {
	t.Helper()
	for _, c := range ar.Containers {
		if c.Container.ID != id {
			continue
		}
		if len(c.Mounts) == 0 || len(c.Report.DataDirs) == 0 {
			t.Fatalf("audit of %s: no mounts", id)
		}
		if dbs := c.Report.DataDirs[0].Databases; len(dbs) > 0 {
			dbMode = dbs[0].JournalMode
		}
		return c.Mounts[0].Class, c.Mounts[0].ReadVia, dbMode, c.Verdict, c.Report.findings()
	}
	t.Fatalf("audit: container %s not listed", short(id))
	return
}

func short(id string) string { return id[:12] }

// auditContainers starts the containers every audit test looks at: the
// demo app on a bind of a host directory (WAL, ok), and two on one named
// volume (multiple writers). It returns their IDs.
func auditContainers(t *testing.T) (bind, vol1, vol2 string) {
	dir := hostDir(t)
	bind = startApp(t, "-v", dir+":/data", "-e", "DEMO_INTERVAL=1h", "--entrypoint", "/demoapp", image)
	v := volume(t)
	vol1 = startApp(t, "-v", v+":/data", "-e", "DEMO_INTERVAL=1h", "--entrypoint", "/demoapp", image)
	for _, id := range []string{bind, vol1} {
		waitLog(t, id, "demoapp: pid=")
	}
	vol2 = startApp(t, "-v", v+":/data", "-e", "DEMO_INTERVAL=1h", "--entrypoint", "/demoapp", image)
	waitLog(t, vol2, "demoapp: pid=")
	return bind, vol1, vol2
}

// TestAuditHost: preflight audit as root on the Linux engine host reads
// each mount through its host path: the bind's WAL database is ok, the
// shared volume's is a multiple-writers warning naming the other
// container; with --all a created container whose volume has nfs
// driver_opts is listed as network, not inspected (its share is mounted
// only while a container runs); the text table names them all.
func TestAuditHost(t *testing.T) {
	requireDocker(t)
	bind, vol1, vol2 := auditContainers(t)
	nfs := "preflight-it-" + runID + "-nfs"
	wantCode(t, docker(t, "volume", "create", "--label", label, "--driver", "local", "--opt", "type=nfs", "--opt", "o=addr=127.0.0.1,ro", "--opt", "device=:/export", nfs), 0)
	t.Cleanup(func() { docker(t, "volume", "rm", "-f", nfs) })
	r := docker(t, "create", "--label", label, "-v", nfs+":/data/db.sqlite3", "--entrypoint", "/demoapp", image)
	wantCode(t, r, 0)
	created := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { docker(t, "rm", "-f", created) })

	pf := filepath.Join(binDir, "preflight")
	ar := decodeAudit(t, run(t, dockerTimeout, nil, pf, "audit", "--format", "json"))
	if !ar.OnEngineHost {
		t.Errorf("audit on the host: on_engine_host false")
	}
	if class, via, mode, v, _ := ar.of(t, bind); class != "local" || via != "host-path" || mode != "wal" || v != "ok" {
		t.Errorf("audit of the bind container: class %s via %s mode %s verdict %s; want local, host-path, wal, ok", class, via, mode, v)
	}
	_, _, _, v, fs := ar.of(t, vol1)
	if v != "warn" || fs["multiple-writers"] != "warn" {
		t.Errorf("audit of a container sharing its volume: verdict %s findings %v, want warn with multiple-writers", v, fs)
	}
	for _, c := range ar.Containers {
		if c.Container.ID == created {
			t.Errorf("audit without --all lists the created container %s", short(created))
		}
	}

	r = run(t, dockerTimeout, nil, pf, "audit", "--all", "--format", "json")
	ar = decodeAudit(t, r)
	if class, _, _, _, fs := ar.of(t, created); class != "network" || fs["unsafe-fs-not-inspected"] != "warn" {
		t.Errorf("audit --all of a created container on an nfs volume: class %s findings %v, want network, unsafe-fs-not-inspected", class, fs)
	}

	r = run(t, dockerTimeout, nil, pf, "audit")
	wantCode(t, r, exitOf(ar.Verdict))
	for _, id := range []string{bind, vol1, vol2} {
		name := strings.TrimSpace(docker(t, "inspect", "--format", "{{.Name}}", id).stdout)
		wantContains(t, "audit text", r.stdout, strings.TrimPrefix(name, "/"))
	}
	wantContains(t, "audit text", r.stdout, "CONTAINER")
	wantContains(t, "audit text", r.stdout, "multiple-writers")
	wantContains(t, "audit text", r.stdout, "app.db wal")
}

// TestAuditUnraidShare: a bind of an Unraid user share (a FUSE mount
// named shfs on the host) with a WAL database is an error on the host.
func TestAuditUnraidShare(t *testing.T) {
	requireDocker(t)
	testdb.NeedFUSE(t)
	backing, mnt := hostDir(t), hostDir(t)
	unmount, err := fuseloop.Mount(backing, mnt, "shfs")
	if err != nil {
		t.Fatalf("fuseloop.Mount: %v", err)
	}
	t.Cleanup(func() { unmount() })
	testdb.Make(t, filepath.Join(backing, "app.db"), "wal", 2)
	id := startApp(t, "-v", mnt+":/config", "-e", "DEMO_INTERVAL=1h", "-e", "DATA_DIR=/config", "--entrypoint", "/demoapp", image)
	waitLog(t, id, "demoapp: pid=")
	ar := decodeAudit(t, run(t, dockerTimeout, nil, filepath.Join(binDir, "preflight"), "audit", "--format", "json"))
	class, _, mode, v, fs := ar.of(t, id)
	if class != "fuse" || mode != "wal" || v != "unsafe" || fs["wal-on-fuse"] != "error" {
		t.Errorf("audit of a container on a user share: class %s mode %s verdict %s findings %v; want fuse, wal, unsafe, wal-on-fuse", class, mode, v, fs)
	}
}

// TestAuditInContainer: the documented container run (the socket, the
// host's PID namespace, root) reads each container's files through
// /proc/PID/root: the same answers as on the host.
func TestAuditInContainer(t *testing.T) {
	requireDocker(t)
	bind, vol1, _ := auditContainers(t)
	tag := toolImage(t, "preflight-it-audit")
	r := dockerRun(t, "--pid", "host", "--user", "0", "--cap-add", "SYS_PTRACE", "-v", "/var/run/docker.sock:/var/run/docker.sock:ro", tag, "audit", "--format", "json")
	ar := decodeAudit(t, r)
	if !ar.HostPID || ar.OnEngineHost {
		t.Errorf("audit in a container with --pid host: host_pid %v on_engine_host %v, want true, false", ar.HostPID, ar.OnEngineHost)
	}
	if class, via, mode, v, _ := ar.of(t, bind); class != "local" || via != "container-root" || mode != "wal" || v != "ok" {
		t.Errorf("audit of the bind container: class %s via %s mode %s verdict %s; want local, container-root, wal, ok", class, via, mode, v)
	}
	if _, via, _, v, fs := ar.of(t, vol1); via != "container-root" || v != "warn" || fs["multiple-writers"] != "warn" {
		t.Errorf("audit of a container sharing its volume: via %s verdict %s findings %v, want container-root, warn, multiple-writers", via, v, fs)
	}

	// Without the host's PID namespace nothing is read: each mount is
	// said not inspected, never ok.
	r = dockerRun(t, "--user", "0", "-v", "/var/run/docker.sock:/var/run/docker.sock:ro", tag, "audit", "--format", "json")
	var blind auditReport
	if err := json.Unmarshal([]byte(r.stdout), &blind); err != nil {
		t.Fatalf("decode audit: %v\n%s", err, r)
	}
	seen := false
	for _, c := range blind.Containers {
		for _, m := range c.Mounts {
			if m.NotInspected == "" {
				t.Errorf("audit without --pid host: %s %s read via %q, want not inspected", c.Container.Name, m.Destination, m.ReadVia)
			}
			if c.Container.ID == bind && m.Destination == "/data" {
				seen = true
				wantContains(t, "not_inspected", m.NotInspected, "--pid host")
			}
		}
	}
	if !seen {
		t.Errorf("audit without --pid host does not list the bind container's /data as not inspected\n%s", r)
	}
}

// allowed are the Engine API paths audit needs, GET only (the version
// prefix is optional, as the engine takes both).
var allowed = regexp.MustCompile(`^(/v[0-9.]+)?/(_ping|version|info|volumes|containers/json|containers/[0-9a-f]{64}/json|services|tasks|nodes)$`)

// TestAuditSocketProxy: through a socket proxy that allows GET of only
// the endpoints audit needs (and 403s everything else), audit gives the
// same answers, and sends nothing else.
func TestAuditSocketProxy(t *testing.T) {
	requireDocker(t)
	bind, vol1, _ := auditContainers(t)
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var refused, passed []string
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(&url.URL{Scheme: "http", Host: "docker"}) },
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", "/var/run/docker.sock")
		}},
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := r.Method + " " + r.URL.Path
		mu.Lock()
		defer mu.Unlock()
		if r.Method != http.MethodGet || !allowed.MatchString(r.URL.Path) {
			refused = append(refused, req)
			http.Error(w, `{"message":"forbidden by the proxy"}`, http.StatusForbidden)
			return
		}
		passed = append(passed, req)
		mu.Unlock()
		rp.ServeHTTP(w, r)
		mu.Lock()
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })

	ar := decodeAudit(t, run(t, dockerTimeout, []string{"DOCKER_HOST=unix://" + sock}, filepath.Join(binDir, "preflight"), "audit", "--format", "json"))
	if class, via, mode, v, _ := ar.of(t, bind); class != "local" || via != "host-path" || mode != "wal" || v != "ok" {
		t.Errorf("audit through the proxy, bind container: class %s via %s mode %s verdict %s; want local, host-path, wal, ok", class, via, mode, v)
	}
	if _, _, _, _, fs := ar.of(t, vol1); fs["multiple-writers"] != "warn" {
		t.Errorf("audit through the proxy, shared volume: findings %v, want multiple-writers", fs)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(refused) > 0 {
		t.Errorf("audit asked the proxy for %v, beyond GET of what it needs", refused)
	}
	if len(passed) == 0 {
		t.Errorf("audit sent nothing through the proxy")
	}
}

// TestAuditTmpfs: a container with a database on a --tmpfs mount (which
// the engine lists under HostConfig.Tmpfs, not Mounts) is listed, its
// /cache a tmpfs that loses the data at every restart, never left out.
func TestAuditTmpfs(t *testing.T) {
	requireDocker(t)
	id := startApp(t, "--tmpfs", "/cache:mode=1777", "-v", hostDir(t)+":/data", "-e", "DEMO_INTERVAL=1h", "--entrypoint", "/demoapp", image)
	waitLog(t, id, "demoapp: pid=")
	pid := strings.TrimSpace(docker(t, "inspect", "--format", "{{.State.Pid}}", id).stdout)
	// Written here and copied in: the container's tmpfs is reached only
	// through /proc/PID/root, which SQLite's own path resolution leaves.
	src := filepath.Join(t.TempDir(), "app.db")
	testdb.Make(t, src, "wal", 1)
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("/proc", pid, "root", "cache", "app.db"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	ar := decodeAudit(t, run(t, dockerTimeout, nil, filepath.Join(binDir, "preflight"), "audit", "--format", "json"))
	for _, c := range ar.Containers {
		if c.Container.ID != id {
			continue
		}
		for i, m := range c.Mounts {
			if m.Destination == "/cache" {
				fs := c.Report.findings()
				if m.Class != "ephemeral" || fs["ephemeral-data-dir"] == "" {
					t.Errorf("audit of --tmpfs /cache: class %s findings %v; want ephemeral, ephemeral-data-dir", m.Class, fs)
				}
				if dbs := c.Report.DataDirs[i].Databases; len(dbs) != 1 {
					t.Errorf("audit of --tmpfs /cache: databases %+v, want app.db", dbs)
				}
				return
			}
		}
	}
	t.Errorf("audit: no /cache mount listed for the container on --tmpfs /cache")
}

// TestAuditWritableLayer: a container of an image the catalogue does not
// know, with no mount, keeps its database in its writable layer: audit on
// the engine host reads its root (/proc/PID/root) and lists the directory
// holding it on no mount, ephemeral-data-dir; a created container with no
// mount (--all) cannot be read and is listed as "/", not inspected.
func TestAuditWritableLayer(t *testing.T) {
	requireDocker(t)
	id := startApp(t, "-e", "DEMO_INTERVAL=1h", "--entrypoint", "/demoapp", image)
	waitLog(t, id, "demoapp: pid=")
	// Its database four levels down (--workdir makes the directory), past
	// --max-depth (2): the root is
	// listed with the directories left unsearched, not left out.
	deep := startApp(t, "--user", "0", "--workdir", "/var/lib/app/data", "-e", "DEMO_INTERVAL=1h", "-e", "DATA_DIR=/var/lib/app/data", "--entrypoint", "/demoapp", image)
	waitLog(t, deep, "demoapp: pid=")
	r := docker(t, "create", "--label", label, "--entrypoint", "/demoapp", image)
	wantCode(t, r, 0)
	created := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { docker(t, "rm", "-f", created) })

	pf := filepath.Join(binDir, "preflight")
	ar := decodeAudit(t, run(t, dockerTimeout, nil, pf, "audit", "--all", "--format", "json"))
	var got []string
	for _, c := range ar.Containers {
		if c.Container.ID != id && c.Container.ID != created && c.Container.ID != deep {
			continue
		}
		fs := c.Report.findings()
		for i, m := range c.Mounts {
			line := fmt.Sprintf("%s %s %s via=%q not-inspected=%v", short(c.Container.ID), m.Destination, m.Class, m.ReadVia, m.NotInspected != "")
			switch {
			case c.Container.ID == id:
				line += fmt.Sprintf(" ephemeral-data-dir=%s dbs=%d", fs["ephemeral-data-dir"], len(c.Report.DataDirs[i].Databases))
			case c.Container.ID == deep:
				line += fmt.Sprintf(" scan-depth-limit=%s dbs=%d", fs["scan-depth-limit"], len(c.Report.DataDirs[i].Databases))
			default:
				line += fmt.Sprintf(" mount-not-inspected=%s ephemeral-data-dir=%q", fs["mount-not-inspected"], fs["ephemeral-data-dir"])
			}
			got = append(got, line)
		}
	}
	want := []string{
		short(id) + ` /data ephemeral via="container-root" not-inspected=false ephemeral-data-dir=warn dbs=1`,
		short(created) + ` / ephemeral via="" not-inspected=true mount-not-inspected=warn ephemeral-data-dir=""`,
		short(deep) + ` / ephemeral via="container-root" not-inspected=false scan-depth-limit=info dbs=0`,
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("audit --all of containers with no mount:\n got %q\nwant %q", got, want)
	}

	r = run(t, dockerTimeout, nil, pf, "audit", "--all")
	wantCode(t, r, exitOf(ar.Verdict))
	wantContains(t, "audit text", r.stdout, "/data (no mount)")
	wantContains(t, "audit text", r.stdout, "/: not inspected: the container is not running")
}
