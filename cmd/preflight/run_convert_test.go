package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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

// A conversion that fails after its backup (here: a damaged table page
// the row count before the conversion reads) is recorded, and the next
// start does not try again, so it makes no second backup; once the backup
// is removed, the next start tries again.
func TestRunConvertFailedOnce(t *testing.T) {
	backing, mnt := fuseData(t, "grpcfuse", false)
	db := filepath.Join(backing, "app.db")
	testdb.Make(t, db, "wal", 500)
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	last := len(b) - 4096 // the last page: a leaf of table t
	b[last] = 0xff        // no b-tree page type
	if err := os.WriteFile(db, b, 0o644); err != nil {
		t.Fatal(err)
	}
	start := func() string {
		t.Helper()
		out, stderr, code, _ := runBin(t, []string{"PREFLIGHT_DOCKER=off"}, "run", "--data-dir", mnt, "--on-unsafe", "convert", "--", "/bin/echo", "started")
		if code != 0 || out != "started\n" {
			t.Fatalf("start: exit %d, stdout %q; want the application started (fallback warn)\nstderr: %s", code, out, stderr)
		}
		return stderr
	}

	stderr := start()
	if !strings.Contains(stderr, "preflight: warn: convert-failed: "+filepath.Join(mnt, "app.db")) || !strings.Contains(stderr, "malformed") {
		t.Errorf("first start: stderr lacks convert-failed (malformed):\n%s", stderr)
	}
	first := backups(t, backing)
	s := readState(t, mnt)
	if len(first) != 1 || len(s.Conversions) != 1 || s.Conversions[0].Failed == "" || filepath.Base(s.Conversions[0].Backup) != first[0] {
		t.Fatalf("after the first start: backups %v, state %+v; want one backup and the failed attempt naming it", first, s.Conversions)
	}

	stderr = start()
	if !strings.Contains(stderr, "convert-refused") || !strings.Contains(stderr, "failed after backing the database up to "+s.Conversions[0].Backup) {
		t.Errorf("second start: stderr lacks the failed-before refusal:\n%s", stderr)
	}
	if got := backups(t, backing); len(got) != 1 {
		t.Errorf("backups after the second start: %v, want still %v", got, first)
	}

	if err := os.RemoveAll(filepath.Join(backing, first[0])); err != nil {
		t.Fatal(err)
	}
	stderr = start()
	if !strings.Contains(stderr, "convert-failed") {
		t.Errorf("third start, the backup removed: stderr lacks another attempt:\n%s", stderr)
	}
	if got := backups(t, backing); len(got) != 1 {
		t.Errorf("backups after the third start: %v, want one new one", got)
	}
}

// mergerfs with cache.files=off (direct I/O: no shared mmap): --probe-fs
// finds fs-mmap-unsupported and check names cache.files=partial, and the
// entrypoint's conversion goes through with the WAL index in memory.
func TestRunConvertWithoutSharedMmap(t *testing.T) {
	backing, mnt := fuseData(t, "mergerfs", true)
	testdb.Make(t, filepath.Join(backing, "app.db"), "wal", 50)
	// The remedy is check's full text; run's log line links to it.
	if out, _, _, _ := runBin(t, []string{"PREFLIGHT_DOCKER=off"}, "check", "--probe-fs", mnt); !strings.Contains(out, "cache.files=partial") {
		t.Errorf("check --probe-fs: stdout lacks cache.files=partial:\n%s", out)
	}
	out, stderr, code, _ := runBin(t, []string{"PREFLIGHT_DOCKER=off"}, "run", "--probe-fs", "--data-dir", mnt, "--on-unsafe", "convert", "--on-unsafe-fallback", "fail", "--", "/bin/echo", "started")
	if code != 0 || out != "started\n" {
		t.Fatalf("run: exit %d, stdout %q; want the application started\nstderr: %s", code, out, stderr)
	}
	for _, want := range []string{"preflight: error: fs-mmap-unsupported: " + mnt, "#fs-mmap-unsupported", "preflight: info: converted: " + filepath.Join(mnt, "app.db"), "locking_mode=EXCLUSIVE"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if h := headerOf(t, filepath.Join(backing, "app.db")); h != "1/1" {
		t.Errorf("header after the start: %s, want 1/1", h)
	}
	if s := readState(t, mnt); len(s.Conversions) != 1 || s.Conversions[0].Failed != "" {
		t.Errorf("state file: %+v, want one conversion", s.Conversions)
	}
}

// bigWAL writes a WAL database of about mb MiB, all of it in its -wal,
// to path (the files copied while the writing connection is open, so the
// -wal stays).
func bigWAL(t *testing.T, path string, mb int) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src.db")
	db, err := sql.Open("sqlite", testdb.DSN(src, "_pragma=journal_mode(WAL)", "_pragma=wal_autocheckpoint(0)"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{`create table t(id integer primary key, v blob)`,
		fmt.Sprintf(`with recursive c(x) as (select 1 union all select x+1 from c where x<%d) insert into t(v) select randomblob(1000) from c`, mb*1000)} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, s := range []string{"", "-wal"} {
		b, err := os.ReadFile(src + s)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+s, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// SIGTERM once the backup is complete (docker stop during the start): the
// attempt is recorded as interrupted, not failed, with absolute paths; the
// next start, from another working directory, converts and reuses that
// backup instead of making a second one.
func TestRunConvertInterrupted(t *testing.T) {
	backing, mnt := fuseData(t, "grpcfuse", false)
	bigWAL(t, filepath.Join(backing, "s.db"), 48)
	cmd := exec.Command(bin, "run", "--data-dir", filepath.Base(mnt), "--on-unsafe", "convert", "--", "/bin/echo", "started")
	cmd.Dir = filepath.Dir(mnt) // a relative --data-dir, as in mnt/sg
	cmd.Env = append(os.Environ(), "PREFLIGHT_DOCKER=off")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	signalled := false
	for !signalled {
		select {
		case err := <-done:
			t.Fatalf("run ended before its backup was complete: %v\nstderr: %s", err, errb.String())
		case <-time.After(time.Millisecond):
		}
		for _, b := range backups(t, backing) {
			if !strings.HasSuffix(b, ".partial") {
				cmd.Process.Signal(syscall.SIGTERM)
				signalled = true
			}
		}
	}
	<-done
	stderr := errb.String()
	if out.Len() != 0 {
		t.Errorf("interrupted start ran the application: %q", out.String())
	}
	if strings.Contains(stderr, "info: converted:") {
		t.Skipf("the conversion finished before SIGTERM arrived:\n%s", stderr)
	}
	if !strings.Contains(stderr, "convert-interrupted") || !strings.Contains(stderr, "interrupted before the journal mode change") && !strings.Contains(stderr, "interrupted after the journal mode change") || strings.Contains(stderr, "convert-failed") {
		t.Errorf("first start: stderr lacks convert-interrupted saying where it stopped:\n%s", stderr)
	}
	s := readState(t, mnt)
	first := backups(t, backing)
	if len(s.Conversions) != 1 || s.Conversions[0].Failed != "" || s.Conversions[0].Interrupted == "" || len(first) != 1 {
		t.Fatalf("after the interrupted start: state %+v, backups %v; want one interrupted attempt, not failed, and one backup", s.Conversions, first)
	}
	c := s.Conversions[0]
	if !filepath.IsAbs(c.Path) || !filepath.IsAbs(c.Backup) || filepath.Base(c.Backup) != first[0] {
		t.Errorf("state paths %q, %q: want both absolute, the backup %s", c.Path, c.Backup, first[0])
	}

	cmd = exec.Command(bin, "run", "--data-dir", mnt, "--on-unsafe", "convert", "--on-unsafe-fallback", "fail", "--", "/bin/echo", "started")
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), "PREFLIGHT_DOCKER=off")
	errb.Reset()
	cmd.Stderr = &errb
	o, err := cmd.Output()
	stderr = errb.String()
	if !strings.Contains(stderr, "reused the backup "+c.Backup) {
		t.Errorf("second start: stderr does not say it reused %s:\n%s", c.Backup, stderr)
	}
	if err != nil || string(o) != "started\n" {
		t.Fatalf("second start: %v, stdout %q; want the application started\nstderr: %s", err, o, stderr)
	}
	if got := backups(t, backing); len(got) != 1 || got[0] != first[0] {
		t.Errorf("backups after the second start: %v, want only %v", got, first)
	}
	if h := headerOf(t, filepath.Join(backing, "s.db")); h != "1/1" {
		t.Errorf("header after the second start %s, want 1/1 (DELETE)", h)
	}
	s = readState(t, mnt)
	if n := len(s.Conversions); n != 2 || s.Conversions[1].Failed != "" || s.Conversions[1].Interrupted != "" || s.Conversions[1].Backup != c.Backup {
		t.Errorf("state after the second start: %+v, want the conversion reusing %s", s.Conversions, c.Backup)
	}
}

// SIGKILL once the backup is complete (an OOM kill, a short docker stop
// grace), twice: nothing records the attempt, yet no start makes a second
// full backup; the next start adopts the one that holds the data as it is.
func TestRunConvertKilledAfterBackup(t *testing.T) {
	backing, mnt := fuseData(t, "grpcfuse", false)
	bigWAL(t, filepath.Join(backing, "s.db"), 48)
	for i := range 2 {
		cmd := exec.Command(bin, "run", "--data-dir", mnt, "--on-unsafe", "convert", "--", "/bin/echo", "started")
		cmd.Env = append(os.Environ(), "PREFLIGHT_DOCKER=off")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
	wait:
		for {
			select {
			case err := <-done:
				t.Skipf("start %d ended (%v) before SIGKILL:\n%s", i+1, err, errb.String())
			case <-time.After(time.Millisecond):
			}
			for _, b := range backups(t, backing) {
				if !strings.HasSuffix(b, ".partial") {
					cmd.Process.Kill()
					break wait
				}
			}
		}
		<-done
		if got := backups(t, backing); len(got) != 1 {
			t.Fatalf("after SIGKILL %d: backups %v, want one", i+1, got)
		}
		if h := headerOf(t, filepath.Join(backing, "s.db")); h == "1/1" {
			t.Skipf("start %d converted before SIGKILL", i+1)
		}
	}
	out, stderr, code, _ := runBin(t, []string{"PREFLIGHT_DOCKER=off"}, "run", "--data-dir", mnt, "--on-unsafe", "convert", "--on-unsafe-fallback", "fail", "--", "/bin/echo", "started")
	if code != 0 || out != "started\n" {
		t.Fatalf("third start: exit %d, stdout %q\nstderr: %s", code, out, stderr)
	}
	if !strings.Contains(stderr, "did not record") {
		t.Errorf("third start: stderr does not say it adopted the unrecorded backup:\n%s", stderr)
	}
	if got := backups(t, backing); len(got) != 1 {
		t.Errorf("backups after three starts, two killed: %v, want one", got)
	}
	if h := headerOf(t, filepath.Join(backing, "s.db")); h != "1/1" {
		t.Errorf("header after the third start %s, want 1/1", h)
	}
}
