//go:build linux

package convert_test

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/convert"
	"github.com/preflight-sqlite/preflight/internal/fuseloop"
	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// grpcfuse mounts a FUSE loopback named grpcfuse (Docker Desktop's file
// sharing as a container sees it) and returns the backing directory and the
// mountpoint.
func grpcfuse(t *testing.T) (backing, mnt string) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "not root"
	} else if f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0); err != nil {
		why = err.Error()
	} else {
		f.Close()
	}
	if why != "" {
		if required {
			t.Fatalf("FUSE needs root and /dev/fuse (CI): %s", why)
		}
		t.Skipf("FUSE needs root and /dev/fuse: %s", why)
	}
	backing, mnt = t.TempDir(), t.TempDir()
	unmount, err := fuseloop.Mount(backing, mnt, "grpcfuse")
	if err != nil {
		t.Fatalf("fuseloop.Mount: %v", err)
	}
	t.Cleanup(func() {
		if err := unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return backing, mnt
}

// On a cross-vm share no probe sees the other side: the files must stay
// quiet and the operator must confirm.
func TestUnsafeFSNeedsConfirmation(t *testing.T) {
	backing, mnt := grpcfuse(t)
	hotWAL(t, filepath.Join(backing, "app.db"), 1000)
	path := filepath.Join(mnt, "app.db")
	before := files(t, path)

	o := opts(path)
	o.Watch = 300 * time.Millisecond
	d := one(t, run(t, o), convert.StatusRefused)
	if d.Class != "cross-vm" || d.Refusals[0].Reason != "needs-confirmation" || !strings.Contains(d.Refusals[0].Message, "nothing outside this machine") {
		t.Errorf("class %s, refusals %+v; want cross-vm, needs-confirmation", d.Class, d.Refusals)
	}
	wantUntouched(t, path, before)

	// A dry run watches but does not ask: it says the real run will.
	o.DryRun = true
	d = one(t, run(t, o), convert.StatusWouldConvert)
	if !strings.Contains(strings.Join(d.Notes, "; "), "will ask to confirm") {
		t.Errorf("dry run on cross-vm: notes %q, want that the conversion will ask", d.Notes)
	}
	wantUntouched(t, path, before)
	o.DryRun = false

	asked := ""
	o.Confirm = func(p, statement string) bool { asked = statement; return true }
	d = one(t, run(t, o), convert.StatusConverted)
	if !strings.Contains(asked, "cross-vm") || d.Watched < 300*time.Millisecond {
		t.Errorf("confirmation asked %q after a %s watch", asked, d.Watched)
	}
	if w, r := header1819(t, filepath.Join(backing, "app.db")); w != 1 || r != 1 {
		t.Errorf("header %d/%d in the backing directory, want 1/1", w, r)
	}

	o.To, o.NoBackup = convert.ToWAL, true
	d = one(t, run(t, o), convert.StatusRefused)
	if d.Refusals[0].Reason != "unsafe-fs" {
		t.Errorf("--to wal on cross-vm: refusals %+v, want unsafe-fs", d.Refusals)
	}
}

// A writer behind the share (here: this test, on the backing directory) is
// invisible to every probe, but its files change during the watch.
func TestUnsafeFSActivityRefused(t *testing.T) {
	backing, mnt := grpcfuse(t)
	db, err := sql.Open("sqlite", testdb.DSN(filepath.Join(backing, "app.db"), "_pragma=journal_mode(WAL)"))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	defer db.Close()
	mustExec(t, db, "create table t(id integer primary key, v text)")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				db.Exec("insert into t(v) values('x')")
			}
		}
	}()
	defer func() { close(stop); <-done }()

	o := opts(filepath.Join(mnt, "app.db"))
	o.Watch, o.Confirmed = 500*time.Millisecond, true
	d := one(t, run(t, o), convert.StatusRefused)
	if d.Refusals[0].Reason != "activity" || !strings.Contains(d.Refusals[0].Message, "changed") {
		t.Errorf("refusals = %+v, want activity", d.Refusals)
	}
}

// mergerfs with cache.files=off opens every file with direct I/O, so the
// kernel refuses the shared mmap of the -shm and SQLite says "disk I/O
// error". The conversion holds the database alone anyway: with
// locking_mode=EXCLUSIVE the WAL index stays in memory and the conversion
// goes through.
func TestConvertWithoutSharedMmap(t *testing.T) {
	testdb.NeedFUSE(t)
	backing, mnt := t.TempDir(), t.TempDir()
	unmount, err := fuseloop.MountDirectIO(backing, mnt, "mergerfs")
	if err != nil {
		t.Fatalf("fuseloop.MountDirectIO: %v", err)
	}
	t.Cleanup(func() {
		if err := unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	hotWAL(t, filepath.Join(backing, "app.db"), 1000)
	want := dumpCopy(t, filepath.Join(backing, "app.db"))
	path := filepath.Join(mnt, "app.db")

	o := opts(path)
	o.Watch, o.Confirmed = 200*time.Millisecond, true
	d := one(t, run(t, o), convert.StatusConverted)
	if d.Class != "fuse" || !strings.Contains(strings.Join(d.Notes, "; "), "locking_mode=EXCLUSIVE") {
		t.Errorf("class %s, notes %q; want fuse and a note on locking_mode=EXCLUSIVE", d.Class, d.Notes)
	}
	if len(d.Verified.Tables) != 2 || d.Verified.Tables[0].Before != 1000 || d.Verified.CheckResult != "ok" {
		t.Errorf("verified %+v, want 2 tables, t with 1000 rows, check ok", d.Verified)
	}
	if w, r := header1819(t, filepath.Join(backing, "app.db")); w != 1 || r != 1 {
		t.Errorf("header %d/%d in the backing directory, want 1/1", w, r)
	}
	for _, s := range []string{"-wal", "-shm"} {
		if _, err := os.Lstat(filepath.Join(backing, "app.db"+s)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("app.db%s after the conversion: %v, want none", s, err)
		}
	}
	if got := sqlite3(t, filepath.Join(backing, "app.db"), ".dump"); got != want {
		t.Errorf("dump after the conversion differs from the dump before:\n%s\nwant:\n%s", got, want)
	}
}
