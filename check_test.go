package preflight_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// snapshot records every file under dir with its size, mode, mtime and hash.
func snapshot(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %d %v %d", p, fi.Size(), fi.Mode(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// TestCheckNeverWrites checks a live WAL database (connection open, -wal and
// -shm present) and proves that nothing in the data directory was created,
// modified or removed.
func TestCheckNeverWrites(t *testing.T) {
	dir := t.TempDir()
	// The live connection is held by another process: closing any descriptor
	// of a file drops every POSIX lock this process holds on it.
	if _, err := exec.LookPath("sqlite3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("sqlite3 not on PATH")
		}
		t.Skip("sqlite3 not on PATH: install Debian's sqlite3 to run this test")
	}
	live := exec.Command("sqlite3", filepath.Join(dir, "live.db"))
	stdin, err := live.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); live.Wait() }()
	fmt.Fprintln(stdin, "pragma journal_mode=wal; create table t(a); insert into t values (1),(2),(3);")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "live.db-shm")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sqlite3 did not open live.db in WAL mode within 5s")
		}
	}
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	testdb.Make(t, filepath.Join(dir, "sub", "old.sqlite"), "delete", 5)
	os.WriteFile(filepath.Join(dir, "notes.db"), []byte("plain text"), 0o644)

	testdb.Make(t, filepath.Join(dir, "idle.db"), "wal", 5) // closed: no -wal, no -shm

	before := snapshot(t, dir)
	r, err := preflight.Check(context.Background(), preflight.Options{Paths: []string{dir}})
	if err != nil {
		t.Fatalf("Check(%s): %v", dir, err)
	}
	if diff := cmp.Diff(before, snapshot(t, dir)); diff != "" {
		t.Errorf("Check(%s) changed the data directory (-before +after):\n%s", dir, diff)
	}
	// --deep opens SQLite read-only: on the idle WAL database only through a
	// private copy, or it would create -wal and -shm here.
	deep, err := preflight.Check(context.Background(), preflight.Options{Paths: []string{dir}, Health: preflight.HealthOptions{Deep: true}})
	if err != nil {
		t.Fatalf("Check(%s, deep): %v", dir, err)
	}
	// The one change allowed: a read-only connection to the live database
	// joins its WAL protocol and records its read mark in -shm, as every
	// SQLite reader does.
	withoutLiveSHM := func(lines []string) []string {
		var out []string
		for _, l := range lines {
			if !strings.HasPrefix(l, filepath.Join(dir, "live.db-shm")+" ") {
				out = append(out, l)
			}
		}
		return out
	}
	if diff := cmp.Diff(withoutLiveSHM(before), withoutLiveSHM(snapshot(t, dir))); diff != "" {
		t.Errorf("Check(%s, deep) changed the data directory (-before +after):\n%s", dir, diff)
	}
	for _, db := range deep.DataDirs[0].Databases {
		if db.NotSQLite {
			continue
		}
		if db.Health == nil || db.Health.Integrity == nil || !db.Health.Integrity.OK {
			t.Errorf("Check(deep) of %s: integrity %+v, want ok", db.Path, db.Health)
		}
	}
	got := map[string]string{}
	for _, d := range r.DataDirs[0].Databases {
		got[filepath.Base(d.Path)] = string(d.JournalMode)
		if d.NotSQLite {
			got[filepath.Base(d.Path)] = "not-sqlite"
		}
	}
	want := map[string]string{"live.db": "wal", "idle.db": "wal", "old.sqlite": "rollback", "notes.db": "not-sqlite"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Check(%s) databases (-want +got):\n%s", dir, diff)
	}
	for _, d := range r.DataDirs[0].Databases {
		if filepath.Base(d.Path) == "live.db" && (!d.WAL.Exists || !d.SHM.Exists) {
			t.Errorf("live.db sidecars: wal %+v shm %+v, want both present", d.WAL, d.SHM)
		}
	}
}

// TestCheckDeduplicates gives the same directory three times, once through a
// symlink, and expects each database once.
func TestCheckDeduplicates(t *testing.T) {
	dir := t.TempDir()
	testdb.Make(t, filepath.Join(dir, "a.db"), "wal", 1)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	r, err := preflight.Check(context.Background(), preflight.Options{Paths: []string{dir, link, filepath.Join(dir, "a.db")}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range r.DataDirs {
		n += len(d.Databases)
	}
	if n != 1 {
		t.Errorf("Check(dir, symlink to dir, dir/a.db) reported %d databases, want 1", n)
	}
	if r.DataDirs[1].Resolved != r.DataDirs[0].Resolved {
		t.Errorf("symlinked data dir resolved to %q, want %q", r.DataDirs[1].Resolved, r.DataDirs[0].Resolved)
	}
}

// TestCheckSingleFileBind classifies a database whose file is a bind mount of
// its own while its directory is on the writable layer.
func TestCheckSingleFileBind(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "app.db")
	testdb.Make(t, db, "wal", 1)
	table, err := mounts.Parse(strings.NewReader(
		"1 0 0:30 / / rw - overlay overlay rw,lowerdir=/l\n" +
			"2 1 0:46 /Users/me/app.db " + db + " rw - fakeowner /run/host_mark/Users rw,fakeowner\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := preflight.Check(context.Background(), preflight.Options{Paths: []string{dir}, MountTable: table, MountTableSource: "test", InspectSaved: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range r.Findings {
		ids = append(ids, string(f.ID))
	}
	want := []string{"ephemeral-data-dir", "wal-on-cross-vm", "single-file-bind"}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("findings for a single-file bind of a WAL database (-want +got):\n%s", diff)
	}
	if r.Verdict != preflight.VerdictUnsafe || r.JournalMode != "delete" {
		t.Errorf("verdict %s, journal mode %s; want unsafe, delete", r.Verdict, r.JournalMode)
	}
}

// TestRulesAreDocumented keeps the hand-written docs pages in step with
// the rules table: every finding ID is named, as `ID`, on one of them (the
// findings tables of docs/findings-table.md, check.md, kube-manifests.md).
func TestRulesAreDocumented(t *testing.T) {
	pages, err := filepath.Glob("docs/*.md")
	if err != nil || len(pages) < 10 {
		t.Fatalf("docs pages: %v (%d)", err, len(pages))
	}
	var docs strings.Builder
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(b)
	}
	for _, r := range preflight.Rules() {
		if !strings.Contains(docs.String(), "`"+string(r.ID)+"`") {
			t.Errorf("no page of docs/ names finding %s", r.ID)
		}
	}
}

// TestRulesOverCapturedFilesystems judges real databases made by the driver
// against mount tables for the filesystems this machine cannot mount
// (Options.InspectSaved): every WAL rule, its level and the verdict.
func TestRulesOverCapturedFilesystems(t *testing.T) {
	walDir := t.TempDir()
	testdb.Make(t, filepath.Join(walDir, "app.db"), "wal", 3)
	delDir := t.TempDir()
	testdb.Make(t, filepath.Join(delDir, "app.db"), "delete", 3)
	emptyDir := t.TempDir()

	tests := []struct {
		name        string
		dir         string
		fstype      string
		source      string
		opts        string
		ignore      []string
		wantIDs     string
		verdict     preflight.Verdict
		journalMode string
	}{
		{"wal on local ext4", walDir, "ext4", "/dev/sda1", "rw", nil, "", preflight.VerdictOK, "wal"},
		{"wal on docker desktop fakeowner", walDir, "fakeowner", "/run/host_mark/Users", "rw,fakeowner", nil, "wal-on-cross-vm:error", preflight.VerdictUnsafe, "delete"},
		{"wal on grpcfuse", walDir, "fuse.grpcfuse", "grpcfuse", "rw,user_id=0,group_id=0,allow_other", nil, "wal-on-cross-vm:error", preflight.VerdictUnsafe, "delete"},
		{"wal on wsl2 drive", walDir, "9p", "drvfs", "rw,aname=drvfs;path=C:\\;uid=0", nil, "wal-on-cross-vm:error", preflight.VerdictUnsafe, "delete"},
		{"wal on nfs4", walDir, "nfs4", "10.0.0.2:/export", "rw,vers=4.1", nil, "wal-on-network-fs:error", preflight.VerdictUnsafe, "delete"},
		{"wal on cifs", walDir, "cifs", "//nas/share", "rw,nobrl", nil, "wal-on-network-fs:error", preflight.VerdictUnsafe, "delete"},
		{"wal on unraid shfs", walDir, "fuse.shfs", "shfs", "rw", nil, "wal-on-fuse:error", preflight.VerdictUnsafe, "delete"},
		{"wal on mergerfs", walDir, "fuse.mergerfs", "pool", "rw", nil, "wal-on-fuse:error", preflight.VerdictUnsafe, "delete"},
		{"wal on other fuse", walDir, "fuse.foofs", "foofs", "rw", nil, "wal-on-fuse:warn", preflight.VerdictWarn, "delete"},
		{"wal on litefs", walDir, "fuse.litefs", "litefs", "rw", nil, "", preflight.VerdictOK, "wal"},
		{"rollback on cross-vm", delDir, "virtiofs", "mount0", "rw", nil, "share-without-locks:info", preflight.VerdictOK, "delete"},
		{"empty dir on cross-vm", emptyDir, "virtiofs", "mac", "rw", nil, "new-db-on-unsafe-fs:warn,share-without-locks:info", preflight.VerdictWarn, "delete"},
		{"rollback on cifs nobrl", delDir, "cifs", "//nas/share", "rw,nobrl", nil, "share-without-locks:info", preflight.VerdictOK, "delete"},
		{"rollback on nfs4 local_lock=all", delDir, "nfs4", "nas:/export", "rw,vers=4.1,local_lock=all", nil, "share-without-locks:info", preflight.VerdictOK, "delete"},
		{"rollback on nfs4 with locks", delDir, "nfs4", "nas:/export", "rw,vers=4.1,hard,local_lock=none", nil, "", preflight.VerdictOK, "delete"},
		{"rollback on nfs soft", delDir, "nfs", "nas:/export", "rw,vers=3,soft,timeo=600", nil, "nfs-soft-mount:warn", preflight.VerdictWarn, "delete"},
		{"wal on nfs4 softerr", walDir, "nfs4", "nas:/export", "rw,softerr", nil, "wal-on-network-fs:error,nfs-soft-mount:warn", preflight.VerdictUnsafe, "delete"},
		{"rollback on unraid shfs", delDir, "fuse.shfs", "shfs", "rw", nil, "", preflight.VerdictOK, "delete"},
		{"unknown fs", walDir, "weirdfs", "x", "rw", nil, "unknown-fs:warn", preflight.VerdictWarn, "delete"},
		// gVisor's gofer mount, options as captured (probe/mounts/testdata/gvisor-runsc-mountinfo.txt).
		{"wal in a gvisor sandbox", walDir, "9p", "none", "rw,trans=fd,rfdno=7,wfdno=7,aname=/,dfltuid=4294967294,dfltgid=4294967294,dcache=1000,cache=remote_revalidating,disable_fifo_open,directfs", nil, "wal-on-sandbox-fs:warn", preflight.VerdictWarn, "wal"},
		{"rollback in a gvisor sandbox", delDir, "9p", "none", "rw,trans=fd,rfdno=7,wfdno=7,aname=/,dcache=1000,cache=remote_revalidating,disable_fifo_open,directfs", nil, "", preflight.VerdictOK, "wal"},
		{"wal on linux 9p over an fd", walDir, "9p", "127.0.0.1", "rw,trans=fd,rfdno=5,wfdno=5,version=9p2000.L,msize=65536", nil, "wal-on-cross-vm:error", preflight.VerdictUnsafe, "delete"},
		{"unsafe, ignored", walDir, "nfs", "srv:/x", "rw", []string{"wal-on-network-fs"}, "wal-on-network-fs:info", preflight.VerdictOK, "delete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := "1 0 254:1 / / rw,relatime - ext4 /dev/vda1 rw\n" +
				fmt.Sprintf("2 1 0:46 / %s rw,relatime - %s %s %s\n", tt.dir, tt.fstype, tt.source, tt.opts)
			table, err := mounts.Parse(strings.NewReader(text))
			if err != nil {
				t.Fatal(err)
			}
			r, err := preflight.Check(context.Background(), preflight.Options{
				Paths: []string{tt.dir}, MountTable: table, MountTableSource: "test", InspectSaved: true, Ignore: tt.ignore,
				Writers: preflight.WriterOptions{Docker: docker.Options{Mode: docker.ModeOff}},
			})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, f := range r.Findings {
				if !strings.HasPrefix(string(f.ID), "live-writer") {
					ids = append(ids, string(f.ID)+":"+string(f.Level))
				}
			}
			if got := strings.Join(ids, ","); got != tt.wantIDs {
				t.Errorf("Check(%s on %s) findings = %s, want %s", tt.dir, tt.fstype, got, tt.wantIDs)
			}
			if r.Verdict != tt.verdict || r.JournalMode != tt.journalMode {
				t.Errorf("Check(%s on %s) verdict %s, journal mode %s; want %s, %s", tt.dir, tt.fstype, r.Verdict, r.JournalMode, tt.verdict, tt.journalMode)
			}
		})
	}
}

// TestCheckNewDatabaseFile: a database path that does not exist yet, in a
// directory that does, is a new database, not a missing data directory.
func TestCheckNewDatabaseFile(t *testing.T) {
	dir := t.TempDir()
	r, err := preflight.Check(context.Background(), preflight.Options{
		Paths:   []string{filepath.Join(dir, "app.db"), filepath.Join(dir, "nope", "app.db")},
		Writers: preflight.WriterOptions{Docker: docker.Options{Mode: docker.ModeOff}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := r.DataDirs[0]; !d.Exists || len(d.Databases) != 1 || !d.Databases[0].New {
		t.Errorf("Check(missing app.db in an existing dir) = %+v, want one new database", d)
	}
	var ids []string
	for _, f := range r.Findings {
		ids = append(ids, string(f.ID)+":"+f.Path)
	}
	if want := "data-dir-missing:" + filepath.Join(dir, "nope", "app.db"); strings.Join(ids, ",") != want {
		t.Errorf("findings = %v, want only %s", ids, want)
	}
}

// TestCheckOverlayOnVirtiofs: on Docker Desktop for Mac a data directory
// on an overlay mount whose upper directory lies on the virtiofs share is
// judged by the share, not called local.
func TestCheckOverlayOnVirtiofs(t *testing.T) {
	dir := t.TempDir()
	testdb.Make(t, filepath.Join(dir, "app.db"), "wal", 1)
	table, err := mounts.Parse(strings.NewReader(
		"1 0 0:30 / / rw - overlay overlay rw,lowerdir=/l,upperdir=/var/lib/docker/overlay2/a/diff,workdir=/var/lib/docker/overlay2/a/work\n" +
			"50 1 0:60 / /mnt/host rw,relatime - virtiofs virtiofs0 rw\n" +
			"60 1 0:70 / " + dir + " rw,relatime - overlay overlay rw,lowerdir=/l2,upperdir=/mnt/host/Users/me/openclaw/upper,workdir=/mnt/host/Users/me/openclaw/work\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := preflight.Check(context.Background(), preflight.Options{Paths: []string{dir}, MountTable: table, MountTableSource: "test", InspectSaved: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range r.Findings {
		ids = append(ids, string(f.ID))
	}
	if diff := cmp.Diff([]string{"wal-on-cross-vm"}, ids); diff != "" || r.FSClass != mounts.ClassCrossVM || r.JournalMode != "delete" {
		t.Errorf("Check(overlay over virtiofs) findings (-want +got):\n%s\nclass %s, journal mode %s; want cross-vm, delete", diff, r.FSClass, r.JournalMode)
	}
}

// ids lists r's findings other than live writers as "id:level", comma
// separated.
func ids(r *preflight.Report) string {
	var out []string
	for _, f := range r.Findings {
		if !strings.HasPrefix(string(f.ID), "live-writer") {
			out = append(out, string(f.ID)+":"+string(f.Level))
		}
	}
	return strings.Join(out, ",")
}
