package main

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/convert"
	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// cliWALDatabase has Debian's sqlite3 create dir/name in WAL mode, commit
// one single-row transaction per statement (one frame each), and copy the
// database and its -wal while the connection is still open, so the copies
// hold a hot WAL. It skips the test when sqlite3 is missing, unless CI=true.
func cliWALDatabase(t *testing.T, dir, name string, stmts ...string) string {
	t.Helper()
	sqlite3, err := exec.LookPath("sqlite3")
	if err != nil {
		skipOrFail(t, "sqlite3 command-line shell not found (install the sqlite3 package): "+err.Error())
	}
	src := filepath.Join(t.TempDir(), "src.db")
	path := filepath.Join(dir, name)
	script := strings.Join(append(append([]string{
		"PRAGMA journal_mode=WAL;",
		"PRAGMA wal_autocheckpoint=0;",
		"CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);",
		"PRAGMA wal_checkpoint(TRUNCATE);",
	}, stmts...),
		".shell cp "+src+" "+path,
		".shell cp "+src+"-wal "+path+"-wal",
	), "\n")
	cmd := exec.Command(sqlite3, src)
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sqlite3 %s: %v\n%s", src, err, out)
	}
	return path
}

// damageWAL overwrites 4 bytes at offset off of frame i (1-based) of
// path's -wal with v.
func damageWAL(t *testing.T, path string, i, off int, v uint32) {
	t.Helper()
	b, err := os.ReadFile(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	pageSize := int(binary.BigEndian.Uint32(b[8:]))
	binary.BigEndian.PutUint32(b[32+(i-1)*(24+pageSize)+off:], v)
	if err := os.WriteFile(path+"-wal", b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshotFiles reads path and its -wal, -shm and -journal (nil when absent).
func snapshotFiles(t *testing.T, path string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	for _, s := range []string{"", "-wal", "-shm", "-journal"} {
		b, err := os.ReadFile(path + s)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		m[s] = b
	}
	return m
}

func wantSameFiles(t *testing.T, path string, before map[string][]byte) {
	t.Helper()
	for s, b := range snapshotFiles(t, path) {
		if !bytes.Equal(b, before[s]) {
			t.Errorf("%s%s changed (%d bytes, was %d)", path, s, len(b), len(before[s]))
		}
	}
}

// A three-frame WAL, three committed transactions, whose frame 2 is
// broken: check --deep reports the two transactions SQLite would drop and
// convert refuses, whether the break is a zeroed checksum word or zeroed
// salts.
func TestDeepBrokenFrameBeforeCommit(t *testing.T) {
	for _, tt := range []struct {
		name   string
		off    int // in the frame header
		reason string
	}{
		{"checksum word zeroed", 16, "checksum mismatch"},
		{"salt-1 zeroed", 8, "salt mismatch"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := cliWALDatabase(t, dir, "app.db",
				"INSERT INTO t(v) VALUES ('a');", "INSERT INTO t(v) VALUES ('b');", "INSERT INTO t(v) VALUES ('c');")
			damageWAL(t, path, 2, tt.off, 0)
			before := snapshotFiles(t, path)

			out, stderr, code := runMain(t, "check", "--deep", "--docker", "off", "--format", "json", dir)
			r := decodeReport(t, out)
			var msg string
			for _, f := range r.Findings {
				if f.ID == "wal-invalid-frames" && f.Level == "error" {
					msg = f.Message
				}
			}
			if code != exitUnsafe || msg == "" {
				t.Fatalf("check --deep, frame 2 %s: exit %d, findings %v; want %d with wal-invalid-frames\n%s", tt.name, code, findingIDs(r), exitUnsafe, stderr)
			}
			if want := "breaks at frame 2 (" + tt.reason + "), and 1 valid-looking frame with 1 commit follows"; !strings.Contains(msg, want) {
				t.Errorf("wal-invalid-frames message %q, want it to contain %q", msg, want)
			}

			out, stderr, code = runMain(t, "convert", "--docker", "off", "--allow-unverified", "--format", "json", path)
			var res convert.Result
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("convert --format json: %v\n%s\n%s", err, out, stderr)
			}
			if code != exitUnsafe || len(res.Databases) != 1 || res.Databases[0].Status != convert.StatusRefused ||
				len(res.Databases[0].Refusals) == 0 || res.Databases[0].Refusals[0].Reason != "wal-loss" {
				t.Errorf("convert, frame 2 %s: exit %d, %+v; want %d, refused for wal-loss\n%s", tt.name, code, res.Databases, exitUnsafe, stderr)
			}
			wantSameFiles(t, path, before)
		})
	}
}

// A torn last transaction (its frame cut short by a crash) is what SQLite's
// recovery exists for: check --deep stays quiet about the WAL.
func TestDeepTornLastTransaction(t *testing.T) {
	dir := t.TempDir()
	path := cliWALDatabase(t, dir, "app.db",
		"INSERT INTO t(v) VALUES ('a');", "INSERT INTO t(v) VALUES ('b');", "INSERT INTO t(v) VALUES (hex(randomblob(6000)));")
	b, err := os.ReadFile(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	pageSize := int(binary.BigEndian.Uint32(b[8:]))
	frames := (len(b) - 32) / (24 + pageSize)
	if frames < 4 {
		t.Fatalf("sqlite3 WAL has %d frames, want a last transaction of 2 or more", frames)
	}
	// The last transaction's first frame (frame 3) is half written, the file
	// ends there.
	end := 32 + 3*(24+pageSize)
	clear(b[end-pageSize/2 : end])
	if err := os.WriteFile(path+"-wal", b[:end], 0o644); err != nil {
		t.Fatal(err)
	}
	// Debian's sqlite3 (3.40.1) has the WAL-reset bug: that warning is
	// walreset.txtar's, not this test's.
	out, stderr, code := runMain(t, "check", "--deep", "--docker", "off", "--ignore", "wal-reset-bug", "--format", "json", dir)
	r := decodeReport(t, out)
	for _, f := range r.Findings {
		if strings.HasPrefix(string(f.ID), "wal-") && f.ID != "wal-reset-bug" {
			t.Errorf("check --deep with a torn last transaction: finding %s %s: %s\n%s", f.ID, f.Level, f.Message, stderr)
		}
	}
	if code != exitOK {
		t.Errorf("check --deep with a torn last transaction: exit %d, findings %v; want %d", code, findingIDs(r), exitOK)
	}
}

// Frames of an older generation after the current ones (the log restarted
// after a checkpoint) are wal-stale, info: nothing is lost.
func TestDeepStaleWAL(t *testing.T) {
	dir := t.TempDir()
	path := cliWALDatabase(t, dir, "app.db",
		"INSERT INTO t(v) VALUES ('a');", "INSERT INTO t(v) VALUES ('b');", "INSERT INTO t(v) VALUES ('c');",
		"PRAGMA wal_checkpoint(RESTART);", "INSERT INTO t(v) VALUES ('d');")
	// Debian's sqlite3 (3.40.1) has the WAL-reset bug: --ignore makes that
	// warning info, so that the exit code is the WAL chain's.
	out, stderr, code := runMain(t, "check", "--deep", "--docker", "off", "--ignore", "wal-reset-bug", "--format", "json", dir)
	r := decodeReport(t, out)
	if code != exitOK || strings.Join(findingIDs(r), ",") != "wal-reset-bug:info,wal-stale:info" {
		t.Errorf("check --deep %s with a restarted WAL: exit %d, findings %v; want %d, [wal-reset-bug:info wal-stale:info]\n%s", path, code, findingIDs(r), exitOK, stderr)
	}
}

// driverWALDatabase makes dir/name with the Go driver in WAL mode with
// rows rows of 1000 bytes, no checkpoint, and copies the database and its
// -wal while the connection is open.
func driverWALDatabase(t *testing.T, dir, name string, rows int) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src.db")
	db := testdb.Open(t, src, "wal", 0)
	defer db.Close()
	if _, err := db.Exec("PRAGMA wal_autocheckpoint=0"); err != nil {
		t.Fatal(err)
	}
	for range rows {
		if _, err := db.Exec("insert into t(v) values (hex(randomblob(500)))"); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, name)
	for _, s := range []string{"", "-wal"} {
		b, err := os.ReadFile(src + s)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+s, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// zeroFirstPage zero-fills the first 4096 bytes of path.
func zeroFirstPage(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, 4096), 0); err != nil {
		t.Fatal(err)
	}
}

// A database whose first page was zero-filled, with hundreds of KB of
// frames in its -wal, is a damaged database, whatever its name: check
// says so as an error and describes the -wal, convert refuses it, and no
// file changes.
func TestDamagedHeaderWithWAL(t *testing.T) {
	for _, name := range []string{"app.sqlite", "store"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := driverWALDatabase(t, dir, name, 60)
			zeroFirstPage(t, path)
			walBytes, err := os.ReadFile(path + "-wal")
			if err != nil {
				t.Fatal(err)
			}
			frames := (len(walBytes) - 32) / (24 + 4096)
			if len(walBytes) < 200<<10 {
				t.Fatalf("-wal of %d bytes, want 200 KB or more", len(walBytes))
			}
			before := snapshotFiles(t, path)

			out, stderr, code := runMain(t, "check", "--docker", "off", "--format", "json", dir)
			r := decodeReport(t, out)
			ids := strings.Join(findingIDs(r), ",")
			if code != exitUnsafe || !strings.Contains(ids, "db-header-damaged:error") || strings.Contains(ids, "not-sqlite") {
				t.Fatalf("check %s with a zeroed first page: exit %d, findings %v; want %d, db-header-damaged and no not-sqlite\n%s", name, code, ids, exitUnsafe, stderr)
			}
			var msg string
			for _, f := range r.Findings {
				if f.ID == "db-header-damaged" {
					msg = f.Message
				}
			}
			for _, want := range []string{
				"all zero",
				fmt.Sprintf("holds %d frames of 4096-byte pages", frames),
				"with 61 committed transactions", // the CREATE TABLE and 60 inserts
				"Page 1, with the database header, is in frame",
			} {
				if !strings.Contains(msg, want) {
					t.Errorf("db-header-damaged message %q, want it to contain %q", msg, want)
				}
			}
			if name == "app.sqlite" {
				checkpointCopyRepairs(t, path)
			}

			out, stderr, code = runMain(t, "convert", "--docker", "off", "--allow-unverified", "--format", "json", path)
			var res convert.Result
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("convert --format json: %v\n%s\n%s", err, out, stderr)
			}
			if code != exitUnsafe || len(res.Databases) != 1 || res.Databases[0].Status != convert.StatusRefused ||
				len(res.Databases[0].Refusals) == 0 || res.Databases[0].Refusals[0].Reason != "db-header-damaged" {
				t.Errorf("convert %s with a zeroed first page: exit %d, %+v; want %d, refused for db-header-damaged\n%s", name, code, res.Databases, exitUnsafe, stderr)
			}
			wantSameFiles(t, path, before)
			entries, _ := os.ReadDir(dir)
			if len(entries) != 2 {
				t.Errorf("after check and convert, %s holds %d entries, want the database and its -wal", dir, len(entries))
			}
		})
	}
}

// A .db file in another program's format, alone, stays not-sqlite (warn).
func TestNotSQLiteOtherFormat(t *testing.T) {
	dir := t.TempDir()
	page := make([]byte, 4096)
	binary.LittleEndian.PutUint32(page[16:], 0xED0CDAED) // a bbolt meta page
	if err := os.WriteFile(filepath.Join(dir, "bolt.db"), page, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code := runMain(t, "check", "--docker", "off", "--format", "json", dir)
	r := decodeReport(t, out)
	if ids := strings.Join(findingIDs(r), ","); code != exitWarn || ids != "not-sqlite:warn" {
		t.Errorf("check with a bbolt bolt.db: exit %d, findings %v; want %d, [not-sqlite:warn]", code, ids, exitWarn)
	}
}

// run does not start the application over a damaged database with a -wal,
// whatever --on-unsafe says.
func TestRunRefusesDamagedHeader(t *testing.T) {
	dir := t.TempDir()
	path := driverWALDatabase(t, dir, "app.sqlite", 5)
	zeroFirstPage(t, path)
	before := snapshotFiles(t, path)
	out, stderr, code, _ := runBin(t, nil, "run", "--docker", "off", "--data-dir", dir, "--", "/bin/echo", "started")
	if code != exitUnsafe || strings.Contains(out, "started") || !strings.Contains(stderr, "start-refused") {
		t.Errorf("run over a zero-filled first page with a -wal: exit %d, stdout %q, stderr %q; want %d, not started", code, out, stderr, exitUnsafe)
	}
	wantSameFiles(t, path, before)
}

// A .db of random bytes alone (an encrypted database looks the same) is
// db-header-damaged at warn level; convert still refuses it.
func TestDamagedHeaderUnknownBytes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "vault.db")
	b := make([]byte, 8192)
	for i := range b {
		b[i] = byte(i*131 + i/7) // no zeros run, no known magic
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code := runMain(t, "check", "--docker", "off", "--format", "json", dir)
	r := decodeReport(t, out)
	if ids := strings.Join(findingIDs(r), ","); code != exitWarn || ids != "db-header-damaged:warn" {
		t.Errorf("check with a vault.db of unknown bytes: exit %d, findings %v; want %d, [db-header-damaged:warn]", code, ids, exitWarn)
	}
	out, stderr, code := runMain(t, "convert", "--docker", "off", "--allow-unverified", "--format", "json", path)
	var res convert.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("convert --format json: %v\n%s\n%s", err, out, stderr)
	}
	if code != exitUnsafe || len(res.Databases) != 1 || res.Databases[0].Status != convert.StatusRefused {
		t.Errorf("convert vault.db of unknown bytes: exit %d, %+v; want %d, refused", code, res.Databases, exitUnsafe)
	}
}

// checkpointCopyRepairs follows db-header-damaged's remedy for a -wal that
// holds page 1, on copies of path and its -wal: a checkpoint writes the
// header back, quick_check passes and every row is there.
func checkpointCopyRepairs(t *testing.T, path string) {
	t.Helper()
	cp := filepath.Join(t.TempDir(), filepath.Base(path))
	for _, s := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + s)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cp+s, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", testdb.DSN(cp))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var busy, log, done, rows int
	var ok string
	if err := db.QueryRow("PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &log, &done); err != nil {
		t.Fatalf("checkpoint of the copy: %v", err)
	}
	if err := db.QueryRow("PRAGMA quick_check").Scan(&ok); err != nil || ok != "ok" {
		t.Errorf("quick_check of the checkpointed copy = %q, %v; want ok", ok, err)
	}
	if err := db.QueryRow("select count(*) from t").Scan(&rows); err != nil || rows != 60 {
		t.Errorf("rows in the checkpointed copy = %d, %v; want 60", rows, err)
	}
	b, err := os.ReadFile(cp)
	if err != nil || !bytes.HasPrefix(b, []byte("SQLite format 3\x00")) {
		t.Errorf("checkpointed copy does not start with the SQLite header (%v)", err)
	}
}
