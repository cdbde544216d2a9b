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

// fakeEngine is a Docker Engine API on a unix socket that answers /_ping,
// /version, /info and /volumes as a 20.10 engine does and sends, for
// GET /containers/json, a JSON array that never ends. It counts the bytes
// of that body it managed to write.
type fakeEngine struct {
	sock    string
	written atomic.Int64
}

func startFakeEngine(t *testing.T) *fakeEngine {
	t.Helper()
	e := &fakeEngine{sock: filepath.Join(t.TempDir(), "docker.sock")}
	mux := http.NewServeMux()
	mux.HandleFunc("/_ping", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("API-Version", "1.41")
		io.WriteString(w, "OK")
	})
	mux.HandleFunc("/v1.41/version", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"Version":"20.10.24","ApiVersion":"1.41","Os":"linux"}`)
	})
	mux.HandleFunc("/v1.41/info", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"OSType":"linux","Name":"fake","ServerVersion":"20.10.24"}`)
	})
	mux.HandleFunc("/v1.41/volumes", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"Volumes":[],"Warnings":null}`)
	})
	mux.HandleFunc("/v1.41/containers/json", func(w http.ResponseWriter, r *http.Request) {
		item := `{"Id":"` + strings.Repeat("ab", 32) + `","Names":["/endless"],"Image":"x","State":"running",` +
			`"Mounts":[{"Type":"bind","Source":"/elsewhere","Destination":"/data","RW":true}]},`
		chunk := []byte("[" + strings.Repeat(item, 1000))
		for r.Context().Err() == nil {
			n, err := w.Write(chunk)
			e.written.Add(int64(n))
			if err != nil {
				return
			}
			chunk = chunk[1:] // the "[" once
			chunk = []byte(strings.Repeat(item, 1000))
		}
	})
	l, err := net.Listen("unix", e.sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return e
}

// TestEndlessContainerList: an engine whose container list never ends
// costs at most MaxBody of it, and the answer is not sure.
func TestEndlessContainerList(t *testing.T) {
	e := startFakeEngine(t)
	dir := t.TempDir()
	r := docker.Probe(context.Background(), []string{dir}, docker.Options{Host: "unix://" + e.sock, Timeout: 20 * time.Second})
	t.Logf("Probe against an endless container list: status %s, sure %v, %d MiB sent: %s", r.Status, r.Sure, e.written.Load()>>20, r.Err)
	if r.Status == docker.StatusRan || r.Sure || len(r.Writers) != 0 {
		t.Errorf("Probe(endless list) = status %q sure %v with %d writers, want not ran, not sure", r.Status, r.Sure, len(r.Writers))
	}
	if !strings.Contains(r.Err, "list containers") || !strings.Contains(r.Err, docker.ErrBodyTooLarge.Error()) {
		t.Errorf("Probe(endless list) error %q, want it to name the container list and %q", r.Err, docker.ErrBodyTooLarge)
	}
	// Allow for what the socket and the HTTP client buffer beyond the bound.
	if got, limit := e.written.Load(), int64(docker.MaxBody+4<<20); got > limit {
		t.Errorf("the engine wrote %d bytes of the container list before the probe stopped reading, want at most %d", got, limit)
	}
}
