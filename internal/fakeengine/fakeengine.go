// Package fakeengine serves a Docker Engine API on a unix socket for tests
// that need an engine this machine cannot be (a Swarm manager whose tasks
// run on other nodes, a worker, a socket proxy that denies an endpoint):
// fixed answers, normally captured from a real engine, per request path.
package fakeengine

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Engine is a running fake engine.
type Engine struct {
	// Host is its address for DOCKER_HOST or docker.Options.Host.
	Host string

	mu   sync.Mutex
	seen []string
}

// Endless as an answer makes that path's body a JSON array that never
// ends (copies of one Swarm service), until the client stops reading.
const Endless = "\x00endless"

// Start serves answers (request path, such as /v1.41/info, to JSON body)
// on a unix socket in a temporary directory until the test ends. GET
// /_ping answers OK with API version 1.41; a path in denied answers 403
// (as a socket proxy does); any other path 404.
func Start(t testing.TB, answers map[string]string, denied ...string) *Engine {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "docker.sock")
	e := &Engine{Host: "unix://" + sock}
	for _, a := range answers {
		if a == EmptiesList {
			emptiesList() // made before any request, not while a client waits
		}
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.seen = append(e.seen, r.Method+" "+r.URL.Path)
		e.mu.Unlock()
		w.Header().Set("API-Version", "1.41")
		a, ok := answers[r.URL.Path]
		switch {
		case r.URL.Path == "/_ping":
			io.WriteString(w, "OK")
		case slices.Contains(denied, r.URL.Path):
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"message":"forbidden by the proxy"}`)
		case ok && a == Endless:
			endless(w, r)
		case ok && a == EmptiesList:
			w.Write(emptiesList())
		case ok:
			io.WriteString(w, a)
		default:
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"message":"not found"}`)
		}
	})
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return e
}

func endless(w http.ResponseWriter, r *http.Request) {
	item := `{"ID":"endless","Spec":{"Name":"endless","TaskTemplate":{"ContainerSpec":{"Image":"x","Mounts":[{"Type":"volume","Source":"elsewhere","Target":"/data"}]}},"Mode":{"Replicated":{"Replicas":2}}}},`
	chunk := []byte(strings.Repeat(item, 1000))
	if _, err := io.WriteString(w, "["); err != nil {
		return
	}
	for r.Context().Err() == nil {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// EmptiesList as an answer makes that path's body a JSON array of empty
// objects exactly 16 MiB long (the probe's body bound): 5.6 million
// entries a decoder would make 5.6 million structs of.
const EmptiesList = "\x00empties"

var emptiesList = sync.OnceValue(func() []byte { return Empties("", "", 16<<20) })

// Empties is a JSON body exactly n bytes long: head, then an array of empty
// objects ([{},{},...], padded with spaces), then tail. With head
// `{"items":` and tail `}` it is a Kubernetes list page.
func Empties(head, tail string, n int) []byte {
	k := (n - len(head) - len(tail) - 4) / 3
	b := make([]byte, 0, n)
	b = append(b, head...)
	b = append(b, "[{}"...)
	b = append(b, bytes.Repeat([]byte(",{}"), k)...)
	b = append(b, bytes.Repeat([]byte(" "), n-len(b)-len(tail)-1)...)
	b = append(b, ']')
	return append(b, tail...)
}

// Asked reports whether a request with method and path was made.
func (e *Engine) Asked(method, path string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Contains(e.seen, method+" "+path)
}

// Seen lists the requests made, as "METHOD PATH".
func (e *Engine) Seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.seen)
}

// Swarm task containers of the captured service swarm-capture (see
// probe/docker/testdata/swarm/README.md).
const (
	Task1Container = "93691b75a4a246b90caa3cbabcb536c59a1655572f85aea78b996b82e6eff85c"
	Task2Container = "2991ea129ca446974907e3a70ceba58517d265ca49dd327e0823da27ad5e65db"
)

// SwarmCase picks the captured Swarm answers: file names in the fixture
// directory for /info, /services, /tasks and /nodes.
type SwarmCase struct {
	Info, Services, Tasks, Nodes string
	// BothLocal lists the containers of both tasks (both on this node);
	// otherwise only task 1's.
	BothLocal bool
	// ExitedTask adds the exited container of an earlier task of slot 1
	// (what Swarm keeps of a task an update replaced).
	ExitedTask bool
}

// SwarmAnswers builds the answers of a 20.10 engine that is the Swarm
// node of c, from the captured files in dir (probe/docker/testdata/swarm):
// one local volume swarm-capture-vol whose mountpoint is mountpoint (a
// real directory), and the running container of task swarm-capture.1
// (and .2 with c.BothLocal) mounting it at /data.
func SwarmAnswers(t testing.TB, dir, mountpoint string, c SwarmCase) map[string]string {
	t.Helper()
	file := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ctrState := func(id, task, state string) string {
		return `{"Id":"` + id + `","Names":["/swarm-capture.` + task + `"],"Image":"swarm-capture:swarm","State":"` + state + `",` +
			`"Labels":{"com.docker.swarm.service.name":"swarm-capture","com.docker.swarm.task.name":"swarm-capture.` + task + `"},` +
			`"Mounts":[{"Type":"volume","Name":"swarm-capture-vol","Source":"` + mountpoint + `","Destination":"/data","Driver":"local","RW":true}]}`
	}
	ctr := func(id, task string) string { return ctrState(id, task, "running") }
	list := ctr(Task1Container, "1.qkzyfu9cwomdgterqyoezvhhk")
	if c.BothLocal {
		list += "," + ctr(Task2Container, "2.k5qrqcvz1ygoeswclgth8t2lc")
	}
	if c.ExitedTask {
		list += "," + ctrState(strings.Repeat("5e", 32), "1.oldtask0000000000000000", "exited")
	}
	return map[string]string{
		"/v1.41/version":         `{"Version":"20.10.24+dfsg1","ApiVersion":"1.41","Os":"linux"}`,
		"/v1.41/info":            file(c.Info),
		"/v1.41/volumes":         `{"Volumes":[{"Name":"swarm-capture-vol","Driver":"local","Mountpoint":"` + mountpoint + `","Scope":"local"}],"Warnings":null}`,
		"/v1.41/containers/json": "[" + list + "]",
		"/v1.41/services":        file(c.Services),
		"/v1.41/tasks":           file(c.Tasks),
		"/v1.41/nodes":           file(c.Nodes),
	}
}
