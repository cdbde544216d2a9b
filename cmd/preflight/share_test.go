package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/fuseloop"
	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// fuseShare mounts a FUSE loopback of a fresh directory as fuse.NAME and
// returns the backing directory and the mountpoint.
func fuseShare(t *testing.T, name string) (backing, mnt string) {
	t.Helper()
	testdb.NeedFUSE(t)
	backing, mnt = t.TempDir(), t.TempDir()
	unmount, err := fuseloop.Mount(backing, mnt, name)
	if err != nil {
		t.Fatalf("fuseloop.Mount(%s, %s): %v", mnt, name, err)
	}
	t.Cleanup(func() { unmount() })
	return backing, mnt
}

// TestRunLogsNFSSillyRename: the entrypoint logs the .nfsXXXX files beside
// a WAL database on a network filesystem (fuse.glusterfs), and its
// conversion names them.
func TestRunLogsNFSSillyRename(t *testing.T) {
	backing, mnt := fuseShare(t, "glusterfs")
	testdb.Make(t, filepath.Join(backing, "app.db"), "wal", 3)
	silly := ".nfs000000000000beef00000001"
	if err := os.WriteFile(filepath.Join(backing, silly), []byte("old -wal"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code, _ := runBin(t, nil, "run", "--docker", "off", "--on-unsafe", "convert", "--data-dir", mnt, "--", "/bin/echo", "started")
	if code != 0 || out != "started\n" {
		t.Fatalf("run --on-unsafe convert: exit %d, stdout %q, stderr:\n%s", code, out, stderr)
	}
	var logged, converted bool
	for _, l := range strings.Split(stderr, "\n") {
		logged = logged || strings.HasPrefix(l, "preflight: warn: nfs-silly-rename: ") && strings.HasSuffix(l, "#nfs-silly-rename)")
		converted = converted || strings.HasPrefix(l, "preflight: info: converted: ") && strings.Contains(l, silly)
	}
	if !logged || !converted {
		t.Errorf("run stderr: nfs-silly-rename warning with its link: %v, conversion noting it: %v; want both:\n%s", logged, converted, stderr)
	}
}

// TestRunNewDatabaseOnNetworkFS: an empty data directory on a network
// filesystem warns, since the application picks its own journal mode,
// unless --export-env tells it the mode; the application starts either way.
func TestRunNewDatabaseOnNetworkFS(t *testing.T) {
	_, mnt := fuseShare(t, "glusterfs")
	_, stderr, code, _ := runBin(t, nil, "run", "--docker", "off", "--data-dir", mnt, "--", "/bin/true")
	if code != 0 || !strings.Contains(stderr, "preflight: warn: new-db-on-unsafe-fs: ") {
		t.Errorf("run on an empty glusterfs directory: exit %d, stderr %q; want 0 and the new-db-on-unsafe-fs warning", code, stderr)
	}
	_, stderr, code, _ = runBin(t, nil, "run", "--docker", "off", "--export-env", "APP_JOURNAL_MODE", "--data-dir", mnt, "--", "/bin/true")
	if code != 0 || !strings.Contains(stderr, "preflight: info: new-db-on-unsafe-fs: ") {
		t.Errorf("run --export-env on an empty glusterfs directory: exit %d, stderr %q; want 0 and new-db-on-unsafe-fs at info", code, stderr)
	}
	_, _, code, _ = runBin(t, nil, "check", "--docker", "off", mnt)
	if code != exitWarn {
		t.Errorf("check on an empty glusterfs directory: exit %d, want %d", code, exitWarn)
	}
}

// TestShareWithoutLocksKeepsExitCode: a DELETE database on a cross-VM
// share (grpcfuse) gets the one-side-only line at info, once, in check and
// in the entrypoint's log, and check still exits 0.
func TestShareWithoutLocksKeepsExitCode(t *testing.T) {
	backing, mnt := fuseShare(t, "grpcfuse")
	testdb.Make(t, filepath.Join(backing, "app.db"), "delete", 3)
	testdb.Make(t, filepath.Join(backing, "audit.db"), "delete", 3)
	out, _, code, _ := runBin(t, nil, "check", "--docker", "off", mnt)
	if code != 0 || strings.Count(out, "share-without-locks") != 1 || !strings.Contains(out, "one side only") {
		t.Errorf("check on DELETE databases over grpcfuse: exit %d, stdout:\n%s\nwant 0 and share-without-locks once", code, out)
	}
	out, stderr, code, _ := runBin(t, nil, "run", "--docker", "off", "--data-dir", mnt, "--", "/bin/echo", "started")
	if code != 0 || out != "started\n" || strings.Count(stderr, "preflight: info: share-without-locks: ") != 1 {
		t.Errorf("run: exit %d, stdout %q, stderr:\n%s\nwant started and one share-without-locks info line", code, out, stderr)
	}
}
