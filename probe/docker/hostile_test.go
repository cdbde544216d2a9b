package docker_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/bodylimit"
	"github.com/preflight-sqlite/preflight/internal/fakeengine"
	"github.com/preflight-sqlite/preflight/internal/peak"
	"github.com/preflight-sqlite/preflight/probe/docker"
)

// fakeEngine is a Docker Engine API on a unix socket that answers as a
// 20.10 engine with no containers and no volumes, except that the answer
// to GET endless is a JSON value that never ends. It counts the bytes of
// that answer it managed to write.
type fakeEngine struct {
	sock    string
	written atomic.Int64
}

func startFakeEngine(t *testing.T, endless string) *fakeEngine {
	t.Helper()
	e := &fakeEngine{sock: filepath.Join(t.TempDir(), "docker.sock")}
	answers := map[string]string{
		"/v1.41/version":         `{"Version":"20.10.24","ApiVersion":"1.41","Os":"linux"}`,
		"/v1.41/info":            `{"OSType":"linux","Name":"fake","ServerVersion":"20.10.24"}`,
		"/v1.41/volumes":         `{"Volumes":[],"Warnings":null}`,
		"/v1.41/containers/json": `[]`,
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("API-Version", "1.41")
		if r.URL.Path == "/_ping" {
			io.WriteString(w, "OK")
			return
		}
		if a, ok := answers[r.URL.Path]; ok && r.URL.Path != endless {
			io.WriteString(w, a)
			return
		}
		if r.URL.Path != endless {
			w.WriteHeader(http.StatusNotFound) // no such container (our own, when this test runs in one)
			io.WriteString(w, `{"message":"no such container"}`)
			return
		}
		item := `{"Id":"` + strings.Repeat("ab", 32) + `","Names":["/endless"],"Image":"x","State":"running",` +
			`"Mounts":[{"Type":"bind","Source":"/elsewhere","Destination":"/data","RW":true}]},`
		chunk := []byte(strings.Repeat(item, 1000))
		// An array of objects: valid JSON for as long as it goes.
		if _, err := io.WriteString(w, `[`); err != nil {
			return
		}
		for r.Context().Err() == nil {
			n, err := w.Write(chunk)
			e.written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	l, err := net.Listen("unix", e.sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return e
}

// bounded reports whether err names the byte bound or the entry bound.
func bounded(err string) bool {
	return strings.Contains(err, docker.ErrBodyTooLarge.Error()) || strings.Contains(err, bodylimit.ErrTooManyValues.Error())
}

// TestEndlessAnswers: an engine whose answer never ends costs at most
// MaxBody of it (an endless list stops sooner, at its 10,000th entry); the call fails naming the bound and is not sure, or (the
// volume list, which only refines the answer) says so in Err.
func TestEndlessAnswers(t *testing.T) {
	for _, tc := range []struct {
		path, call string
		fatal      bool
	}{
		{"/v1.41/version", "get docker version", true},
		{"/v1.41/info", "get docker info", true},
		{"/v1.41/containers/json", "list containers", true},
		{"/v1.41/volumes", "list volumes", false},
	} {
		e := startFakeEngine(t, tc.path)
		r := docker.Probe(context.Background(), []string{t.TempDir()}, docker.Options{Host: "unix://" + e.sock, Timeout: 20 * time.Second})
		t.Logf("%s endless: status %s, sure %v, %d MiB sent: %s", tc.path, r.Status, r.Sure, e.written.Load()>>20, r.Err)
		if tc.fatal && (r.Status == docker.StatusRan || r.Sure) {
			t.Errorf("Probe(%s endless) = status %q sure %v, want not ran, not sure", tc.path, r.Status, r.Sure)
		}
		if !strings.Contains(r.Err, tc.call) || !bounded(r.Err) {
			t.Errorf("Probe(%s endless) error %q, want it to name %q and the byte or entry bound", tc.path, r.Err, tc.call)
		}
		// Allow for what the socket and the HTTP client buffer beyond the bound.
		if got, limit := e.written.Load(), int64(docker.MaxBody+4<<20); got > limit {
			t.Errorf("Probe(%s endless): the engine wrote %d bytes before the probe stopped reading, want at most %d", tc.path, got, limit)
		}
	}
}

// TestEmptiesLists: an answer of 16 MiB of [{},{},...] (5.6 million empty
// entries, within the byte bound) to any list the probe reads is refused
// before it is decoded: the probe answers within a second and a few MiB
// of heap, and the answer is not sure (the container list), or the
// refinement it would have given says why it is missing (the volume list,
// the Swarm lists).
func TestEmptiesLists(t *testing.T) {
	for _, path := range []string{"/v1.41/containers/json", "/v1.41/volumes", "/v1.41/services", "/v1.41/tasks", "/v1.41/nodes"} {
		t.Run(strings.TrimPrefix(path, "/v1.41/"), func(t *testing.T) {
			mp := filepath.Join(t.TempDir(), "volumes", "swarm-capture-vol", "_data")
			if err := os.MkdirAll(mp, 0o755); err != nil {
				t.Fatal(err)
			}
			answers := fakeengine.SwarmAnswers(t, filepath.Join("testdata", "swarm"), mp,
				fakeengine.SwarmCase{Info: "info-manager.json", Services: "services.json", Tasks: two, Nodes: nodes})
			answers[path] = fakeengine.EmptiesList
			e := fakeengine.Start(t, answers)
			var r docker.Result
			took, heap := peak.Measure(func() {
				r = docker.Probe(context.Background(), []string{mp}, docker.Options{Host: e.Host, HostPaths: true, Timeout: 10 * time.Second})
			})
			t.Logf("%s: %s, heap growth %d MiB: status %s, sure %v, err %q, swarm %s", path, took, heap>>20, r.Status, r.Sure, r.Err, dumpJSON(r.Swarm))
			if took > 2*time.Second {
				t.Errorf("Probe(%s empties) took %s, want at most 2s", path, took)
			}
			if heap > 32<<20 {
				t.Errorf("Probe(%s empties) heap growth %d MiB, want at most 32 MiB", path, heap>>20)
			}
			const bound = "an array of more than 10000 entries"
			switch path {
			case "/v1.41/containers/json":
				if r.Status == docker.StatusRan || r.Sure || !strings.Contains(r.Err, bound) {
					t.Errorf("Probe(%s empties) = status %s sure %v err %q, want not ran, not sure, naming %q", path, r.Status, r.Sure, r.Err, bound)
				}
			case "/v1.41/volumes":
				if !strings.Contains(r.Err, "list volumes") || !strings.Contains(r.Err, bound) {
					t.Errorf("Probe(%s empties) err %q, want it to name list volumes and %q", path, r.Err, bound)
				}
			case "/v1.41/services", "/v1.41/tasks":
				if r.Sure || r.Swarm == nil || r.Swarm.ServicesVisible || !strings.Contains(r.Swarm.Err, bound) {
					t.Errorf("Probe(%s empties) = sure %v, swarm %s, want not sure, services not visible, naming %q", path, r.Sure, dumpJSON(r.Swarm), bound)
				}
			}
		})
	}
}

// BenchmarkEmptiesList is the worst answer under the byte bound: GET
// /containers/json of 16 MiB of [{},{},...] from a fake engine on a unix
// socket, one whole Probe per op. heap-MB is the most the heap grew while it
// ran (peak.Measure: the fake engine's 16 MiB answer, made once, is not
// counted).
func BenchmarkEmptiesList(b *testing.B) {
	answers := map[string]string{
		"/v1.41/version":         `{"Version":"20.10.24","ApiVersion":"1.41","Os":"linux"}`,
		"/v1.41/info":            `{"OSType":"linux","Name":"fake","ServerVersion":"20.10.24"}`,
		"/v1.41/containers/json": fakeengine.EmptiesList,
	}
	e := fakeengine.Start(b, answers)
	dir := b.TempDir()
	b.ReportAllocs()
	var most uint64
	for b.Loop() {
		_, heap := peak.Measure(func() {
			r := docker.Probe(context.Background(), []string{dir}, docker.Options{Host: e.Host, HostPaths: true, Timeout: 2 * time.Second})
			if r.Sure || !strings.Contains(r.Err, "an array of more than 10000 entries") {
				b.Fatalf("Probe(empties) = sure %v err %q, want not sure, the entry bound named", r.Sure, r.Err)
			}
		})
		most = max(most, heap)
	}
	b.ReportMetric(float64(most)/(1<<20), "heap-MB")
}

// TestLargeListAccepted: the bounds on what is decoded leave room for a
// big host: 3,000 compose containers as a 20.10 engine lists them (12
// labels, three mounts, a port, a network each; 5.6 MiB) are read and
// compared, and the answer is sure.
func TestLargeListAccepted(t *testing.T) {
	dir := t.TempDir()
	var list strings.Builder
	list.WriteString("[")
	for i := range 3000 {
		if i > 0 {
			list.WriteString(",")
		}
		fmt.Fprintf(&list, `{"Id":"%064x","Names":["/proj-web-%d"],"Image":"ghcr.io/example/web:1.2.3","ImageID":"sha256:%064x","Command":"/entrypoint.sh serve","Created":1700000000,`+
			`"Ports":[{"IP":"0.0.0.0","PrivatePort":8080,"PublicPort":%d,"Type":"tcp"}],`+
			`"Labels":{"com.docker.compose.config-hash":"%064x","com.docker.compose.container-number":"%d","com.docker.compose.depends_on":"","com.docker.compose.image":"sha256:%064x","com.docker.compose.oneoff":"False","com.docker.compose.project":"proj","com.docker.compose.project.config_files":"/srv/proj/compose.yaml","com.docker.compose.project.working_dir":"/srv/proj","com.docker.compose.service":"web","com.docker.compose.version":"2.29.7","org.opencontainers.image.source":"https://github.com/example/web","org.opencontainers.image.version":"1.2.3"},`+
			`"State":"running","Status":"Up 3 days","HostConfig":{"NetworkMode":"proj_default"},`+
			`"NetworkSettings":{"Networks":{"proj_default":{"IPAMConfig":null,"Links":null,"Aliases":null,"NetworkID":"%064x","EndpointID":"%064x","Gateway":"172.18.0.1","IPAddress":"172.18.0.2","IPPrefixLen":16,"IPv6Gateway":"","GlobalIPv6Address":"","GlobalIPv6PrefixLen":0,"MacAddress":"02:42:ac:12:00:02","DriverOpts":null}}},`+
			`"Mounts":[{"Type":"volume","Name":"proj_data%d","Source":"/var/lib/docker/volumes/proj_data%d/_data","Destination":"/data","Driver":"local","Mode":"z","RW":true,"Propagation":""},`+
			`{"Type":"bind","Source":"/srv/proj/config","Destination":"/config","Mode":"ro","RW":false,"Propagation":"rprivate"},`+
			`{"Type":"bind","Source":"/etc/localtime","Destination":"/etc/localtime","Mode":"ro","RW":false,"Propagation":"rprivate"}]}`,
			i, i, i, 10000+i, i, i, i, i, i, i, i)
	}
	list.WriteString("]")
	t.Logf("container list: %d bytes", list.Len())
	e := fakeengine.Start(t, map[string]string{
		"/v1.41/version":         `{"Version":"20.10.24","ApiVersion":"1.41","Os":"linux"}`,
		"/v1.41/info":            `{"OSType":"linux","Name":"fake","ServerVersion":"20.10.24"}`,
		"/v1.41/volumes":         `{"Volumes":[],"Warnings":null}`,
		"/v1.41/containers/json": list.String(),
	})
	r := docker.Probe(context.Background(), []string{dir}, docker.Options{Host: e.Host, HostPaths: true, Timeout: 20 * time.Second})
	if r.Status != docker.StatusRan || !r.Sure {
		t.Errorf("Probe(3,000 containers) = status %s sure %v err %q, want ran, sure", r.Status, r.Sure, r.Err)
	}
}

// TestManyBindSourcesWithinTimeout: an answer under every bound, 9,999
// running containers each binding its own deep directory that does not
// exist, costs a resolution (and a stat) per source on the engine's host.
// Past the deadline the rest are compared as written, at once: the probe
// ends within its timeout and a small constant, not sure, and its notes
// do not list thousands of paths.
func TestManyBindSourcesWithinTimeout(t *testing.T) {
	data := t.TempDir()
	deep := make([]string, 40)
	for i := range deep {
		deep[i] = fmt.Sprintf("d%d", i)
	}
	var list strings.Builder
	list.WriteString("[")
	for i := range 9999 {
		if i > 0 {
			list.WriteString(",")
		}
		fmt.Fprintf(&list, `{"Id":"%064d","State":"running","Mounts":[{"Type":"bind","Source":"%s/x%d/%s","Destination":"/data","RW":true}]}`, i, filepath.Dir(data), i, strings.Join(deep, "/"))
	}
	list.WriteString("]")
	e := fakeengine.Start(t, map[string]string{
		"/v1.41/version":         `{"Version":"20.10.24","ApiVersion":"1.41","Os":"linux"}`,
		"/v1.41/info":            `{"OSType":"linux","Name":"fake","ServerVersion":"20.10.24"}`,
		"/v1.41/volumes":         `{"Volumes":[],"Warnings":null}`,
		"/v1.41/containers/json": list.String(),
	})
	const timeout = time.Second
	start := time.Now()
	r := docker.Probe(context.Background(), []string{data}, docker.Options{Host: e.Host, HostPaths: true, Timeout: timeout})
	took := time.Since(start)
	t.Logf("9,999 bind sources: %s: status %s, sure %v, %d bytes of notes", took, r.Status, r.Sure, len(dumpJSON(r)))
	if took > timeout+time.Second {
		t.Errorf("Probe(9,999 bind sources, timeout %s) took %s, want at most %s", timeout, took, timeout+time.Second)
	}
	if r.Sure && took > timeout {
		t.Errorf("Probe(9,999 bind sources) past its deadline is sure, want not sure")
	}
	if n := len(dumpJSON(r)); n > 64<<10 {
		t.Errorf("Probe(9,999 bind sources) result is %d bytes, want at most 64 KiB", n)
	}
}
