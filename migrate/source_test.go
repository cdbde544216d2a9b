package migrate_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/migrate"
	"github.com/preflight-sqlite/preflight/probe/docker"
)

// TestRunLeavesWALSourceUnchanged migrates a WAL database that was closed
// cleanly (no -wal, no -shm): the copy must not create -wal or -shm in the
// source directory, and the copy keeps WAL.
func TestRunLeavesWALSourceUnchanged(t *testing.T) {
	from := t.TempDir()
	testdb.Make(t, filepath.Join(from, "app.db"), "wal", 20)
	before := names(t, from)
	if len(before) != 1 {
		t.Fatalf("source holds %v, want only app.db", before)
	}
	to := filepath.Join(t.TempDir(), "volume")
	res, err := migrate.Run(context.Background(), migrate.Options{From: from, To: to, Docker: docker.Options{Mode: docker.ModeOff}, AllowUnverified: true})
	if err != nil {
		t.Fatalf("Run: %v (%+v)", err, res)
	}
	if after := names(t, from); len(after) != 1 {
		t.Errorf("Run wrote into the source: it holds %v, want %v", after, before)
	}
	if len(res.Databases) != 1 || res.Databases[0].JournalMode != "wal" || res.Databases[0].Tables[0].To != 20 || !res.Databases[0].Verified {
		t.Errorf("copy: %+v", res.Databases)
	}
	if got := names(t, to); len(got) != 1 || got[0] != "app.db" {
		t.Errorf("destination holds %v, want [app.db]", got)
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// crashedWAL makes dir/app.db as a crash leaves a WAL database: rows
// committed only to app.db-wal (no checkpoint), no -shm. The files are
// copied while the writer still has them open, as a kill -9 would leave
// them.
func crashedWAL(t *testing.T, dir string, rows int) {
	t.Helper()
	live := filepath.Join(t.TempDir(), "app.db")
	db := testdb.Open(t, live, "wal", 0)
	defer db.Close()
	if _, err := db.Exec("PRAGMA wal_autocheckpoint=0"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < rows; i++ {
		if _, err := db.Exec("insert into t(v) values (?)", strings.Repeat("x", 200)); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"", "-wal"} {
		b, err := os.ReadFile(live + s)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "app.db"+s), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "app.db-wal")); err != nil || fi.Size() == 0 {
		t.Fatalf("app.db-wal: %v, %v; want frames", fi, err)
	}
}

// snapshot returns every entry of dir with its mode, size, modification
// time and bytes.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range names(t, dir) {
		p := filepath.Join(dir, n)
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = fmt.Sprintf("%v %d %v %x", fi.Mode(), fi.Size(), fi.ModTime().UnixNano(), sha256.Sum256(b))
	}
	return out
}

// TestRunLeavesCrashedWALSourceUnchanged migrates a WAL database whose
// committed rows are only in its -wal and that has no -shm (a crash): the
// source directory must keep its listing and every byte (no -shm
// created), and the copy must hold every row of the WAL, checked with
// Debian's sqlite3, with no private directory left in --to.
func TestRunLeavesCrashedWALSourceUnchanged(t *testing.T) {
	bin, err := exec.LookPath("sqlite3")
	if err != nil {
		if testdb.Required() {
			t.Fatal("sqlite3 not installed (CI=true)")
		}
		t.Skip("sqlite3 not installed")
	}
	from := t.TempDir()
	crashedWAL(t, from, 300)
	before := snapshot(t, from)
	to := filepath.Join(t.TempDir(), "volume")
	res, err := migrate.Run(context.Background(), migrate.Options{From: from, To: to, Docker: docker.Options{Mode: docker.ModeOff}, AllowUnverified: true})
	if err != nil {
		t.Fatalf("Run: %v (%+v)", err, res)
	}
	if after := snapshot(t, from); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("Run changed the source:\n got %v\nwant %v", after, before)
	}
	if got := names(t, to); len(got) != 1 || got[0] != "app.db" {
		t.Errorf("destination holds %v, want [app.db]", got)
	}
	if len(res.Databases) != 1 || res.Databases[0].JournalMode != "wal" || res.Databases[0].Tables[0].To != 300 || !res.Databases[0].Verified {
		t.Errorf("copy: %+v", res.Databases)
	}
	out, err := exec.Command(bin, filepath.Join(to, "app.db"), "PRAGMA integrity_check; SELECT count(*) FROM t;").CombinedOutput()
	if err != nil || string(out) != "ok\n300\n" {
		t.Errorf("sqlite3 on the copy: %q, %v; want ok and 300 rows", out, err)
	}
}

// TestRunRefusesSymlinkedWAL: a -wal that is a symlink would be followed
// by SQLite; migrate refuses before it creates --to, and the file the
// symlink names is left as it was.
func TestRunRefusesSymlinkedWAL(t *testing.T) {
	from, elsewhere := t.TempDir(), t.TempDir()
	crashedWAL(t, elsewhere, 10)
	b, err := os.ReadFile(filepath.Join(elsewhere, "app.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(from, "app.db"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(elsewhere, "app.db-wal"), filepath.Join(from, "app.db-wal")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, elsewhere)
	to := filepath.Join(t.TempDir(), "volume")
	_, err = migrate.Run(context.Background(), migrate.Options{From: from, To: to, Docker: docker.Options{Mode: docker.ModeOff}, AllowUnverified: true})
	if !errors.Is(err, migrate.ErrSourceState) || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("Run = %v, want ErrSourceState naming the symlink", err)
	}
	if _, err := os.Lstat(to); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("--to exists after the refusal: %v", err)
	}
	if after := snapshot(t, elsewhere); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the symlink's target changed:\n got %v\nwant %v", after, before)
	}
}
