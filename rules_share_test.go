//go:build linux

package preflight_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// savedCheck checks dir (inspected on this machine) against a saved table
// with / on ext4 and line's mount.
func savedCheck(t *testing.T, dir, line string, opts preflight.Options) *preflight.Report {
	t.Helper()
	table, err := mounts.Parse(strings.NewReader("1 0 254:1 / / rw,relatime - ext4 /dev/vda1 rw\n" + line + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	opts.Paths, opts.MountTable, opts.MountTableSource, opts.InspectSaved = []string{dir}, table, "test", true
	opts.Writers = preflight.WriterOptions{Docker: docker.Options{Mode: docker.ModeOff}}
	r, err := preflight.Check(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestShareWithoutLocksRemedy: after a conversion (DELETE on a cross-VM
// share) the info line says to open the database from one side only; a
// WAL database there gets the same caveat in its error's remedy, not a
// second line.
func TestShareWithoutLocksRemedy(t *testing.T) {
	del := t.TempDir()
	testdb.Make(t, filepath.Join(del, "app.db"), "delete", 2)
	r := savedCheck(t, del, "2 1 0:46 / "+del+" rw - fakeowner /run/host_mark/Users rw,fakeowner", preflight.Options{})
	f := finding(r, "share-without-locks")
	if f == nil || f.Level != preflight.LevelInfo || r.Verdict != preflight.VerdictOK {
		t.Fatalf("Check(DELETE database on fakeowner): findings %+v, verdict %s; want share-without-locks info and ok", r.Findings, r.Verdict)
	}
	if rem := strings.Join(f.Remedy, " "); !strings.Contains(f.Message, "two sides writing") || !strings.Contains(rem, "one side only") || !strings.Contains(rem, "named volume") {
		t.Errorf("share-without-locks message %q, remedy %q; want both sides, one side only, a named volume", f.Message, rem)
	}

	wal := t.TempDir()
	testdb.Make(t, filepath.Join(wal, "app.db"), "wal", 2)
	r = savedCheck(t, wal, "2 1 0:46 / "+wal+" rw - cifs //nas/share rw,vers=3.1.1,nobrl", preflight.Options{})
	if finding(r, "share-without-locks") != nil {
		t.Errorf("Check(WAL database on cifs nobrl): share-without-locks beside wal-on-network-fs: %+v", r.Findings)
	}
	f = finding(r, "wal-on-network-fs")
	if f == nil || !strings.Contains(strings.Join(f.Remedy, " "), "Even after a conversion to DELETE (which needs no -shm), the locks do not reach the other side: open the databases from one client only, or mount without nobrl") {
		t.Errorf("wal-on-network-fs on cifs nobrl: %+v; want the one-client caveat naming nobrl in the remedy", f)
	}
}

// TestUnraidPoolRemedy: on an Unraid user share the fix is the pool path
// that bypasses shfs, computed from the mount's root, not the VM wording.
func TestUnraidPoolRemedy(t *testing.T) {
	wal := t.TempDir()
	testdb.Make(t, filepath.Join(wal, "app.db"), "wal", 2)
	r := savedCheck(t, wal, "2 1 0:46 /appdata/app "+wal+" rw - fuse.shfs shfs rw,user_id=0,group_id=0,allow_other", preflight.Options{})
	f := finding(r, "wal-on-fuse")
	if f == nil {
		t.Fatalf("Check(WAL on fuse.shfs) findings %+v, want wal-on-fuse", r.Findings)
	}
	rem := strings.Join(f.Remedy, " | ")
	if !strings.HasPrefix(rem, "Map the data to its pool path") || !strings.Contains(rem, "/mnt/cache/appdata/app ") || strings.Contains(rem, "VM") {
		t.Errorf("wal-on-fuse remedy on an Unraid user share = %q; want the pool path /mnt/cache/appdata/app first and no VM wording", rem)
	}

	// On the Unraid host itself: /mnt/user is the share's root.
	empty := t.TempDir()
	r = savedCheck(t, empty, "2 1 0:46 / "+empty+" rw - fuse.shfs shfs rw", preflight.Options{})
	f = finding(r, "new-db-on-unsafe-fs")
	if f == nil || !strings.Contains(strings.Join(f.Remedy, " "), "/mnt/cache/SHARE/") {
		t.Errorf("new-db-on-unsafe-fs on fuse.shfs: %+v; want the pool path in the remedy", f)
	}
}

// TestNewDatabaseWarnsUnlessExported: an empty data directory (or a new
// database file) on a network filesystem warns, since the application
// picks its own journal mode, unless --export-env tells it the mode.
func TestNewDatabaseWarnsUnlessExported(t *testing.T) {
	empty := t.TempDir()
	line := "2 1 0:50 / " + empty + " rw - nfs4 nas:/export rw,vers=4.1,hard"
	for _, path := range []string{empty, filepath.Join(empty, "grafana.db")} {
		for _, exported := range []bool{false, true} {
			table, err := mounts.Parse(strings.NewReader("1 0 254:1 / / rw - ext4 /dev/vda1 rw\n" + line + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			r, err := preflight.Check(context.Background(), preflight.Options{
				Paths: []string{path}, MountTable: table, InspectSaved: true, JournalModeExported: exported,
				Writers: preflight.WriterOptions{Docker: docker.Options{Mode: docker.ModeOff}},
			})
			if err != nil {
				t.Fatal(err)
			}
			want, verdict := preflight.LevelWarn, preflight.VerdictWarn
			if exported {
				want, verdict = preflight.LevelInfo, preflight.VerdictOK
			}
			f := finding(r, "new-db-on-unsafe-fs")
			if f == nil || f.Level != want || r.Verdict != verdict {
				t.Errorf("Check(%s on nfs4, exported %v): %+v, verdict %s; want new-db-on-unsafe-fs %s, %s", path, exported, r.Findings, r.Verdict, want, verdict)
				continue
			}
			if !exported && !strings.Contains(strings.Join(f.Remedy, " "), "--export-env NAME") {
				t.Errorf("new-db-on-unsafe-fs remedy %q, want --export-env", f.Remedy)
			}
			if exported && strings.Contains(strings.Join(f.Remedy, " "), "run --export-env NAME") {
				t.Errorf("new-db-on-unsafe-fs remedy with --export-env given %q, want no advice to give it", f.Remedy)
			}
		}
	}
}

// TestDataDirMissingRemedy: the fix says how to make the directory in an
// image (mkdir, ownership, VOLUME), not only "create it".
func TestDataDirMissingRemedy(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "data")
	r := quickCheck(t, missing)
	f := finding(r, "data-dir-missing")
	if f == nil {
		t.Fatalf("Check(%s) findings %+v, want data-dir-missing", missing, r.Findings)
	}
	rem := strings.Join(f.Remedy, " ")
	for _, want := range []string{"mkdir -p " + missing, "chown APPUSER " + missing, "VOLUME " + missing, "unable to open database file", "COPY --chown"} {
		if !strings.Contains(rem, want) {
			t.Errorf("data-dir-missing remedy %q lacks %q", rem, want)
		}
	}
}

// TestNFSSillyRename: .nfsXXXX files beside a WAL database on a network
// filesystem (a FUSE loopback typed fuse.glusterfs) are reported once per
// directory, named, and never taken for databases.
func TestNFSSillyRename(t *testing.T) {
	testdb.NeedFUSE(t)
	backing, mnt := share(t, "glusterfs")
	testdb.Make(t, filepath.Join(backing, "app.db"), "wal", 2)
	testdb.Make(t, filepath.Join(backing, "other.db"), "delete", 1)
	// An NFS client renames a deleted open file to .nfs, the file id and
	// a counter in hex: here an old copy of the database and of its -wal.
	old, err := os.ReadFile(filepath.Join(backing, "app.db"))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{".nfs000000000004a1b200000001", ".nfs000000000004a1b300000002"}
	os.WriteFile(filepath.Join(backing, names[0]), old, 0o644)
	os.WriteFile(filepath.Join(backing, names[1]), []byte("wal frames"), 0o644)
	os.WriteFile(filepath.Join(backing, ".nfsnotes"), []byte("x"), 0o644) // not hex: not NFS's

	r := quickCheck(t, mnt)
	var dbs []string
	for _, db := range r.DataDirs[0].Databases {
		dbs = append(dbs, filepath.Base(db.Path)+":"+fmt.Sprint(db.NFSSillyRenamed))
	}
	want := fmt.Sprintf("app.db:%v,other.db:%v", names, names)
	if got := strings.Join(dbs, ","); got != want {
		t.Errorf("Check(share with .nfs files) databases = %s, want %s (the .nfs copy is not a database)", got, want)
	}
	if got := ids(r); got != "wal-on-network-fs:error,nfs-silly-rename:warn" {
		t.Errorf("findings = %q, want wal-on-network-fs:error,nfs-silly-rename:warn (once for the directory)", got)
	}
	f := finding(r, "nfs-silly-rename")
	if f == nil || !strings.Contains(f.Message, names[0]+", "+names[1]) || !strings.Contains(strings.Join(f.Remedy, " "), "lsof +D") {
		t.Errorf("nfs-silly-rename = %+v; want both names and lsof in the remedy", f)
	}
}
