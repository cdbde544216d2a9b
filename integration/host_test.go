package integration_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/fuseloop"
	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// entrypoint.sh runs preflight in front of the command, and without
// preflight runs the command alone with a warning.
func TestEntrypointScript(t *testing.T) {
	requireBinaries(t)
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skipf("no sh: %v", err)
	}
	script := filepath.Join(repoRoot, "entrypoint.sh")
	data := t.TempDir()
	demo := filepath.Join(binDir, "demoapp")
	env := []string{"DATA_DIR=" + data, "DEMO_ROWS=1",
		"PREFLIGHT_BIN=" + filepath.Join(binDir, "preflight"),
		"PREFLIGHT_ARGS=--data-dir " + data}
	r := run(t, dockerTimeout, env, "sh", script, demo)
	wantCode(t, r, 0)
	wantContains(t, "stdout", r.stdout, "demoapp: preflight fs_class=")

	env = []string{"DATA_DIR=" + data, "DEMO_ROWS=1", "PREFLIGHT_BIN=/no/such/preflight"}
	r = run(t, dockerTimeout, env, "sh", script, demo)
	wantCode(t, r, 0)
	wantContains(t, "stderr", r.stderr, "entrypoint.sh: warning: /no/such/preflight not found")
	wantContains(t, "stdout", r.stdout, "demoapp: pid=")
	wantNotContains(t, "stdout", r.stdout, "fs_class=")
}

// Without Docker: preflight on this host over a grpcfuse FUSE mount.
func TestHostGrpcfuse(t *testing.T) {
	requireBinaries(t)
	testdb.NeedFUSE(t)
	backing, mnt := t.TempDir(), t.TempDir()
	unmount, err := fuseloop.Mount(backing, mnt, "grpcfuse")
	if err != nil {
		t.Fatalf("fuseloop.Mount(%q, %q, grpcfuse): %v", backing, mnt, err)
	}
	t.Cleanup(func() {
		if err := unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	r := run(t, dockerTimeout, []string{"DATA_DIR=" + mnt, "DEMO_ROWS=3"}, filepath.Join(binDir, "demoapp"))
	wantCode(t, r, 0)
	r = run(t, dockerTimeout, nil, filepath.Join(binDir, "preflight"), "check", "--format", "json", mnt)
	rep := decodeReport(t, r, 3)
	if rep.Verdict != "unsafe" || rep.findings()["wal-on-cross-vm"] != "error" {
		t.Errorf("check over grpcfuse: verdict %q findings %v, want unsafe with wal-on-cross-vm error", rep.Verdict, rep.findings())
	}
	if len(rep.DataDirs) == 1 && rep.DataDirs[0].Mount != nil && rep.DataDirs[0].Mount.Class != "cross-vm" {
		t.Errorf("class = %q, want cross-vm", rep.DataDirs[0].Mount.Class)
	}
	if _, err := os.Stat(filepath.Join(backing, "app.db")); err != nil {
		t.Errorf("database not in the backing directory: %v", err)
	}
}
