package integration_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// A stopped container that mounts the same data read-write is a future
// second writer: the entrypoint's log reports it (info) and still starts
// the app, and convert notes it without refusing.
func TestStoppedContainerWriter(t *testing.T) {
	requireDocker(t)
	dir := hostDir(t)
	seed(t, "-v", dir+":/data")
	name := containerName(t, "stopped")
	r := docker(t, "create", "--label", label, "--name", name, "-v", dir+":/data", "--entrypoint", "/demoapp", image)
	wantCode(t, r, 0)
	stopped := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { docker(t, "rm", "-f", stopped) })

	id := startApp(t, "--user", "0", "-v", dockerSocket+":"+dockerSocket, "-v", dir+":/data", "-e", "DEMO_ROWS=1", image)
	wantCode(t, docker(t, "wait", id), 0)
	logs := docker(t, "logs", id)
	wantContains(t, "app stdout", logs.stdout, "demoapp: pid=1 journal_mode=wal db=/data/app.db")
	wantContains(t, "preflight stderr", logs.stderr, "preflight: info: stopped-container-writer: /data/app.db: a stopped container mounts it read-write (")
	wantNotContains(t, "preflight stderr", logs.stderr, "multiple-writers")

	path := filepath.Join(dir, "app.db")
	// --allow-unverified: where the tests run in a container, the host
	// side cannot be sure of its processes or its own container.
	c := run(t, dockerTimeout, nil, filepath.Join(binDir, "preflight"), "convert", "--dry-run", "--allow-unverified", path)
	wantCode(t, c, 0)
	wantContains(t, "convert stdout", c.stdout, "would convert")
	wantContains(t, "convert stdout", c.stdout, "note: container "+name)
	wantContains(t, "convert stdout", c.stdout, "mounts this database read-write (created, ")
	wantContains(t, "convert stdout", c.stdout, "once started it is a second writer")
}
