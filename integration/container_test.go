package integration_test

import (
	"path/filepath"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/fuseloop"
	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// check --container NAME checks the paths as the container sees them,
// including a mount nested inside its data directory (here a FUSE grpcfuse
// share at /data/sub inside a named volume at /data), which the host path
// of the outer volume does not show; and it renders text for a container
// whose data is in its writable layer.
func TestCheckContainerNestedMount(t *testing.T) {
	requireDocker(t)
	testdb.NeedFUSE(t)
	requireBinaries(t)
	backing, mnt := hostDir(t), t.TempDir()
	unmount, err := fuseloop.Mount(backing, mnt, "grpcfuse")
	if err != nil {
		t.Fatalf("fuseloop.Mount: %v", err)
	}
	t.Cleanup(func() { unmount() })
	testdb.Make(t, filepath.Join(backing, "app.db"), "wal", 2)

	vol := volume(t)
	id := startApp(t, "-v", vol+":/data", "-v", mnt+":/data/sub", "-e", "DEMO_INTERVAL=1h", "--entrypoint", "/demoapp", image)
	waitLog(t, id, "demoapp: pid=")

	pf := filepath.Join(binDir, "preflight")
	r := run(t, dockerTimeout, nil, pf, "check", "--container", id, "--format", "json", "/data")
	wantCode(t, r, 3)
	wantContains(t, "check --container json", r.stdout, `"container_path": "/data/sub"`)
	wantContains(t, "check --container json", r.stdout, `"id": "wal-on-cross-vm"`)
	// The container checked is not another writer of its own data.
	wantNotContains(t, "check --container json", r.stdout, `"id": "live-writer-container"`)

	r = run(t, dockerTimeout, nil, pf, "check", "--container", id, "/data")
	wantCode(t, r, 3)
	wantContains(t, "check --container text", r.stdout, "/data/sub (on this host: ")

	// Data in the writable layer: text output, exit 4 (ephemeral).
	id2 := startApp(t, "-e", "DEMO_INTERVAL=1h", "--entrypoint", "/demoapp", image)
	waitLog(t, id2, "demoapp: pid=")
	r = run(t, dockerTimeout, nil, pf, "check", "--container", id2, "/data")
	wantCode(t, r, 4)
	wantContains(t, "check --container text", r.stdout, "ephemeral")
}
