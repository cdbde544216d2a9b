package docker_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// rootEngine is a fake Docker Engine API on a unix socket whose GET /info
// reports rootDir as its DockerRootDir and whose container list holds one
// exited container with a bind of /elsewhere, or none.
func rootEngine(t *testing.T, rootDir string, containers bool) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "docker.sock")
	list := `[]`
	if containers {
		list = `[{"Id":"` + strings.Repeat("cd", 32) + `","Names":["/other"],"Image":"x","State":"exited",` +
			`"Mounts":[{"Type":"bind","Source":"/elsewhere","Destination":"/data","RW":true}]}]`
	}
	answers := map[string]string{
		"/v1.41/version":         `{"Version":"20.10.24","ApiVersion":"1.41","Os":"linux"}`,
		"/v1.41/info":            `{"OSType":"linux","Name":"fake","ServerVersion":"20.10.24","DockerRootDir":"` + rootDir + `"}`,
		"/v1.41/volumes":         `{"Volumes":[],"Warnings":null}`,
		"/v1.41/containers/json": list,
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("API-Version", "1.41")
		if r.URL.Path == "/_ping" {
			io.WriteString(w, "OK")
			return
		}
		if a, ok := answers[r.URL.Path]; ok {
			io.WriteString(w, a)
			return
		}
		w.WriteHeader(http.StatusNotFound) // no such container: $HOSTNAME is none
		io.WriteString(w, `{"message":"no such container"}`)
	})
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "unix://" + sock
}

// TestMarkerNoteOnlyWhenItMatters: with /.dockerenv (or
// /run/.containerenv) present but no container id, the probe says its data
// paths were taken as host paths, and is not sure, only when there are
// containers and the engine's data root is not visible here; on the
// engine's host (its containers/<id> directory exists here), with no
// container at all, or with HostPaths (check --container), it is sure and
// silent.
func TestMarkerNoteOnlyWhenItMatters(t *testing.T) {
	marker := ""
	for _, m := range []string{"/.dockerenv", "/run/.containerenv"} {
		if _, err := os.Lstat(m); err == nil {
			marker = m
		}
	}
	if marker == "" {
		t.Skip("skipping: needs a /.dockerenv or /run/.containerenv on this machine, and none is here")
	}
	if id := mustSelfID(t); id != "" {
		t.Skipf("skipping: this process runs in container %s, not on a host with a marker file", id)
	}
	visible := t.TempDir()
	if err := os.MkdirAll(filepath.Join(visible, "containers", strings.Repeat("cd", 32)), 0o755); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	for _, tc := range []struct {
		name       string
		root       string
		containers bool
		hostPaths  bool
		wantNote   bool
	}{
		{"data root not visible", filepath.Join(t.TempDir(), "absent"), true, false, true},
		{"data root not reported", "", true, false, true},
		{"on the engine's host", visible, true, false, false},
		{"no containers", filepath.Join(t.TempDir(), "absent"), false, false, false},
		{"host paths given", filepath.Join(t.TempDir(), "absent"), true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := rootEngine(t, tc.root, tc.containers)
			r := docker.Probe(context.Background(), []string{data}, docker.Options{Host: host, Timeout: 5 * time.Second, HostPaths: tc.hostPaths})
			if r.Status != docker.StatusRan {
				t.Fatalf("Probe = %s, want ran", dumpJSON(r))
			}
			note := strings.Contains(r.Err, marker+" exists")
			if note != tc.wantNote || r.Sure == tc.wantNote {
				t.Errorf("Probe: sure %v, err %q; want the %s note %v and sure %v", r.Sure, r.Err, marker, tc.wantNote, !tc.wantNote)
			}
		})
	}
}

// mustSelfID is our container id as the package finds it from this
// process's mount table, or "".
func mustSelfID(t *testing.T) string {
	t.Helper()
	tab, err := mounts.ReadSelf()
	if err != nil {
		t.Fatalf("read mount table: %v", err)
	}
	return docker.ContainerIDFromMounts(tab)
}
