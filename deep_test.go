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
		if string(r.Findings[i].ID) == id {
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
	} else if rem := strings.Join(f.Remedy, " "); !strings.Contains(rem, "--busy-timeout") || strings.Contains(rem, "--tmp-dir") {
		t.Errorf("integrity-not-checked remedy when locked = %q, want --busy-timeout and not --tmp-dir", f.Remedy)
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

// leafPages returns the leaf pages of object name, found with dbstat.
func leafPages(t *testing.T, path, name string) []int64 {
	t.Helper()
	db, err := sql.Open("sqlite", testdb.DSN(path, "mode=ro"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`select pageno from dbstat where name = ? and pagetype = 'leaf' order by pageno`, name)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var pg int64
		if err := rows.Scan(&pg); err != nil {
			t.Fatal(err)
		}
		out = append(out, pg)
	}
	if len(out) < 2 {
		t.Fatalf("%s has leaf pages %v, want several", name, out)
	}
	return out
}

// badFragmentation sets the fragmented-bytes count (page header byte 7) of
// b-tree page pg to 60: quick_check says "Fragmentation of 0 bytes reported
// as 60 on page N", naming the page and not its b-tree.
func badFragmentation(t *testing.T, path string, pg int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte{60}, (pg-1)*4096+7); err != nil {
		t.Fatal(err)
	}
}

// TestDeepPageOfIndex: damage reported only by page number on a leaf of
// an index is integrity-index with REINDEX (a warning), not unclassified
// damage with preflight recover; with a table leaf damaged as well, each finding
// states its own damage only.
func TestDeepPageOfIndex(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "i.db")
	db := testdb.Open(t, path, "delete", 0)
	db.Exec(`create index ax on t(v)`)
	db.Exec(`with recursive c(x) as (select 1 union all select x+1 from c where x < 2000)
		insert into t(v) select printf('value %05d', x) from c`)
	db.Close()
	ipg := leafPages(t, path, "ax")[1]
	tpg := leafPages(t, path, "t")[1]
	badFragmentation(t, path, ipg)

	r := deepCheck(t, 0, dir)
	f := finding(r, "integrity-index")
	if f == nil || f.Level != preflight.LevelWarn || finding(r, "integrity-unknown") != nil {
		t.Fatalf("check --deep with index leaf %d damaged: findings %v, want integrity-index warn and no integrity-unknown", ipg, r.Findings)
	}
	if want := fmt.Sprintf("index ax damaged (Fragmentation of 0 bytes reported as 60 on page %d)", ipg); !strings.Contains(f.Message, want) {
		t.Errorf("integrity-index message = %q, want %q", f.Message, want)
	}
	if rem := strings.Join(f.Remedy, " "); !strings.Contains(rem, "REINDEX ax") || strings.Contains(rem, "preflight recover") {
		t.Errorf("integrity-index remedy = %q, want REINDEX ax and no preflight recover", f.Remedy)
	}
	if r.Verdict != preflight.VerdictWarn {
		t.Errorf("verdict %s, want warn", r.Verdict)
	}

	badFragmentation(t, path, tpg)
	r, err := preflight.Check(context.Background(), preflight.Options{
		Paths:   []string{dir},
		Health:  preflight.HealthOptions{Deep: true, Full: true},
		Writers: preflight.WriterOptions{Docker: docker.Options{Mode: docker.ModeOff}},
	})
	if err != nil {
		t.Fatal(err)
	}
	fi, ft := finding(r, "integrity-index"), finding(r, "integrity-table")
	if fi == nil || ft == nil {
		t.Fatalf("check --deep=full with index and table leaves damaged: findings %v, want integrity-index and integrity-table", r.Findings)
	}
	t.Logf("integrity-index: %s\nintegrity-table: %s", fi.Message, ft.Message)
	for _, bad := range []string{"rows at risk", "table t", "REINDEX"} {
		if strings.Contains(fi.Message, bad) {
			t.Errorf("integrity-index message = %q, names other damage (%q)", fi.Message, bad)
		}
	}
	for _, bad := range []string{"index ax", "REINDEX", "unclassified"} {
		if strings.Contains(ft.Message, bad) {
			t.Errorf("integrity-table message = %q, names other damage (%q)", ft.Message, bad)
		}
	}
	if !strings.Contains(ft.Message, fmt.Sprintf("on page %d", tpg)) {
		t.Errorf("integrity-table message = %q, want the message about page %d", ft.Message, tpg)
	}
}

// TestDeepNotCheckedRemedy: integrity-not-checked offers --tmp-dir when
// the private copy could not be made, and only then.
func TestDeepNotCheckedRemedy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	testdb.Make(t, path, "wal", 10) // a WAL database no process has open: checked on a copy
	r, err := preflight.Check(context.Background(), preflight.Options{
		Paths:   []string{path},
		Health:  preflight.HealthOptions{Deep: true, TempDir: filepath.Join(t.TempDir(), "missing")},
		Writers: preflight.WriterOptions{Docker: docker.Options{Mode: docker.ModeOff}},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := finding(r, "integrity-not-checked")
	if f == nil {
		t.Fatalf("check --deep with a missing --tmp-dir: findings %v, want integrity-not-checked", r.Findings)
	}
	if rem := strings.Join(f.Remedy, " "); !strings.Contains(rem, "--tmp-dir") || strings.Contains(rem, "--busy-timeout") {
		t.Errorf("integrity-not-checked remedy for a failed copy = %q, want --tmp-dir and not --busy-timeout", f.Remedy)
	}
}
