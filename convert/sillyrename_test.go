//go:build linux

package convert_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/convert"
	"github.com/preflight-sqlite/preflight/internal/fuseloop"
	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// TestNFSSillyRenameRefused: .nfsXXXX files beside a WAL database on a
// network filesystem (a FUSE loopback typed fuse.glusterfs) may be a
// deleted database or -wal that a process on another NFS client still
// writes: convert names them and refuses, and converts with
// --allow-unverified, noting them.
func TestNFSSillyRenameRefused(t *testing.T) {
	testdb.NeedFUSE(t)
	backing, mnt := t.TempDir(), t.TempDir()
	unmount, err := fuseloop.Mount(backing, mnt, "glusterfs")
	if err != nil {
		t.Fatalf("fuseloop.Mount(%s, glusterfs): %v", mnt, err)
	}
	t.Cleanup(func() { unmount() })
	hotWAL(t, filepath.Join(backing, "app.db"), 200)
	names := []string{".nfs00000000000010ab00000001", ".nfs00000000000010ac00000002"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(backing, n), []byte("held by another client"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(mnt, "app.db")
	before := files(t, path)

	o := opts(path)
	o.AllowUnverified, o.Confirmed, o.Watch = false, true, 200*time.Millisecond
	d := one(t, run(t, o), convert.StatusRefused)
	var got *convert.Refusal
	for i := range d.Refusals {
		if d.Refusals[i].Reason == "nfs-silly-rename" {
			got = &d.Refusals[i]
		}
	}
	if got == nil || !strings.Contains(got.Message, names[0]+", "+names[1]) || !strings.Contains(strings.Join(got.Remedy, " "), "--allow-unverified") {
		t.Fatalf("Run(%s beside .nfs files) refusals = %+v; want nfs-silly-rename naming both files, with --allow-unverified in the remedy", path, d.Refusals)
	}
	wantUntouched(t, path, before)

	o.AllowUnverified = true
	d = one(t, run(t, o), convert.StatusConverted)
	if notes := strings.Join(d.Notes, "; "); !strings.Contains(notes, names[0]) || !strings.Contains(notes, "(--allow-unverified)") {
		t.Errorf("Run --allow-unverified notes = %q; want the .nfs files named", notes)
	}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(backing, n)); err != nil {
			t.Errorf("convert touched %s: %v", n, err)
		}
	}
}
