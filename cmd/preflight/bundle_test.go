//go:build linux

package main

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/bundle"
	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/locks"
)

// readBundle reads the tar.gz at path back: file name -> content.
func readBundle(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("bundle %s is not gzip: %v", path, err)
	}
	tr := tar.NewReader(gz)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("bundle %s: %v", path, err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(h.Name, bundle.Dir+"/")] = string(b)
	}
}

// TestBundle: preflight bundle over a live WAL database whose -wal holds
// a row with a unique string, opened by sqlite3 (as uid 1000, through a
// symlink outside the data directory, when root): the archive read back
// holds the version, the mount table, check --deep as JSON and text, the
// database and WAL headers with the frame summary, the lock holder and
// the container facts, and nowhere the row; with --redact, no user
// name and no path outside the data directory, and placeholders stable
// across files.
func TestBundle(t *testing.T) {
	testdb.NeedSQLite3(t)
	root := t.TempDir()
	data := filepath.Join(root, "data")
	outside := filepath.Join(root, "outside-dir")
	os.Chmod(filepath.Dir(root), 0o755) // t.TempDir makes 0700 directories: let uid 1000 through
	os.Chmod(root, 0o755)
	for _, d := range []string{data, outside} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, 0o777)
	}
	db := filepath.Join(data, "app.db")
	if out, err := exec.Command("sqlite3", db, "pragma journal_mode=wal; create table t(a); insert into t values (1);").CombinedOutput(); err != nil {
		t.Fatalf("sqlite3: %v\n%s", err, out)
	}
	os.Chmod(db, 0o666)
	link := filepath.Join(outside, "link.db")
	if err := os.Symlink(db, link); err != nil {
		t.Fatal(err)
	}
	var wrapper []string
	who := ""
	if u, err := user.LookupId("1000"); err == nil && os.Getuid() == 0 {
		if setpriv, err := exec.LookPath("setpriv"); err == nil {
			wrapper, who = []string{setpriv, "--reuid", "1000", "--regid", "1000", "--clear-groups"}, u.Username
		}
	}
	s := testdb.StartSQLite3(t, link, wrapper...)
	const secret = "ROW-DATA-7f3c9e1a-never-in-a-bundle"
	s.Send(t, "pragma wal_autocheckpoint=0; insert into t values ('"+secret+"'); begin; select count(*) from t;")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		res, _ := locks.Probe(db)
		b, _ := os.ReadFile(db + "-wal") // the row is in the -wal only, which the bundle must not copy
		if strings.Contains(string(b), secret) && len(res.Locks) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sqlite3 did not write the row to the -wal and hold a lock within 10s")
		}
	}

	for _, redact := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "b.tar.gz")
		args := []string{"bundle", "--docker", "off", "-o", out, data}
		if redact {
			args = append(args, "--redact")
		}
		stdout, stderr, code := runMain(t, args...)
		if code != 0 || stdout != "" || !strings.Contains(stderr, "wrote "+out) {
			t.Fatalf("preflight %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, stdout, stderr)
		}
		files := readBundle(t, out)
		for _, name := range []string{"README.txt", "version.json", "mounts.txt", "check.json", "check.txt", "databases/01.json", "locks.json", "container.json"} {
			if _, ok := files[name]; !ok {
				t.Errorf("bundle (redact %v) has no %s; it has %v", redact, name, keys(files))
			}
		}
		all := strings.Join(values(files), "\n")
		if strings.Contains(all, secret) {
			t.Errorf("bundle (redact %v) holds the row data %q", redact, secret)
		}
		var h bundle.DatabaseHeaders
		if err := json.Unmarshal([]byte(files["databases/01.json"]), &h); err != nil {
			t.Fatalf("databases/01.json: %v", err)
		}
		if !strings.HasPrefix(h.HeaderHex, "53514c69746520666f726d6174203300") || len(h.HeaderHex) != 200 || h.LibraryVersion != "3.40.1" ||
			len(h.WALHeaderHex) != 64 || h.WAL == nil || h.WAL.ValidFrames == 0 || h.WAL.CommittedTxns == 0 {
			t.Errorf("databases/01.json = %s; want the 100-byte header (SQLite 3.40.1), the 32-byte WAL header and its frames", files["databases/01.json"])
		}
		if !strings.Contains(files["check.txt"], "integrity (quick_check") || !strings.Contains(files["check.json"], `"schema": "preflight/v1"`) {
			t.Errorf("check.txt / check.json are not check --deep:\n%s", files["check.txt"])
		}
		if !strings.Contains(files["locks.json"], `"role": "wal-read"`) || !strings.Contains(files["mounts.txt"], " - ") {
			t.Errorf("locks.json or mounts.txt missing their facts:\n%s\n%s", files["locks.json"], files["mounts.txt"])
		}
		if !redact {
			if !strings.Contains(all, outside) || who != "" && !strings.Contains(all, "user "+who) {
				t.Errorf("bundle without --redact does not name %s and user %q: the redaction test would prove nothing", outside, who)
			}
			continue
		}
		if strings.Contains(all, outside) || who != "" && strings.Contains(all, who) {
			t.Errorf("bundle --redact still names %s or user %q", outside, who)
		}
		if !strings.Contains(files["check.txt"], data) || !strings.Contains(files["check.txt"], "/redacted-path-") {
			t.Errorf("bundle --redact check.txt: want the data directory kept and placeholders:\n%s", files["check.txt"])
		}
		// The same path gets the same placeholder in every file: the
		// holder's command line in check.json and locks.json.
		var lh []struct {
			Holders []struct {
				Cmdline string `json:"cmdline"`
			} `json:"lock_holders"`
		}
		if err := json.Unmarshal([]byte(files["locks.json"]), &lh); err != nil || len(lh) != 1 || len(lh[0].Holders) != 1 {
			t.Fatalf("locks.json: %v\n%s", err, files["locks.json"])
		}
		cmd := lh[0].Holders[0].Cmdline
		if !strings.HasPrefix(cmd, "sqlite3 /redacted-path-") || !strings.Contains(files["check.json"], `"cmdline": "`+cmd+`"`) {
			t.Errorf("holder command line %q: want a placeholder, the same in check.json", cmd)
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func values(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
