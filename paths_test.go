//go:build linux

package preflight_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/internal/fuseloop"
	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/docker"
)

// share mounts a FUSE loopback of a fresh directory under name and returns
// the backing directory and the mountpoint.
func share(t *testing.T, name string) (backing, mnt string) {
	t.Helper()
	backing, mnt = t.TempDir(), t.TempDir()
	unmount, err := fuseloop.Mount(backing, mnt, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmount() })
	return backing, mnt
}

func quickCheck(t *testing.T, paths ...string) *preflight.Report {
	t.Helper()
	r, err := preflight.Check(context.Background(), preflight.Options{
		Paths: paths, FSTimeout: time.Second,
		Writers: preflight.WriterOptions{Docker: docker.Options{Mode: docker.ModeOff}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSymlinkToAnotherFilesystem: a database symlinked into the data
// directory from a network mount is judged where SQLite puts its -wal and
// -shm: beside the target.
func TestSymlinkToAnotherFilesystem(t *testing.T) {
	testdb.NeedFUSE(t)
	backing, mnt := share(t, "sshfs") // fuse.sshfs, source "sshfs": network
	testdb.Make(t, filepath.Join(backing, "app.db"), "wal", 2)
	data := t.TempDir()
	if err := os.Symlink(filepath.Join(mnt, "app.db"), filepath.Join(data, "app.db")); err != nil {
		t.Fatal(err)
	}
	r := quickCheck(t, data)
	if got := ids(r); got != "wal-on-network-fs:error" {
		t.Errorf("Check(dir with app.db -> network mount) findings = %q, want wal-on-network-fs:error", got)
	}
	if r.Verdict != preflight.VerdictUnsafe || r.JournalMode != "delete" {
		t.Errorf("verdict %s, journal mode %s; want unsafe, delete", r.Verdict, r.JournalMode)
	}
}

// TestDotDotAfterSymlink: "link/.." is the kernel's parent of the link's
// target, not the textual parent of the link.
func TestDotDotAfterSymlink(t *testing.T) {
	testdb.NeedFUSE(t)
	backing, mnt := share(t, "grpcfuse")
	testdb.Make(t, filepath.Join(backing, "app.db"), "wal", 1)
	os.Mkdir(filepath.Join(backing, "sub"), 0o755)
	z := t.TempDir()
	if err := os.Symlink(filepath.Join(mnt, "sub"), filepath.Join(z, "link")); err != nil {
		t.Fatal(err)
	}
	r := quickCheck(t, filepath.Join(z, "link")+"/..")
	if got := ids(r); got != "wal-on-cross-vm:error" {
		t.Errorf("Check(link/..) findings = %q, want wal-on-cross-vm:error (the mount's app.db)", got)
	}
}

// TestHiddenMount: a bind mount on a path that a later mount on its parent
// covers is not the one that serves the path.
func TestHiddenMount(t *testing.T) {
	testdb.NeedFUSE(t)
	parent := t.TempDir()
	child := filepath.Join(parent, "child")
	os.Mkdir(child, 0o755)
	local := t.TempDir()
	if err := syscall.Mount(local, child, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("bind mount: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(child, syscall.MNT_DETACH) })
	backing := t.TempDir()
	os.Mkdir(filepath.Join(backing, "child"), 0o755)
	testdb.Make(t, filepath.Join(backing, "child", "app.db"), "wal", 1)
	unmount, err := fuseloop.Mount(backing, parent, "grpcfuse") // covers child's bind mount
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmount() })

	r := quickCheck(t, child)
	if m := r.DataDirs[0].Mount; m == nil || m.FSType != "fuse.grpcfuse" {
		t.Fatalf("Check(%s) mount = %+v, want the grpcfuse mount that covers the hidden bind mount", child, m)
	}
	if got := ids(r); got != "wal-on-cross-vm:error" {
		t.Errorf("findings = %q, want wal-on-cross-vm:error", got)
	}
}

// TestDepthLimitOnUnsafeFS: databases below --max-depth are not seen, and
// on an unsafe filesystem that is a warning, not "holds no database yet".
func TestDepthLimitOnUnsafeFS(t *testing.T) {
	testdb.NeedFUSE(t)
	backing, mnt := share(t, "grpcfuse")
	deep := filepath.Join(backing, "a", "b", "c")
	os.MkdirAll(deep, 0o755)
	testdb.Make(t, filepath.Join(deep, "app.db"), "wal", 1)
	r := quickCheck(t, mnt)
	if got := ids(r); got != "scan-depth-limit:warn,share-without-locks:info" {
		t.Errorf("Check(share with a deep database) findings = %q, want scan-depth-limit:warn,share-without-locks:info", got)
	}
}

// TestUnresponsiveFilesystem: a FUSE daemon that stops answering makes the
// check report fs-unresponsive within the timeout instead of hanging.
func TestUnresponsiveFilesystem(t *testing.T) {
	backing := t.TempDir()
	testdb.Make(t, filepath.Join(backing, "app.db"), "wal", 1)
	mnt := testdb.StoppedFUSE(t, backing)
	start := time.Now()
	r := quickCheck(t, mnt)
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("Check of a stopped FUSE mount took %s, want about the 1s timeout", el)
	}
	if !strings.Contains(ids(r), "fs-unresponsive:error") || r.Verdict != preflight.VerdictUnsafe {
		t.Errorf("Check of a stopped FUSE mount: findings %q, verdict %s; want fs-unresponsive, unsafe", ids(r), r.Verdict)
	}

	// A local data directory that reaches the stopped mount through a
	// symlink: the walk is bounded too (twice the timeout).
	local := t.TempDir()
	if err := os.Symlink(mnt, filepath.Join(local, "share")); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	r = quickCheck(t, local)
	if el := time.Since(start); el > 4*time.Second {
		t.Errorf("Check of a directory with a symlink into a stopped FUSE mount took %s, want about 2s", el)
	}
	if !strings.Contains(ids(r), "fs-unresponsive:error") {
		t.Errorf("Check of a directory with a symlink into a stopped FUSE mount: findings %q, want fs-unresponsive", ids(r))
	}
}

// TestSymlinkedDatabaseSidecars: a database found through a symlink is
// reported at its real path, with the -wal SQLite keeps beside the real
// file, so the WAL check, the watch and convert look at the right files.
func TestSymlinkedDatabaseSidecars(t *testing.T) {
	real := t.TempDir()
	db := testdb.Open(t, filepath.Join(real, "real.db"), "wal", 3) // -wal and -shm exist while open
	defer db.Close()
	data := t.TempDir()
	link := filepath.Join(data, "app.db")
	if err := os.Symlink(filepath.Join(real, "real.db"), link); err != nil {
		t.Fatal(err)
	}
	r := quickCheck(t, data)
	got := r.DataDirs[0].Databases
	if len(got) != 1 || got[0].Path != filepath.Join(real, "real.db") || got[0].Link != link {
		t.Fatalf("Check(dir with a symlinked database) = %+v, want path %s via link %s", got, filepath.Join(real, "real.db"), link)
	}
	if !got[0].WAL.Exists || !got[0].SHM.Exists {
		t.Errorf("sidecars of the symlinked database: wal %+v shm %+v, want both (beside the real file)", got[0].WAL, got[0].SHM)
	}
}

// TestSidecarSymlink: a -wal that is a symlink is an error, whatever the
// filesystem of the database says.
func TestSidecarSymlink(t *testing.T) {
	dir := t.TempDir()
	testdb.Make(t, filepath.Join(dir, "app.db"), "wal", 1)
	if err := os.Symlink(filepath.Join(t.TempDir(), "wal"), filepath.Join(dir, "app.db-wal")); err != nil {
		t.Fatal(err)
	}
	r := quickCheck(t, dir)
	if got := ids(r); got != "sidecar-symlink:error" {
		t.Errorf("Check(database with a symlinked -wal) findings = %q, want sidecar-symlink:error", got)
	}
}

// TestWALWithoutDatabase: an empty database file beside a -wal with frames
// is an error on any filesystem (SQLite deletes that -wal at the next
// open), not a new database, and the check leaves the files as they were.
func TestWALWithoutDatabase(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	db := testdb.Open(t, path, "wal", 3)
	if _, err := db.Exec("PRAGMA wal_autocheckpoint=0; insert into t(v) values ('x')"); err != nil {
		t.Fatal(err)
	}
	wal, err := os.ReadFile(path + "-wal")
	if err != nil || len(wal) == 0 {
		t.Fatalf("-wal: %d bytes, %v", len(wal), err)
	}
	db.Close() // checkpoints and removes the -wal: put it back beside an empty file
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+"-wal", wal, 0o644); err != nil {
		t.Fatal(err)
	}
	r := quickCheck(t, dir)
	if got := ids(r); got != "wal-without-database:error" || r.Verdict != preflight.VerdictUnsafe {
		t.Errorf("Check(empty database, -wal with frames) findings = %q, verdict %s; want wal-without-database:error, unsafe", got, r.Verdict)
	}
	if b, _ := os.ReadFile(path + "-wal"); len(b) != len(wal) {
		t.Errorf("-wal is %d bytes after the check, want %d", len(b), len(wal))
	}

	// Only the -wal, no database file: found by its -wal.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	r = quickCheck(t, dir)
	if got := ids(r); got != "wal-without-database:error" {
		t.Errorf("Check(lone -wal with frames) findings = %q, want wal-without-database:error", got)
	}
	// A -wal of a header alone holds no data: nothing to say.
	if err := os.WriteFile(path+"-wal", wal[:32], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r = quickCheck(t, dir)
	if got := ids(r); strings.Contains(got, "wal-without-database") {
		t.Errorf("Check(empty database, -wal header only) findings = %q, want no wal-without-database", got)
	}
}

// TestBigTreeOnShare: a data directory on a FUSE share with a database
// beside a large cache/ tree is searched to the end and its WAL database
// judged, however long the whole walk takes, as long as every call
// answers; it is not reported unresponsive. The walk here (20,000 stats
// through FUSE, no sniffing limit) takes longer than twice the 250 ms
// timeout that bounded the whole walk before.
func TestBigTreeOnShare(t *testing.T) {
	testdb.NeedFUSE(t)
	backing, mnt := share(t, "grpcfuse")
	testdb.Make(t, filepath.Join(backing, "app.db"), "wal", 1)
	cache := filepath.Join(backing, "cache")
	if err := os.Mkdir(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 20000 {
		if err := os.WriteFile(filepath.Join(cache, fmt.Sprintf("f%d", i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	r, err := preflight.Check(context.Background(), preflight.Options{
		Paths: []string{mnt}, FSTimeout: 250 * time.Millisecond, SniffTime: -1,
		Writers: preflight.WriterOptions{Docker: docker.Options{Mode: docker.ModeOff}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Check took %s", time.Since(start))
	if got := ids(r); got != "wal-on-cross-vm:error" {
		t.Errorf("Check(share with app.db and 20,000 small files, --sniff-time -1) findings = %q, want wal-on-cross-vm:error", got)
	}
	if d := r.DataDirs[0]; len(d.Databases) != 1 || d.NotSniffed != 0 {
		t.Errorf("databases %d, not sniffed %d; want 1, 0", len(d.Databases), d.NotSniffed)
	}
}

// TestSniffLimit: once the sniffing budget is spent the remaining files
// without a database name are counted (scan-sniff-limit), and the database
// with a database name is still judged.
func TestSniffLimit(t *testing.T) {
	testdb.NeedFUSE(t)
	backing, mnt := share(t, "grpcfuse")
	testdb.Make(t, filepath.Join(backing, "app.db"), "wal", 1)
	for i := range 30 {
		if err := os.WriteFile(filepath.Join(backing, fmt.Sprintf("blob%02d", i)), make([]byte, 4096), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := preflight.Check(context.Background(), preflight.Options{
		Paths: []string{mnt}, FSTimeout: time.Second, SniffMax: 10,
		Writers: preflight.WriterOptions{Docker: docker.Options{Mode: docker.ModeOff}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(r); got != "scan-sniff-limit:warn,wal-on-cross-vm:error" {
		t.Errorf("Check(share with app.db and 30 blobs, SniffMax 10) findings = %q, want scan-sniff-limit:warn,wal-on-cross-vm:error", got)
	}
	if n := r.DataDirs[0].NotSniffed; n != 20 {
		t.Errorf("NotSniffed = %d, want 20", n)
	}
}

// TestSidecarOnAnotherFilesystem: a file from a Docker Desktop gRPC FUSE
// share bind-mounted over the -shm of a local WAL database: the shared
// memory lives on the share, so the database is judged by it.
func TestSidecarOnAnotherFilesystem(t *testing.T) {
	testdb.NeedFUSE(t)
	data := t.TempDir()
	db := filepath.Join(data, "app.db")
	testdb.Make(t, db, "wal", 2)
	if r := quickCheck(t, data); ids(r) != "" || r.JournalMode != "wal" {
		t.Fatalf("Check(local WAL database) findings = %q, journal mode %s; want none, wal", ids(r), r.JournalMode)
	}
	backing, mnt := share(t, "grpcfuse")
	if err := os.WriteFile(filepath.Join(backing, "shm"), make([]byte, 32768), 0o644); err != nil {
		t.Fatal(err)
	}
	shm := db + "-shm"
	if err := os.WriteFile(shm, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(filepath.Join(mnt, "shm"), shm, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount over %s: %v", shm, err)
	}
	t.Cleanup(func() { syscall.Unmount(shm, syscall.MNT_DETACH) })

	r := quickCheck(t, data)
	if got := ids(r); got != "wal-on-cross-vm:error" {
		t.Errorf("Check(app.db with -shm bind-mounted from grpcfuse) findings = %q, want wal-on-cross-vm:error", got)
	}
	if r.Verdict != preflight.VerdictUnsafe || r.JournalMode != "delete" || r.FSClass != "cross-vm" {
		t.Errorf("verdict %s, journal mode %s, class %s; want unsafe, delete, cross-vm", r.Verdict, r.JournalMode, r.FSClass)
	}
	d := r.DataDirs[0].Databases[0]
	if m := d.SidecarMounts["-shm"]; m == nil || m.FSType != "fuse.grpcfuse" || !strings.Contains(m.Reason, "-shm") {
		t.Errorf("SidecarMounts = %+v, want -shm on fuse.grpcfuse", d.SidecarMounts)
	}
}

// TestOverlayUpperOnTmpfs: a data directory on a real overlay mount whose
// upper directory is on a tmpfs elsewhere is judged by the tmpfs (its
// data goes at unmount or reboot), though "/" under both is ext4: the
// filtered read of the mount table keeps the mount under the upper
// directory.
func TestOverlayUpperOnTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" || os.Getenv("PREFLIGHT_REQUIRE_DOCKER") == "1" {
			t.Fatal("overlay test needs root to mount (CI=true)")
		}
		t.Skip("overlay test skipped: needs root to mount")
	}
	mem, lower, merged := t.TempDir(), t.TempDir(), t.TempDir()
	if err := syscall.Mount("tmpfs", mem, "tmpfs", 0, "size=16m"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(mem, syscall.MNT_DETACH) })
	for _, d := range []string{"upper", "work"} {
		if err := os.Mkdir(filepath.Join(mem, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	opts := "lowerdir=" + lower + ",upperdir=" + filepath.Join(mem, "upper") + ",workdir=" + filepath.Join(mem, "work")
	if err := syscall.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		t.Fatalf("mount overlay: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(merged, syscall.MNT_DETACH) })
	testdb.Make(t, filepath.Join(merged, "app.db"), "wal", 1)

	r := quickCheck(t, merged)
	m := r.DataDirs[0].Mount
	if m == nil || m.FSType != "overlay" || m.Class != "ephemeral" {
		t.Fatalf("Check(overlay with upper on tmpfs) mount = %+v, want overlay, ephemeral", m)
	}
	if got := ids(r); got != "ephemeral-data-dir:warn" {
		t.Errorf("findings = %q, want ephemeral-data-dir:warn", got)
	}
}
