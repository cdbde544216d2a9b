package main

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// TestCheckDeepRecoverRemedy: check --deep's remedy for a damaged table
// names preflight recover; the command, run as printed (with the probe
// flags this sandbox needs), writes the recovered file and exits 5, rows
// having been lost with the zeroed leaf.
func TestCheckDeepRecoverRemedy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	testdb.Make(t, path, "delete", 2000)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(make([]byte, 4096), 4*4096) // page 5, a leaf of t
	f.Close()
	out, stderr, code := runMain(t, "check", "--deep", "--docker", "off", "--format", "json", path)
	r := decodeReport(t, out)
	var cmd string
	for _, f := range r.Findings {
		for _, rem := range f.Remedy {
			if i := strings.Index(rem, "preflight recover "); i >= 0 && f.ID == "integrity-table" {
				cmd = strings.TrimRight(rem[i:], ".;")
			}
		}
	}
	if cmd == "" {
		t.Fatalf("check --deep on a zeroed leaf: exit %d, findings %v; want integrity-table naming preflight recover\n%s", code, findingIDs(r), stderr)
	}
	args := strings.Fields(cmd)[1:]
	if want := []string{"recover", path, "--to", path + ".recovered"}; strings.Join(args, " ") != strings.Join(want, " ") {
		t.Fatalf("remedy %q, want preflight %s", cmd, strings.Join(want, " "))
	}
	_, stderr, code = runMain(t, append(args, "--docker", "off", "--allow-unverified")...)
	if code != exitLoss {
		t.Fatalf("%s: exit %d, want %d (rows lost)\n%s", cmd, code, exitLoss, stderr)
	}
	db, err := sql.Open("sqlite", testdb.DSN(path+".recovered", "mode=ro"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil || n < 1500 || n >= 2000 {
		t.Errorf("%s: %d rows recovered (%v), want most of the 2000 but not those of the zeroed leaf", cmd, n, err)
	}
}

// TestRecoverReplaceSymlinkExit: --replace of a symlinked source is bad
// input (exit 2), the link left in place.
func TestRecoverReplaceSymlinkExit(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.db")
	db, err := sql.Open("sqlite", testdb.DSN(real, ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE t(x); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	link := filepath.Join(dir, "app.db")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runMain(t, "recover", link, "--replace", "--docker", "off", "--allow-unverified")
	if code != exitUsage {
		t.Errorf("recover --replace of a symlink: exit %d, want %d\n%s", code, exitUsage, stderr)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("%s is no longer the symlink: %v", link, err)
	}
}
