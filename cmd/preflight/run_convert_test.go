package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/convert"
	"github.com/preflight-sqlite/preflight/internal/fuseloop"
	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// fuseData mounts a FUSE loopback of a new backing directory under name
// (with direct I/O when direct) and returns the backing directory and the
// mountpoint.
func fuseData(t *testing.T, name string, direct bool) (backing, mnt string) {
	t.Helper()
	testdb.NeedFUSE(t)
	backing, mnt = t.TempDir(), t.TempDir()
	mount := fuseloop.Mount
	if direct {
		mount = fuseloop.MountDirectIO
	}
	unmount, err := mount(backing, mnt, name)
	if err != nil {
		t.Fatalf("mount %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := unmount(); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	return backing, mnt
}

// backups lists the backup directories (complete or not) in dir.
func backups(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.Contains(e.Name(), ".preflight-backup-") {
			out = append(out, e.Name())
		}
	}
	return out
}

func readState(t *testing.T, dir string) convert.State {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, convert.StateFile))
	if err != nil {
		t.Fatalf("state file: %v", err)
	}
	var s convert.State
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("state file: %v\n%s", err, b)
	}
	return s
}

// The entrypoint over a grpcfuse share, with an application whose schema
// calls a function only it defines (a generated column and an expression
// index): the conversion stands with quick_check "not run", the state file
// records it, the application starts (and turns WAL back on), and the next
// start makes no second backup: it says wal-reenabled.
func TestRunConvertApplicationFunction(t *testing.T) {
	backing, mnt := fuseData(t, "grpcfuse", false)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	app := []string{testdb.AppEnv + "=" + filepath.Join(mnt, "app.db"), "PREFLIGHT_DOCKER=off"}
	seed := exec.Command(self)
	seed.Env = append(os.Environ(), app...)
	if out, err := seed.CombinedOutput(); err != nil {
		t.Fatalf("seeding the database: %v, %s", err, out)
	}
	if h := headerOf(t, filepath.Join(backing, "app.db")); h != "2/2" {
		t.Fatalf("seeded header %s, want 2/2", h)
	}

	out, stderr, code, _ := runBin(t, app, "run", "--data-dir", mnt, "--on-unsafe", "convert", "--on-unsafe-fallback", "fail", "--", self)
	if code != 0 || !strings.Contains(out, "app: journal_mode=wal rows=2") {
		t.Fatalf("first start: exit %d, stdout %q, want 0 and the application started\nstderr: %s", code, out, stderr)
	}
	for _, want := range []string{"preflight: info: converted: " + filepath.Join(mnt, "app.db"), "quick_check not run: the schema uses function myf, which only the application defines"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("first start: stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "convert-failed") {
		t.Errorf("first start: a conversion that succeeded reported failed:\n%s", stderr)
	}
	s := readState(t, mnt)
	if len(s.Conversions) != 1 || s.Conversions[0].To != "delete" || s.Conversions[0].Failed != "" || !strings.Contains(s.Conversions[0].Verified, "quick_check not run") {
		t.Errorf("state file after the first start: %+v, want one conversion to delete, quick_check not run", s.Conversions)
	}
	if b := backups(t, backing); len(b) != 1 {
		t.Errorf("backups after the first start: %v, want one", b)
	}

	// The application turned WAL back on; the next start does not convert
	// (nor back up) again.
	_, stderr, code, _ = runBin(t, app, "run", "--data-dir", mnt, "--on-unsafe", "convert", "--", self)
	if code != 0 || !strings.Contains(stderr, "wal-reenabled") || !strings.Contains(stderr, "convert-refused") {
		t.Errorf("second start: exit %d, want 0 with wal-reenabled and convert-refused:\n%s", code, stderr)
	}
	if b := backups(t, backing); len(b) != 1 {
		t.Errorf("backups after the second start: %v, want still one", b)
	}
}

func headerOf(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 100 {
		t.Fatalf("read header of %s: %v", path, err)
	}
	return string(rune('0'+b[18])) + "/" + string(rune('0'+b[19]))
}
