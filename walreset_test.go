package preflight_test

import (
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/rules"
)

// sqlite3Make makes path with Debian's sqlite3 in journal mode mode and
// returns the SQLITE_VERSION_NUMBER it stamped at header offset 96.
func sqlite3Make(t *testing.T, path, mode string) uint32 {
	t.Helper()
	if _, err := exec.LookPath("sqlite3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("sqlite3 not on PATH")
		}
		t.Skip("sqlite3 not on PATH: install Debian's sqlite3 to run this test")
	}
	out, err := exec.Command("sqlite3", path, "pragma journal_mode="+mode+"; create table t(a); insert into t values (1);").CombinedOutput()
	if err != nil {
		t.Fatalf("sqlite3 %s: %v\n%s", path, err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return binary.BigEndian.Uint32(b[96:100])
}

// stampVersion writes v as the header's SQLITE_VERSION_NUMBER (offset 96,
// https://sqlite.org/fileformat2.html#database_header) of the file at path.
func stampVersion(t *testing.T, path string, v uint32) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(binary.BigEndian.AppendUint32(nil, v), 96); err != nil {
		t.Fatal(err)
	}
}

// TestCheckWALResetBug: a WAL database made by Debian's sqlite3 (3.40.1,
// affected) gets wal-reset-bug naming the version and the fixes; the
// same file stamped with a fixed version (3.51.3, the 3.50.7 and 3.44.6
// backports) or an affected version of a fixed branch's past gets it or
// not by the version; a rollback-mode database never does.
func TestCheckWALResetBug(t *testing.T) {
	dir := t.TempDir()
	wal := filepath.Join(dir, "wal.db")
	if v := sqlite3Make(t, wal, "wal"); v != 3040001 {
		t.Fatalf("Debian's sqlite3 stamped %d at offset 96, want 3040001 (3.40.1)", v)
	}
	del := filepath.Join(dir, "del.db")
	sqlite3Make(t, del, "delete")
	check := func(path string) *preflight.Report {
		t.Helper()
		r, err := preflight.Check(context.Background(), preflight.Options{Paths: []string{path},
			Writers: preflight.WriterOptions{Docker: docker.Options{Mode: docker.ModeOff}}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	find := func(r *preflight.Report) *preflight.Finding {
		for i := range r.Findings {
			if r.Findings[i].ID == rules.WALResetBug {
				return &r.Findings[i]
			}
		}
		return nil
	}
	f := find(check(wal))
	if f == nil {
		t.Fatal("Check(WAL database written by sqlite3 3.40.1) has no wal-reset-bug finding")
	}
	for _, want := range []string{"SQLite 3.40.1", "3.51.3", "3.50.7", "3.44.6"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("wal-reset-bug message %q does not name %s", f.Message, want)
		}
	}
	if f.Level != preflight.LevelWarn {
		t.Errorf("wal-reset-bug level %s, want warn", f.Level)
	}
	if rem := strings.Join(f.Remedy, " "); !strings.Contains(rem, "Upgrade") || !strings.Contains(rem, "one connection") || !strings.Contains(rem, "DELETE") {
		t.Errorf("wal-reset-bug remedy %q: want upgrade, one connection and DELETE mode", rem)
	}
	if f := find(check(del)); f != nil {
		t.Errorf("Check(rollback database written by 3.40.1) = %q, want no wal-reset-bug", f.Message)
	}
	for _, tt := range []struct {
		v        uint32
		affected bool
	}{
		{3007000, true}, {3044005, true}, {3044006, false}, {3045000, true},
		{3050006, true}, {3050007, false}, {3051002, true}, {3051003, false}, {3053003, false},
		{3006023, false},
	} {
		stampVersion(t, wal, tt.v)
		if got := find(check(wal)) != nil; got != tt.affected {
			t.Errorf("Check(WAL database stamped %d): wal-reset-bug %v, want %v", tt.v, got, tt.affected)
		}
	}
}
