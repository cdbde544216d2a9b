package preflight_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/docker"
)

func deepCheck(t *testing.T, busy time.Duration, paths ...string) *preflight.Report {
	t.Helper()
	r, err := preflight.Check(context.Background(), preflight.Options{
		Paths:   paths,
		Health:  preflight.HealthOptions{Deep: true, BusyTimeout: busy},
		Writers: preflight.WriterOptions{Docker: docker.Options{Mode: docker.ModeOff}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func finding(r *preflight.Report, id string) *preflight.Finding {
	for i := range r.Findings {
		if r.Findings[i].ID == id {
			return &r.Findings[i]
		}
	}
	return nil
}

// zeroPage overwrites page n (1-based) of the database at path with zeros.
func zeroPage(t *testing.T, path string, n, pageSize int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, pageSize), (n-1)*pageSize); err != nil {
		t.Fatal(err)
	}
}

func rootPage(t *testing.T, path, name string) int64 {
	t.Helper()
	db, err := sql.Open("sqlite", testdb.DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64
	if err := db.QueryRow(`select rootpage from sqlite_master where name = ?`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDeepDamagedIndex: a zeroed index page is rebuildable damage, with the
// exact REINDEX command as the fix.
func TestDeepDamagedIndex(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	db := testdb.Open(t, path, "delete", 0)
	db.Exec(`create index idx_v on t(v)`)
	for i := 0; i < 100; i++ { // the index fits its root page: no orphaned pages
		db.Exec(`insert into t(v) values (?)`, fmt.Sprintf("value %05d", i))
	}
	db.Close()
	zeroPage(t, path, rootPage(t, path, "idx_v"), 4096)

	r := deepCheck(t, 0, dir)
	f := finding(r, "integrity-index")
	if f == nil || f.Level != preflight.LevelWarn {
		t.Fatalf("check --deep of a database with a zeroed index page: findings %v, want integrity-index warn", r.Findings)
	}
	if !strings.Contains(strings.Join(f.Remedy, " "), "REINDEX idx_v") {
		t.Errorf("integrity-index remedy = %q, want REINDEX idx_v", f.Remedy)
	}
	if r.Verdict != preflight.VerdictWarn {
		t.Errorf("verdict %s, want warn", r.Verdict)
	}
}

// TestDeepInterleavedWAL: a WAL with a broken frame followed by valid ones
// is wal-invalid-frames, while integrity of the main file alone passes.
func TestDeepInterleavedWAL(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src.db")
	db := testdb.Open(t, src, "wal", 0)
	db.Exec(`pragma wal_autocheckpoint=0`)
	for i := 0; i < 20; i++ {
		db.Exec(`insert into t(v) values (?)`, strings.Repeat("x", 500))
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	copyFile(t, src, path)
	copyFile(t, src+"-wal", path+"-wal")
	db.Close()

	// Break frame 3's page data; frames 4.. keep valid checksums of their own
	// chain from the stored checksums: what a second writer leaves.
	f, err := os.OpenFile(path+"-wal", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	const frame = 24 + 4096
	if _, err := f.WriteAt([]byte{0xff, 0xee}, 32+2*frame+24+100); err != nil {
		t.Fatal(err)
	}
	f.Close()

	r := deepCheck(t, 0, dir)
	w := finding(r, "wal-invalid-frames")
	if w == nil || w.Level != preflight.LevelError {
		t.Fatalf("check --deep with a broken WAL frame: findings %v, want wal-invalid-frames error", r.Findings)
	}
	if !strings.Contains(w.Message, "breaks at frame 3") {
		t.Errorf("wal-invalid-frames message = %q, want it to name frame 3", w.Message)
	}
}

// TestDeepNeverWaitsOnLock: a rollback-mode database held with an
// EXCLUSIVE lock by another process is reported "not checked" within the
// busy timeout; a WAL database with a writer holding its write lock is
// checked at once.
func TestDeepNeverWaitsOnLock(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("sqlite3 not on PATH")
		}
		t.Skip("sqlite3 not on PATH")
	}
	hold := func(path, sql string) {
		cmd := exec.Command("sqlite3", path)
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
		fmt.Fprintln(in, sql+"\nselect 'held';")
		buf := make([]byte, 5)
		if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "held\n"[:5] {
			t.Fatalf("sqlite3 holder: %q %v", buf, err)
		}
	}
	rb := filepath.Join(t.TempDir(), "rb.db")
	testdb.Make(t, rb, "delete", 100)
	hold(rb, "begin exclusive; insert into t(v) values ('x');")
	start := time.Now()
	r := deepCheck(t, 300*time.Millisecond, rb)
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("check --deep under an EXCLUSIVE lock took %s, want about the 300ms busy timeout", el)
	}
	if f := finding(r, "integrity-not-checked"); f == nil || !strings.Contains(f.Message, "locked") {
		t.Errorf("check --deep under an EXCLUSIVE lock: findings %v, want integrity-not-checked (locked)", r.Findings)
	}

	wal := filepath.Join(t.TempDir(), "wal.db")
	testdb.Make(t, wal, "wal", 100)
	hold(wal, "begin immediate; insert into t(v) values ('x');")
	start = time.Now()
	r = deepCheck(t, time.Second, wal)
	el := time.Since(start)
	t.Logf("check --deep of a WAL database whose write lock is held: %s", el)
	in := r.DataDirs[0].Databases[0].Health.Integrity
	if !in.OK || el > 2*time.Second {
		t.Errorf("check --deep with a WAL writer holding the write lock: ok=%v in %s (%s), want ok at once", in.OK, el, in.Err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
