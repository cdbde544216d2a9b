package docker_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// TestEndlessAnswers: an engine whose answer never ends costs at most
// MaxBody of it; the call fails naming the bound and is not sure, or (the
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
		if !strings.Contains(r.Err, tc.call) || !strings.Contains(r.Err, docker.ErrBodyTooLarge.Error()) {
			t.Errorf("Probe(%s endless) error %q, want it to name %q and %q", tc.path, r.Err, tc.call, docker.ErrBodyTooLarge)
		}
		// Allow for what the socket and the HTTP client buffer beyond the bound.
		if got, limit := e.written.Load(), int64(docker.MaxBody+4<<20); got > limit {
			t.Errorf("Probe(%s endless): the engine wrote %d bytes before the probe stopped reading, want at most %d", tc.path, got, limit)
		}
	}
}
