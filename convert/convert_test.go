//go:build linux

package convert_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/convert"
	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/docker"
)

var required = os.Getenv("PREFLIGHT_REQUIRE_DOCKER") == "1" || os.Getenv("CI") == "true"

func TestMain(m *testing.M) {
	if os.Getenv(testdb.AppEnv) != "" {
		os.Exit(testdb.AppMain())
	}
	if p := os.Getenv("CONVERT_TEST_HOLD_LOCK"); p != "" {
		holdLock(p)
		return
	}
	os.Exit(m.Run())
}

// holdLock is the helper process: it takes a POSIX read lock on the SHARED
// range of the database at p (as a SQLite connection does), says so on
// stdout and waits for stdin to close.
func holdLock(p string) {
	f, err := os.Open(p)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: io.SeekStart, Start: 0x40000002, Len: 510}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// hotWAL makes path a WAL database whose rows rows are only in its -wal:
// the files are copied while the writer is still connected, as a crash
// leaves them (https://sqlite.org/wal.html#walfile).
func hotWAL(t testing.TB, path string, rows int) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src.db")
	db, err := sql.Open("sqlite", testdb.DSN(src, "_pragma=journal_mode(WAL)", "_pragma=wal_autocheckpoint(0)"))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	defer db.Close()
	mustExec(t, db, `create table t(id integer primary key, v text)`)
	mustExec(t, db, `create index t_v on t(v)`)
	mustExec(t, db, `create table u(k text primary key, n int) without rowid`)
	for i := 0; i < 10; i++ { // ten transactions
		mustExec(t, db, fmt.Sprintf(`with recursive c(x) as (select 1 union all select x+1 from c where x<%d) insert into t(v) select printf('row %%d.%%d', %d, x) from c`, rows/10, i))
		mustExec(t, db, fmt.Sprintf(`insert into u values('k%d', %d)`, i, i))
	}
	for _, s := range []string{"", "-wal"} {
		copyFile(t, src+s, path+s)
	}
}

func mustExec(t testing.TB, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// files returns the bytes of path, -wal, -shm and -journal (nil: absent).
func files(t testing.TB, path string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	for _, s := range []string{"", "-wal", "-shm", "-journal"} {
		b, err := os.ReadFile(path + s)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		m[s] = b
	}
	return m
}

func wantUntouched(t testing.TB, path string, before map[string][]byte) {
	t.Helper()
	after := files(t, path)
	for s, b := range before {
		if !bytes.Equal(b, after[s]) || (b == nil) != (after[s] == nil) {
			t.Errorf("%s%s changed: %d bytes before, %d after", path, s, len(b), len(after[s]))
		}
	}
}

// opts returns options for a host test: Docker off, probes that could not
// run allowed (this machine's PID 1 is unreadable, which makes the process
// probe unsure), a fixed clock.
func opts(paths ...string) convert.Options {
	return convert.Options{
		Paths:           paths,
		Check:           preflight.Options{Writers: preflight.WriterOptions{Docker: docker.Options{Mode: docker.ModeOff}}},
		AllowUnverified: true,
		Now:             func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) },
	}
}

func run(t testing.TB, o convert.Options) *convert.Result {
	t.Helper()
	res, err := convert.Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run(%v): %v", o.Paths, err)
	}
	return res
}

func one(t testing.TB, res *convert.Result, status string) convert.Database {
	t.Helper()
	if len(res.Databases) != 1 {
		t.Fatalf("Run: %d databases, want 1: %+v", len(res.Databases), res.Databases)
	}
	d := res.Databases[0]
	if d.Status != status {
		t.Fatalf("Run(%s): status %q, want %q; error %q, refusals %+v, notes %v", d.Path, d.Status, status, d.Error, d.Refusals, d.Notes)
	}
	return d
}

func sqlite3(t testing.TB, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("sqlite3")
	if err != nil {
		if required {
			t.Fatalf("sqlite3 not found (CI): %v", err)
		}
		t.Skipf("sqlite3 not found: %v", err)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("sqlite3 %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// dumpCopy returns sqlite3's .dump of a copy of path and its -wal, so the
// original is not opened.
func dumpCopy(t testing.TB, path string) string {
	t.Helper()
	cp := filepath.Join(t.TempDir(), "copy.db")
	for _, s := range []string{"", "-wal"} {
		if _, err := os.Stat(path + s); err == nil {
			copyFile(t, path+s, cp+s)
		}
	}
	return sqlite3(t, cp, ".dump")
}

func header1819(t testing.TB, path string) (byte, byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 100 {
		t.Fatalf("read header of %s: %v", path, err)
	}
	return b[18], b[19]
}

func TestConvertHotWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	hotWAL(t, path, 5000)
	before := files(t, path)
	dump := dumpCopy(t, path)

	d := one(t, run(t, opts(path)), convert.StatusConverted)
	if d.Before != "wal" || d.After != "delete" {
		t.Errorf("before/after = %s/%s, want wal/delete", d.Before, d.After)
	}
	if w, r := header1819(t, path); w != 1 || r != 1 {
		t.Errorf("header bytes 18/19 = %d/%d, want 1/1", w, r)
	}
	for _, s := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(path + s); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s%s exists after the conversion (%v)", path, s, err)
		}
	}
	if d.WAL == nil || d.WAL.CommittedTxns < 20 || d.WAL.Discards() {
		t.Errorf("wal report = %+v, want an intact log with every transaction", d.WAL)
	}
	if d.Checkpoint == nil || d.Checkpoint.Busy != 0 || d.Checkpoint.Log == 0 || d.Checkpoint.Log != d.Checkpoint.Checkpointed {
		t.Errorf("checkpoint = %+v, want every frame copied", d.Checkpoint)
	}
	v := d.Verified
	if v == nil || v.JournalMode != "delete" || v.CheckResult != "ok" || !v.SidecarsGone || len(v.Tables) != 2 {
		t.Fatalf("verified = %+v", v)
	}
	if v.Tables[0].Table != "t" || v.Tables[0].Before != 5000 || v.Tables[0].After != 5000 {
		t.Errorf("row counts = %+v, want t 5000", v.Tables)
	}

	// The backup holds the files as they were, byte for byte.
	if d.Backup == nil {
		t.Fatal("no backup")
	}
	wantDir := path + ".preflight-backup-20261129T120000Z"
	if d.Backup.Dir != wantDir {
		t.Errorf("backup dir = %s, want %s", d.Backup.Dir, wantDir)
	}
	for _, s := range []string{"", "-wal"} {
		got, err := os.ReadFile(filepath.Join(d.Backup.Dir, "app.db"+s))
		if err != nil || !bytes.Equal(got, before[s]) {
			t.Errorf("backup of app.db%s differs from the original (%v)", s, err)
		}
	}

	// Debian's sqlite3 agrees.
	if got := strings.TrimSpace(sqlite3(t, path, "PRAGMA journal_mode;")); got != "delete" {
		t.Errorf("sqlite3 PRAGMA journal_mode = %q, want delete", got)
	}
	if got := sqlite3(t, path, ".dump"); got != dump {
		t.Errorf("sqlite3 .dump after the conversion differs from before (%d vs %d bytes)", len(got), len(dump))
	}
	if got := strings.TrimSpace(sqlite3(t, path, "PRAGMA integrity_check;")); got != "ok" {
		t.Errorf("sqlite3 integrity_check = %q", got)
	}

	// Again: already done, nothing touched; a second run makes no backup.
	after := files(t, path)
	d = one(t, run(t, opts(path)), convert.StatusAlready)
	if d.Backup != nil {
		t.Errorf("already-converted run made a backup: %+v", d.Backup)
	}
	wantUntouched(t, path, after)
}

func TestConvertToWALAndBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	testdb.Make(t, path, "delete", 30)
	o := opts(path)
	o.To, o.NoBackup, o.Verify = convert.ToWAL, true, convert.VerifyFull
	d := one(t, run(t, o), convert.StatusConverted)
	if w, r := header1819(t, path); w != 2 || r != 2 || d.Verified.Check != "integrity_check" {
		t.Errorf("after --to wal: header %d/%d, check %s; want 2/2, integrity_check", w, r, d.Verified.Check)
	}
	one(t, run(t, o), convert.StatusAlready)
	o.To = convert.ToDelete
	one(t, run(t, o), convert.StatusConverted)
	if w, r := header1819(t, path); w != 1 || r != 1 {
		t.Errorf("back to delete: header %d/%d", w, r)
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	hotWAL(t, path, 100)
	before := files(t, path)
	o := opts(dir) // a data directory
	o.DryRun = true
	one(t, run(t, o), convert.StatusWouldConvert)
	wantUntouched(t, path, before)
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("dry run left files in %s: %v", dir, ents)
	}
}

// A path with the characters a file: URI must escape.
func TestConvertEscapedPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "we?ird#dir%41")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "a?b#c%25.db")
	hotWAL(t, path, 100)
	d := one(t, run(t, opts(path)), convert.StatusConverted)
	if d.Verified.Tables[0].After != 100 {
		t.Errorf("rows = %+v", d.Verified.Tables)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 2 {
		t.Errorf("files in %s = %v, want the database and its backup only", dir, names)
	}
}

// A path that contains "mode=rw" (the text of the URI parameter) opens
// that database and no other, and a user table whose name starts like
// SQLite's own (sqlitex_t) is counted.
func TestConvertPathWithModeText(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"mode=rw", "mode=ro"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(root, "mode=rw", "t.db")
	hotWAL(t, path, 100)
	// A decoy where a wrong replacement of mode=rw would lead.
	testdb.Make(t, filepath.Join(root, "mode=ro", "t.db"), "delete", 7)
	db, err := sql.Open("sqlite", testdb.DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, `create table sqlitex_t(a); insert into sqlitex_t values (1), (2), (3)`)
	db.Close()
	d := one(t, run(t, opts(path)), convert.StatusConverted)
	got := map[string]int64{}
	for _, tc := range d.Verified.Tables {
		got[tc.Table] = tc.After
	}
	if got["t"] != 100 || got["u"] != 10 || got["sqlitex_t"] != 3 || len(got) != 3 {
		t.Errorf("row counts %v, want t 100, u 10, sqlitex_t 3 and no other table", got)
	}
}

func TestRefuseOpenConnection(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Skip("sqlite3 not found")
	}
	path := filepath.Join(t.TempDir(), "app.db")
	hotWAL(t, path, 100)
	cmd := exec.Command("sqlite3", path)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	fmt.Fprintln(in, "select 'opened', count(*) from t;")
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.HasPrefix(line, "opened") {
		t.Fatalf("sqlite3 answered %q, %v", line, err)
	}
	before := files(t, path)
	d := one(t, run(t, opts(path)), convert.StatusRefused)
	if d.Refusals[0].Reason != "writer" || !strings.Contains(d.Refusals[0].Message, fmt.Sprint(cmd.Process.Pid)) {
		t.Errorf("refusals = %+v, want the sqlite3 process %d", d.Refusals, cmd.Process.Pid)
	}
	if !strings.Contains(strings.Join(d.Refusals[0].Remedy, " "), fmt.Sprintf("kill %d", cmd.Process.Pid)) {
		t.Errorf("remedy = %v, want the command that stops it", d.Refusals[0].Remedy)
	}
	wantUntouched(t, path, before)
	if d.Backup != nil {
		t.Errorf("refused, but a backup was made")
	}
	// No flag overrides a writer that was seen.
	o := opts(path)
	o.Confirmed, o.AcceptWALLoss = true, true
	one(t, run(t, o), convert.StatusRefused)
	wantUntouched(t, path, before)
}

func TestRefuseHeldLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	hotWAL(t, path, 100)
	before := files(t, path)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CONVERT_TEST_HOLD_LOCK="+path)
	in, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	line := make([]byte, 7)
	if _, err := io.ReadFull(stdout, line); err != nil || string(line) != "locked\n" {
		t.Fatalf("lock holder: %q, %v", line, err)
	}
	d := one(t, run(t, opts(path)), convert.StatusRefused)
	found := false
	for _, r := range d.Refusals {
		found = found || r.Reason == "writer" && strings.Contains(r.Message, "shared lock on db")
	}
	if !found {
		t.Errorf("refusals = %+v, want the SHARED lock holder", d.Refusals)
	}
	wantUntouched(t, path, before)
}

// Valid-looking frames after a damaged one: SQLite would drop them.
func TestRefuseWALLoss(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	hotWAL(t, path, 5000)
	b, err := os.ReadFile(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	pageSize := int(binary.BigEndian.Uint32(b[8:]))
	off := 32 + 2*(24+pageSize) + 24 + 100 // page data of frame 3
	b[off] ^= 0xff
	if err := os.WriteFile(path+"-wal", b, 0o644); err != nil {
		t.Fatal(err)
	}
	before := files(t, path)
	d := one(t, run(t, opts(path)), convert.StatusRefused)
	if d.Refusals[0].Reason != "wal-loss" || !strings.Contains(d.Refusals[0].Message, "frame 3") {
		t.Errorf("refusals = %+v, want wal-loss at frame 3", d.Refusals)
	}
	wantUntouched(t, path, before)
	// The suggested command carries the flags this run needed.
	bdir := filepath.Join(t.TempDir(), "backups")
	o := opts(path)
	o.BackupDir = bdir
	d = one(t, run(t, o), convert.StatusRefused)
	want := "preflight convert --backup-dir " + bdir + " --allow-unverified --accept-wal-loss " + path
	if rm := strings.Join(d.Refusals[0].Remedy, " | "); !strings.Contains(rm, want) {
		t.Errorf("wal-loss remedy = %q, want it to contain %q", rm, want)
	}

	o = opts(path)
	o.AcceptWALLoss = true
	d = one(t, run(t, o), convert.StatusConverted)
	got, err := os.ReadFile(filepath.Join(d.Backup.Dir, "app.db-wal"))
	if err != nil || !bytes.Equal(got, before["-wal"]) {
		t.Errorf("the backup does not hold the damaged WAL (%v)", err)
	}
	if len(d.Notes) == 0 || !strings.Contains(strings.Join(d.Notes, " "), "accept-wal-loss") {
		t.Errorf("notes = %v, want the accepted loss", d.Notes)
	}

	o.NoBackup = true
	if _, err := convert.Run(context.Background(), o); !errors.Is(err, convert.ErrBadOptions) {
		t.Errorf("--accept-wal-loss --no-backup: err = %v, want ErrBadOptions", err)
	}
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if required {
			t.Fatal("needs root (CI)")
		}
		t.Skip("needs root to mount tmpfs")
	}
}

func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

func TestBackupDiskFull(t *testing.T) {
	requireRoot(t)
	small := mountTmpfs(t, "1m")
	path := filepath.Join(t.TempDir(), "app.db")
	hotWAL(t, path, 50000) // a few MB
	before := files(t, path)
	o := opts(path)
	o.BackupDir = small
	d := one(t, run(t, o), convert.StatusFailed)
	if !strings.Contains(d.Error, "not enough free space") || !strings.Contains(d.Error, "not touched") {
		t.Errorf("error = %q, want the space check", d.Error)
	}
	wantUntouched(t, path, before)
	if ents, _ := os.ReadDir(small); len(ents) != 0 {
		t.Errorf("backup directory left behind: %v", ents)
	}
}

func TestReadOnlyMount(t *testing.T) {
	requireRoot(t)
	dir := mountTmpfs(t, "16m")
	path := filepath.Join(dir, "app.db")
	hotWAL(t, path, 100)
	before := files(t, path)
	if out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput(); err != nil {
		t.Fatalf("remount ro: %v: %s", err, out)
	}
	d := one(t, run(t, opts(path)), convert.StatusFailed)
	if !strings.Contains(d.Error, "read-only") {
		t.Errorf("error = %q, want read-only", d.Error)
	}
	wantUntouched(t, path, before)
}

func TestHotJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	testdb.Make(t, path, "delete", 10)
	j := make([]byte, 1024)
	copy(j, []byte{0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7})
	binary.BigEndian.PutUint32(j[8:], 1)
	binary.BigEndian.PutUint32(j[20:], 512)
	binary.BigEndian.PutUint32(j[24:], 4096)
	if err := os.WriteFile(path+"-journal", j, 0o644); err != nil {
		t.Fatal(err)
	}
	before := files(t, path)
	d := one(t, run(t, opts(path)), convert.StatusFailed)
	if !strings.Contains(d.Error, "hot rollback journal") || !strings.Contains(strings.Join(d.Hints, " "), "normal read-write open") {
		t.Errorf("error %q, hints %v", d.Error, d.Hints)
	}
	wantUntouched(t, path, before)
}

func TestNotSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	if err := os.WriteFile(path, bytes.Repeat([]byte("not a database "), 100), 0o644); err != nil {
		t.Fatal(err)
	}
	d := one(t, run(t, opts(path)), convert.StatusFailed)
	if !strings.Contains(d.Error, "not a SQLite database") {
		t.Errorf("error = %q", d.Error)
	}
}

func TestRefuseLitestream(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	hotWAL(t, path, 10)
	if err := os.Mkdir(filepath.Join(dir, ".app.db-litestream"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := files(t, path)
	d := one(t, run(t, opts(path)), convert.StatusRefused)
	if d.Refusals[0].Reason != "litestream" || !strings.Contains(d.Refusals[0].Message, "back to WAL") {
		t.Errorf("refusals = %+v", d.Refusals)
	}
	wantUntouched(t, path, before)
}

func TestLitestreamConfig(t *testing.T) {
	cfg := "dbs:\n  - path: /data/app.db\n    replicas:\n      - url: s3://b/app\n"
	for _, tt := range []struct {
		path string
		want bool
	}{{"/data/app.db", true}, {"/data/app", false}, {"/data/other.db", false}} {
		if got := convert.ConfigMentions(strings.NewReader(cfg), tt.path); got != tt.want {
			t.Errorf("ConfigMentions(cfg, %q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

func TestRefuseUnverified(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	hotWAL(t, path, 10)
	before := files(t, path)
	o := opts(path)
	o.AllowUnverified = false
	o.Check.Writers.Docker = docker.Options{Host: "tcp://127.0.0.1:1", Timeout: time.Second}
	d := one(t, run(t, o), convert.StatusRefused)
	if d.Refusals[0].Reason != "unverified" || !strings.Contains(d.Refusals[0].Message, "containers: Docker unreachable") {
		t.Errorf("refusals = %+v", d.Refusals)
	}
	wantUntouched(t, path, before)
	o.AllowUnverified = true
	d = one(t, run(t, o), convert.StatusConverted)
	if !strings.Contains(strings.Join(d.Notes, " "), "Docker unreachable") {
		t.Errorf("notes = %v, want the unverified probe", d.Notes)
	}
}

func TestStateFile(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := convert.Record(dir, convert.Conversion{Path: "/data/a.db", From: "wal", To: "delete", At: at}); err != nil {
		t.Fatal(err)
	}
	if err := convert.Record(dir, convert.Conversion{Path: "/data/b.db", From: "wal", To: "delete", At: at},
		convert.Conversion{Path: "/data/a.db", From: "delete", To: "wal", At: at}); err != nil {
		t.Fatal(err)
	}
	s, err := convert.ReadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.ConvertedToDelete(); len(got) != 1 || got[0] != "/data/b.db" {
		t.Errorf("ConvertedToDelete() = %v, want [/data/b.db]", got)
	}
	got, errs := convert.ConvertedBefore(context.Background(), []string{dir, filepath.Join(t.TempDir(), "x.db")})
	if len(errs) != 0 || len(got) != 1 {
		t.Errorf("ConvertedBefore = %v, %v", got, errs)
	}
	if err := os.WriteFile(filepath.Join(dir, convert.StateFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errs := convert.ConvertedBefore(context.Background(), []string{dir}); len(errs) != 1 {
		t.Errorf("ConvertedBefore on a broken state file: errs %v, want one", errs)
	}
}

func TestDSN(t *testing.T) {
	for in, want := range map[string]string{
		"/data/app.db":   "file:/data/app.db?mode=rw&_pragma=busy_timeout(1000)",
		"/d/a?b#c%20.db": "file:/d/a%3fb%23c%2520.db?mode=rw&_pragma=busy_timeout(1000)",
	} {
		if got := convert.DSN(in); got != want {
			t.Errorf("DSN(%q) = %q, want %q", in, got, want)
		}
	}
}

// An empty database file beside a -wal with frames: SQLite would delete
// the -wal on open. Convert refuses and touches nothing.
func TestWALWithoutDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	hotWAL(t, path, 100)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	before := files(t, path)
	d := one(t, run(t, opts(path)), convert.StatusRefused)
	if len(d.Refusals) != 1 || d.Refusals[0].Reason != "wal-without-database" {
		t.Errorf("refusals = %+v, want wal-without-database", d.Refusals)
	}
	wantUntouched(t, path, before)

	// No database file at all, only its -wal, in a directory.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	before = files(t, path)
	d = one(t, run(t, opts(filepath.Dir(path))), convert.StatusRefused)
	if d.Path != path || len(d.Refusals) != 1 || d.Refusals[0].Reason != "wal-without-database" {
		t.Errorf("directory with a lone -wal: %s refusals %+v, want %s wal-without-database", d.Path, d.Refusals, path)
	}
	wantUntouched(t, path, before)
}

// A schema that names a collation only the application defines (some
// applications register their own): the conversion does not need it, the
// row counts run as usual, and quick_check says it could not run instead
// of failing the conversion.
func TestConvertApplicationCollation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	db, err := sql.Open("sqlite", testdb.DSN(path, "_pragma=journal_mode(WAL)", "_pragma=wal_autocheckpoint(0)"))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	mustExec(t, db, `create table t(a text)`)
	mustExec(t, db, `create index ti on t(a)`)
	mustExec(t, db, `insert into t values ('x'), ('y'), ('z')`)
	// As the application would have created it: the index under its own
	// collation.
	mustExec(t, db, `PRAGMA writable_schema=ON`)
	mustExec(t, db, `update sqlite_schema set sql = 'CREATE INDEX ti ON t(a COLLATE appcoll)' where name = 'ti'`)
	db.Close()

	d := one(t, run(t, opts(path)), convert.StatusConverted)
	if !strings.Contains(d.Verified.CheckResult, "not run") || !strings.Contains(d.Verified.CheckResult, "appcoll") {
		t.Errorf("check result = %q, want not run, naming appcoll", d.Verified.CheckResult)
	}
	if len(d.Verified.Tables) != 1 || d.Verified.Tables[0].Before != 3 || d.Verified.Tables[0].After != 3 {
		t.Errorf("row counts = %+v, want t 3 before and after", d.Verified.Tables)
	}
	if w, r := header1819(t, path); w != 1 || r != 1 {
		t.Errorf("header %d/%d, want 1/1", w, r)
	}
}

// appDB runs this test binary as the application (testdb.AppMain) on
// path: the schema calls a function only that process registers.
func appDB(t testing.TB, path string) {
	t.Helper()
	c := exec.Command(os.Args[0])
	c.Env = append(os.Environ(), testdb.AppEnv+"="+path)
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "app: journal_mode=wal") {
		t.Fatalf("application on %s: %v\n%s", path, err, out)
	}
}

// A schema whose generated column and expression index call a function
// only the application defines: quick_check (generated column) and
// integrity_check (also the index) cannot run outside the application,
// but the conversion does not need the function. The database is
// converted, the check says "not run" and why, and the row counts run.
func TestConvertApplicationFunction(t *testing.T) {
	for _, verify := range []string{convert.VerifyQuick, convert.VerifyFull} {
		path := filepath.Join(t.TempDir(), "app.db")
		appDB(t, path)
		appDB(t, path)
		o := opts(path)
		o.Verify = verify
		d := one(t, run(t, o), convert.StatusConverted)
		want := "not run: the schema uses function myf, which only the application defines"
		if d.Verified.CheckResult != want {
			t.Errorf("--verify %s: check result %q, want %q", verify, d.Verified.CheckResult, want)
		}
		if !strings.Contains(strings.Join(d.Notes, "; "), d.Verified.Check+" "+want) {
			t.Errorf("--verify %s: notes %q, want the check not run", verify, d.Notes)
		}
		if len(d.Verified.Tables) != 1 || d.Verified.Tables[0].Before != 2 || d.Verified.Tables[0].After != 2 {
			t.Errorf("--verify %s: row counts %+v, want app 2 before and after", verify, d.Verified.Tables)
		}
		if w, r := header1819(t, path); w != 1 || r != 1 {
			t.Errorf("--verify %s: header %d/%d, want 1/1", verify, w, r)
		}
		if d.Backup == nil {
			t.Errorf("--verify %s: no backup", verify)
		}
	}
}

// A backup an earlier run began and did not finish (DIR.partial, the
// process killed mid-copy) is removed by the next conversion of that
// database, and said so; complete backups, other databases' partial ones
// and what a symlinked name points to stay.
func TestPartialBackupRemoved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	hotWAL(t, path, 100)
	mk := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "app.db"), []byte("cut short"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	partial := mk("app.db.preflight-backup-20261128T100000Z.partial")
	complete := mk("app.db.preflight-backup-20261128T090000Z")
	other := mk("other.db.preflight-backup-20261128T100000Z.partial")
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "keep"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "app.db.preflight-backup-20261128T110000Z.partial")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}

	d := one(t, run(t, opts(path)), convert.StatusConverted)
	if _, err := os.Lstat(partial); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after the next conversion: %v, want removed", partial, err)
	}
	if !strings.Contains(strings.Join(d.Notes, "; "), "removed "+partial+", a backup an earlier run began and did not finish") {
		t.Errorf("notes %q, want the removal of %s", d.Notes, partial)
	}
	for _, p := range []string{complete, other, filepath.Join(outside, "keep"), link} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: %v, want kept", p, err)
		}
	}
}

// A backup that an interrupted attempt left is reused while it holds the
// data as it is (here: the -wal as it was, or checkpointed into the
// database by a connection's close), and not once a transaction changed
// the database since: then a new backup is made and the old one kept.
func TestReuseBackup(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, path string)
		reuse  bool
	}{
		{"unchanged", func(*testing.T, string) {}, true},
		{"checkpointed on close", func(t *testing.T, path string) { sqlite3(t, path, "PRAGMA quick_check;") }, true},
		{"written since", func(t *testing.T, path string) { sqlite3(t, path, "INSERT INTO u VALUES('new', 1);") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "app.db")
			hotWAL(t, path, 2000)
			old := filepath.Join(dir, "app.db.preflight-backup-20261129T110000Z")
			if err := os.Mkdir(old, 0o700); err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{"", "-wal"} {
				copyFile(t, path+s, filepath.Join(old, "app.db"+s))
			}
			tc.change(t, path)
			o := opts(path)
			o.ReuseBackup = map[string]string{convert.CanonicalPath(path): old}
			d := one(t, run(t, o), convert.StatusConverted)
			if got := d.Backup.Dir == old; got != tc.reuse {
				t.Errorf("backup %s, reused %v; want reused %v (notes %v)", d.Backup.Dir, got, tc.reuse, d.Notes)
			}
			if _, err := os.Stat(old); err != nil {
				t.Errorf("the old backup is gone: %v", err)
			}
		})
	}
}

// State files written before backups were recorded absolute hold a path
// relative to that start's working directory: BackupPath finds it beside
// the database.
func TestBackupPathRelative(t *testing.T) {
	c := convert.Conversion{Path: "/data/sg/s.db", Backup: "mnt/sg/s.db.preflight-backup-20261201T000000Z"}
	if got, want := c.BackupPath(), "/data/sg/s.db.preflight-backup-20261201T000000Z"; got != want {
		t.Errorf("BackupPath() = %q, want %q", got, want)
	}
	c.Backup = "/elsewhere/b"
	if got := c.BackupPath(); got != "/elsewhere/b" {
		t.Errorf("BackupPath() = %q, want the absolute path as it is", got)
	}
}
