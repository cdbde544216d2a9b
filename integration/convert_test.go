package integration_test

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// dbFiles returns the bytes of path, -wal, -shm and -journal (nil: absent).
func dbFiles(t *testing.T, path string) map[string][]byte {
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

func wantSameFiles(t *testing.T, path string, before map[string][]byte) {
	t.Helper()
	after := dbFiles(t, path)
	for s, b := range before {
		if !bytes.Equal(b, after[s]) || (b == nil) != (after[s] == nil) {
			t.Errorf("%s%s changed: %d bytes before, %d after", path, s, len(b), len(after[s]))
		}
	}
}

func headerBytes(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 100 {
		t.Fatalf("read header of %s: %v", path, err)
	}
	return fmt.Sprintf("%d/%d", b[18], b[19])
}

func requireSQLite3(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("sqlite3"); err != nil {
		if required {
			t.Fatalf("sqlite3 not found (PREFLIGHT_REQUIRE_DOCKER=1 or CI=true): %v", err)
		}
		t.Skipf("sqlite3 not found: %v", err)
	}
}

// idleApp starts the demo app on data (a docker run -v source) holding
// /data/app.db open in WAL mode without writing, and waits for it.
func idleApp(t *testing.T, opts ...string) string {
	t.Helper()
	id := startApp(t, append(opts, "-e", "DEMO_INTERVAL=1h", "--entrypoint", "/demoapp", image)...)
	waitLog(t, id, "demoapp: pid=1 journal_mode=wal")
	return id
}

// A writer in another container on the same data, converted from the
// host: refused, the container and the command that stops it named, every
// byte of the database, -wal and -shm as it was.
func TestConvertRefusesOtherContainer(t *testing.T) {
	requireDocker(t)
	dir := hostDir(t)
	seed(t, "-v", dir+":/data")
	name := containerName(t, "app")
	idleApp(t, "--name", name, "-v", dir+":/data")
	path := filepath.Join(dir, "app.db")
	before := dbFiles(t, path)
	if before["-shm"] == nil {
		t.Fatalf("the idle app has no -shm: not a live WAL connection")
	}
	pf := filepath.Join(binDir, "preflight")
	r := run(t, dockerTimeout, nil, pf, "convert", path)
	wantCode(t, r, 3)
	wantContains(t, "stdout", r.stdout, "refused, nothing changed")
	wantContains(t, "stdout", r.stdout, "container "+name)
	wantContains(t, "stdout", r.stdout, "docker stop "+name)
	wantContains(t, "stderr", r.stderr, "preflight: error: convert: refused")
	wantSameFiles(t, path, before)

	// No flag overrides a writer that was seen.
	r = run(t, dockerTimeout, nil, pf, "convert", "--allow-unverified", "--yes", "--accept-wal-loss", "--format", "json", path)
	wantCode(t, r, 3)
	wantContains(t, "json", r.stdout, `"reason": "writer"`)
	wantSameFiles(t, path, before)
}

// The docker exec refusal inside the application's own container, and
// the compose stop / run / start recipe it prints, run for real against
// the demo app, as printed: on a local directory, and on a FUSE share
// (Docker Desktop's grpcfuse), where the one-off convert, without a
// terminal, needs the recipe's --yes.
func TestConvertDockerExecRecipe(t *testing.T) {
	requireDocker(t)
	if _, err := dockerCmd(t.Context(), "compose", "version"); err != nil {
		if required {
			t.Fatalf("docker compose not available (build it per .ci/run): %v", err)
		}
		t.Skipf("docker compose not available: %v", err)
	}
	t.Run("local", func(t *testing.T) {
		dir := hostDir(t)
		testComposeRecipe(t, dir, dir, "", "local")
	})
	t.Run("grpcfuse", func(t *testing.T) {
		backing, mnt := grpcfuseDir(t)
		testComposeRecipe(t, mnt, backing, " --yes", "cross-vm")
	})
}

// testComposeRecipe runs the demo app as a compose service on host
// directory src (whose files are in dir), refuses convert inside it, and
// runs the printed recipe, whose convert has flags yes.
func testComposeRecipe(t *testing.T, src, dir, yes, class string) {
	t.Helper()
	seed(t, "-v", src+":/data")
	project := "pfit" + runID + strings.ToLower(strings.ReplaceAll(t.Name(), "/", ""))
	cf := filepath.Join(t.TempDir(), "compose.yaml")
	// The app itself, not through preflight run: on the share it would
	// follow PREFLIGHT_JOURNAL_MODE=delete and leave WAL by itself.
	yaml := fmt.Sprintf(`services:
  app:
    image: %s
    entrypoint: ["/demoapp"]
    user: "0:0"
    environment:
      DEMO_INTERVAL: 1h
    labels:
      %s: "%s"
    volumes:
      - %s:/data
      - %s:%s
`, image, strings.Split(label, "=")[0], strings.Split(label, "=")[1], src, dockerSocket, dockerSocket)
	if err := os.WriteFile(cf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	compose := func(args ...string) result {
		t.Helper()
		return docker(t, append([]string{"compose", "-p", project, "-f", cf}, args...)...)
	}
	t.Cleanup(func() { compose("down", "-v", "--remove-orphans") })
	wantCode(t, compose("up", "-d"), 0)
	id := strings.TrimSpace(compose("ps", "-q", "app").stdout)
	waitLog(t, id, "demoapp: pid=1 journal_mode=wal")
	path := filepath.Join(dir, "app.db")
	before := dbFiles(t, path)

	r := compose("exec", "-T", "app", "/preflight", "convert", "/data/app.db")
	wantCode(t, r, 3)
	wantContains(t, "stdout", r.stdout, "/data/app.db: refused, nothing changed")
	wantContains(t, "stdout", r.stdout, "writer: process 1 (/demoapp")
	wantContains(t, "stdout", r.stdout, "Convert it from outside the container:")
	recipe := recipeLines(r.stdout)
	// The project and its files come from the container's compose labels,
	// so the recipe reaches this project from any directory.
	dc := "docker compose -p " + project + " -f " + cf
	want := []string{
		dc + " stop app",
		dc + " run --rm --no-deps --entrypoint /preflight app convert" + yes + " /data/app.db",
		dc + " start app",
	}
	if strings.Join(recipe, "\n") != strings.Join(want, "\n") {
		t.Fatalf("recipe = %q, want %q\n%s", recipe, want, r)
	}
	if yes != "" {
		wantContains(t, "stdout", r.stdout, "(/data/app.db is on a "+class+" filesystem, whose other side")
	}
	wantSameFiles(t, path, before)

	// The recipe, exactly as printed, from another directory.
	for i, l := range recipe {
		cmd := exec.Command("sh", "-c", l)
		cmd.Dir = t.TempDir()
		out, err := cmd.CombinedOutput()
		r := result{stdout: string(out)}
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		wantCode(t, r, 0)
		if i == 1 {
			wantOneOffNotes(t, r.stdout, project+"-app-1")
			wantContains(t, "convert stdout", r.stdout, "/data/app.db: converted wal -> delete ("+class+" filesystem)")
			wantContains(t, "convert stdout", r.stdout, "quick_check ok")
			if h := headerBytes(t, path); h != "1/1" {
				t.Errorf("header bytes 18/19 after the one-off convert = %s, want 1/1", h)
			}
			for _, s := range []string{"-wal", "-shm"} {
				if _, err := os.Stat(path + s); err == nil {
					t.Errorf("%s%s exists after the conversion", path, s)
				}
			}
		}
	}
	waitLog(t, id, "demoapp: pid=1 journal_mode=")
}

// recipeLines are the commands of convert's outside recipe in its text
// output, as printed (the indented lines after the recipe's heading that
// start with docker).
func recipeLines(stdout string) []string {
	_, after, _ := strings.Cut(stdout, "Convert it from outside the container:\n")
	var out []string
	for _, l := range strings.Split(after, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "docker ") {
			out = append(out, l)
		}
	}
	return out
}

// The entrypoint policy over a FUSE mount named grpcfuse: converted before
// exec, the application started, the state file written; when the
// application turns WAL back on, the next start logs wal-reenabled.
func TestConvertEntrypointPolicy(t *testing.T) {
	requireDocker(t)
	backing, mnt := grpcfuseDir(t)
	opts := []string{"-v", mnt + ":/data"}
	seed(t, opts...)
	db := filepath.Join(backing, "app.db")
	if h := headerBytes(t, db); h != "2/2" {
		t.Fatalf("seeded header %s, want 2/2 (WAL)", h)
	}
	start := func(env ...string) result {
		t.Helper()
		args := append([]string{}, opts...)
		for _, e := range env {
			args = append(args, "-e", e)
		}
		args = append(args, "-e", "DEMO_ROWS=1", "--entrypoint", "/preflight", image,
			"run", "--data-dir", "/data", "--on-unsafe", "convert", "--", "/demoapp")
		r := dockerRun(t, args...)
		wantCode(t, r, 0)
		return r
	}

	r := start()
	wantContains(t, "stderr", r.stderr, "preflight: error: wal-on-cross-vm: /data/app.db")
	wantContains(t, "stderr", r.stderr, "preflight: info: converted: /data/app.db: converted from WAL to journal_mode=DELETE before starting the application (cross-vm filesystem")
	wantContains(t, "stdout", r.stdout, "demoapp: pid=1 journal_mode=delete db=/data/app.db")
	if h := headerBytes(t, db); h != "1/1" {
		t.Errorf("header after the first start = %s, want 1/1", h)
	}
	state, err := os.ReadFile(filepath.Join(backing, ".preflight-state.json"))
	if err != nil || !bytes.Contains(state, []byte(`"path": "/data/app.db"`)) || !bytes.Contains(state, []byte(`"to": "delete"`)) {
		t.Fatalf("state file: %v\n%s", err, state)
	}
	wantNotContains(t, "stderr", r.stderr, "wal-reenabled")

	// The application ignores the recommendation and turns WAL back on.
	r = start("DEMO_JOURNAL_MODE=wal")
	wantContains(t, "stdout", r.stdout, "demoapp: pid=1 journal_mode=wal")
	wantNotContains(t, "stderr", r.stderr, "wal-reenabled")
	if h := headerBytes(t, db); h != "2/2" {
		t.Fatalf("header after the app re-enabled WAL = %s, want 2/2", h)
	}

	r = start()
	// One short line with the finding's page; check has the full text
	// (the application must read PREFLIGHT_JOURNAL_MODE, --export-env).
	wantContains(t, "stderr", r.stderr, "preflight: error: wal-reenabled: /data/app.db: WAL mode again after a conversion (https://preflight-sqlite.github.io/preflight/reference/findings/#wal-reenabled)")
	// Not converted again: the application would only switch it back, and
	// every conversion keeps a backup.
	wantContains(t, "stderr", r.stderr, "preflight: warn: convert-refused: /data/app.db: not converted: converted at an earlier start and in WAL mode again")
	wantNotContains(t, "stderr", r.stderr, "preflight: info: converted:")

	// --on-unsafe-fallback fail: a writer behind the share refuses the
	// conversion and the start (with no history in the state file).
	if err := os.Remove(filepath.Join(backing, ".preflight-state.json")); err != nil {
		t.Fatal(err)
	}
	r = start("DEMO_JOURNAL_MODE=wal")
	cmd, _ := startHostProcess(t, []string{"DATA_DIR=" + backing, "DEMO_INTERVAL=50ms"}, nil, filepath.Join(binDir, "demoapp"))
	_ = cmd
	time.Sleep(500 * time.Millisecond)
	args := append(append([]string{}, opts...), "--entrypoint", "/preflight", image,
		"run", "--data-dir", "/data", "--on-unsafe", "convert", "--on-unsafe-fallback", "fail", "--", "/demoapp")
	r = dockerRun(t, args...)
	wantCode(t, r, 3)
	wantContains(t, "stderr", r.stderr, "preflight: error: convert-refused: /data/app.db")
	wantContains(t, "stderr", r.stderr, "start-refused")
	wantNotContains(t, "stdout", r.stdout, "demoapp: pid=")
}

// crashFixture makes a WAL database of about walMB MiB of -wal whose rows
// are only in the log (copied while the writer was connected) and returns
// the directory holding app.db and app.db-wal, and the expected
// "count|sum(id)|sum(length(v))".
func crashFixture(t *testing.T, walMB int) (string, string) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src.db")
	db, err := sql.Open("sqlite", testdb.DSN(src, "_pragma=journal_mode(WAL)", "_pragma=wal_autocheckpoint(0)"))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	defer db.Close()
	exec1 := func(q string) {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec1("create table t(id integer primary key, v text)")
	exec1("create index t_v on t(substr(v, 1, 16))")
	rows := walMB * 1000
	for i := 0; i < 20; i++ { // 20 transactions
		exec1(fmt.Sprintf(`with recursive c(x) as (select 1 union all select x+1 from c where x<%d) insert into t(v) select printf('%%d.%%d ', %d, x) || hex(randomblob(500)) from c`, rows/20, i))
	}
	var want string
	if err := db.QueryRow(`select count(*) || '|' || sum(id) || '|' || sum(length(v)) from t`).Scan(&want); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, s := range []string{"", "-wal"} {
		if err := copyFile(src+s, filepath.Join(dir, "app.db"+s)); err != nil {
			t.Fatal(err)
		}
	}
	return dir, want
}

func copyDB(t *testing.T, from, to string) {
	t.Helper()
	for _, s := range []string{"", "-wal", "-shm", "-journal"} {
		os.Remove(to + s)
		if _, err := os.Stat(from + s); err == nil {
			if err := copyFile(from+s, to+s); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// checkWithSQLite3 opens path with Debian's sqlite3: integrity_check ok
// and the rows want.
func checkWithSQLite3(t *testing.T, path, want string) error {
	out, err := exec.Command("sqlite3", path, "PRAGMA integrity_check; select count(*) || '|' || sum(id) || '|' || sum(length(v)) from t;").CombinedOutput()
	if err != nil {
		return fmt.Errorf("sqlite3: %v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "ok\n"+want {
		return fmt.Errorf("sqlite3 says %q, want %q", got, "ok\n"+want)
	}
	return nil
}

// checkWithDriver does the same through the pure-Go driver.
func checkWithDriver(path, want string) error {
	db, err := sql.Open("sqlite", testdb.DSN(path, "mode=rw"))
	if err != nil {
		return err
	}
	defer db.Close()
	var ic, got string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&ic); err != nil {
		return fmt.Errorf("driver integrity_check: %w", err)
	}
	if err := db.QueryRow(`select count(*) || '|' || sum(id) || '|' || sum(length(v)) from t`).Scan(&got); err != nil {
		return fmt.Errorf("driver count: %w", err)
	}
	if ic != "ok" || got != want {
		return fmt.Errorf("driver: integrity_check %q, rows %q; want ok, %q", ic, got, want)
	}
	return nil
}

// TestConvertCrash stops the conversion (the built preflight binary) at
// random moments within its measured run time, on a database with a 30
// MiB WAL of known committed rows. SIGKILL (subtest SIGKILL, without a
// backup): after every kill a copy of the files opens with Debian's
// sqlite3 and with the driver, integrity_check ok and every committed row
// there; then convert runs again on the killed files and must finish the
// job. SIGINT and SIGTERM (subtests of those names, with the backup):
// the process exits 128 plus the signal's number, the same checks hold,
// before the journal mode change the database is still WAL and no
// .partial backup is left, after it the report says whether the
// verification finished. PREFLIGHT_CRASH_KILLS sets the number of kills
// (default 20; scripts/crash-test.sh runs 200), PREFLIGHT_CRASH_SIGNALS
// the number of each other signal (default 3; scripts/signal-test.sh
// runs 50).
func TestConvertCrash(t *testing.T) {
	requireBinaries(t)
	requireSQLite3(t)
	kills, signals := crashCount(t, "PREFLIGHT_CRASH_KILLS", 20), crashCount(t, "PREFLIGHT_CRASH_SIGNALS", 3)
	tmpl, want := crashFixture(t, 30)
	fi, _ := os.Stat(filepath.Join(tmpl, "app.db-wal"))
	t.Logf("fixture: -wal %d bytes, rows %s", fi.Size(), want)
	c := crashRun{pf: filepath.Join(binDir, "preflight"), tmpl: tmpl, want: want}
	t.Run("SIGKILL", func(t *testing.T) { c.kills(t, kills) })
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(signalName(sig), func(t *testing.T) { c.signals(t, sig, signals) })
	}
}

// crashCount is the number in the environment variable env, or def.
func crashCount(t *testing.T, env string, def int) int {
	t.Helper()
	s := os.Getenv(env)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a number, 0 or more", env, s)
	}
	return n
}

func signalName(sig syscall.Signal) string {
	if sig == syscall.SIGINT {
		return "SIGINT"
	}
	return "SIGTERM"
}

// crashRun is the binary and the fixture TestConvertCrash stops.
type crashRun struct {
	pf, tmpl, want string
}

// measure copies the fixture to db and times one conversion with args.
func (c crashRun) measure(t *testing.T, db string, args []string) time.Duration {
	t.Helper()
	copyDB(t, filepath.Join(c.tmpl, "app.db"), db)
	start := time.Now()
	if out, err := exec.Command(c.pf, args...).CombinedOutput(); err != nil {
		t.Fatalf("convert: %v\n%s", err, out)
	}
	return time.Since(start)
}

// checkFiles opens copies of db (each SQLite on its own copy: opening
// recovers and may change the files) with Debian's sqlite3 and with the
// driver: integrity_check ok and every committed row there.
func (c crashRun) checkFiles(t *testing.T, db, check, what string) {
	t.Helper()
	copyDB(t, db, check)
	if err := checkWithSQLite3(t, check, c.want); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	copyDB(t, db, check)
	if err := checkWithDriver(check, c.want); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// again runs convert (args) on db once more, which must finish the job,
// and checks the result with sqlite3; it returns whether a hot journal
// had to be recovered first.
func (c crashRun) again(t *testing.T, db string, args []string, what string) bool {
	t.Helper()
	hot := false
	out, err := exec.Command(c.pf, args...).CombinedOutput()
	if err != nil && bytes.Contains(out, []byte("hot rollback journal")) {
		// The kill interrupted SQLite's own rollback-mode commit of the
		// header change: do what the hint says, then convert again.
		hot = true
		if o, err := exec.Command("sqlite3", db, "PRAGMA quick_check;").CombinedOutput(); err != nil {
			t.Fatalf("%s: recover: %v\n%s", what, err, o)
		}
		out, err = exec.Command(c.pf, args...).CombinedOutput()
	}
	if err != nil {
		t.Fatalf("%s: convert again: %v\n%s", what, err, out)
	}
	if h := headerBytes(t, db); h != "1/1" {
		t.Fatalf("%s: header %s after convert again, want 1/1", what, h)
	}
	if mode, _ := exec.Command("sqlite3", db, "PRAGMA journal_mode;").Output(); strings.TrimSpace(string(mode)) != "delete" {
		t.Fatalf("%s: journal_mode %q after convert again", what, mode)
	}
	if err := checkWithSQLite3(t, db, c.want); err != nil {
		t.Fatalf("%s: after convert again: %v", what, err)
	}
	return hot
}

// kills SIGKILLs n conversions without a backup.
func (c crashRun) kills(t *testing.T, n int) {
	work := t.TempDir()
	db := filepath.Join(work, "app.db")
	check := filepath.Join(t.TempDir(), "check.db")
	args := []string{"convert", "--docker", "off", "--allow-unverified", "--no-backup", db}
	full := c.measure(t, db, args)
	t.Logf("one conversion of the fixture takes %v", full.Round(time.Millisecond))
	var killed, finished, hotJournals int
	for i := 0; i < n; i++ {
		copyDB(t, filepath.Join(c.tmpl, "app.db"), db)
		delay := time.Duration(rand.Int64N(int64(full)))
		cmd := exec.Command(c.pf, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGKILL)
		werr := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			killed++
		} else {
			finished++
			if werr != nil {
				t.Fatalf("kill %d: convert exited on its own with %v", i, werr)
			}
		}
		what := fmt.Sprintf("kill %d after %v", i, delay)
		c.checkFiles(t, db, check, what)
		if c.again(t, db, args, what) {
			hotJournals++
		}
	}
	t.Logf("%d runs: %d killed mid-run, %d had finished before the kill; %d left a hot journal", n, killed, finished, hotJournals)
	fmt.Fprintf(os.Stderr, "crash test: %d runs, %d killed mid-run, %d finished first, %d hot journals; conversion time %v\n", n, killed, finished, hotJournals, full.Round(time.Millisecond))
}

// signalStats counts where the signals of TestConvertCrash landed.
type signalStats struct {
	// early: the process died of the signal, which came before Go's
	// handler was installed (nothing had started). before: stopped
	// before the journal mode change (withBackup: its backup was
	// complete and stays). cut: stopped after it, the verification not
	// finished; verified: after it, the verification finished. finished:
	// the conversion was done before the signal.
	early, before, withBackup, cut, verified, finished int
}

// signals sends sig to n conversions with a backup, each at a random
// moment within the measured run time, and checks each outcome.
func (c crashRun) signals(t *testing.T, sig syscall.Signal, n int) {
	work := t.TempDir()
	db := filepath.Join(work, "app.db")
	check := filepath.Join(t.TempDir(), "check.db")
	args := []string{"convert", "--docker", "off", "--allow-unverified", db}
	full := c.measure(t, db, args)
	var st signalStats
	for i := 0; i < n; i++ {
		clearDir(t, work)
		copyDB(t, filepath.Join(c.tmpl, "app.db"), db)
		delay := time.Duration(rand.Int64N(int64(full)))
		what := fmt.Sprintf("%s %d after %v", signalName(sig), i, delay)
		cmd := exec.Command(c.pf, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		cmd.Process.Signal(sig)
		cmd.Wait()
		c.outcome(t, &st, work, db, cmd.ProcessState, sig, stdout.String(), stderr.String(), what)
		c.checkFiles(t, db, check, what)
		c.again(t, db, []string{"convert", "--docker", "off", "--allow-unverified", "--no-backup", db}, what)
	}
	t.Logf("%d runs: %+v", n, st)
	fmt.Fprintf(os.Stderr, "signal test: %s: %d runs: %d before the journal mode change (%d with their complete backup kept, the rest with none), %d after it with the verification cut short, %d after it verified, %d finished first, %d before the handler; conversion time %v; integrity_check ok and every row after each\n",
		signalName(sig), n, st.before, st.withBackup, st.cut, st.verified, st.finished, st.early, full.Round(time.Millisecond))
}

// outcome checks what a conversion stopped by sig left in work (db and
// its backups) against its exit and report (stdout; stderr when it was
// stopped before it had one), and counts it.
func (c crashRun) outcome(t *testing.T, st *signalStats, work, db string, ps *os.ProcessState, sig syscall.Signal, stdout, stderr, what string) {
	t.Helper()
	what += "\nstdout: " + stdout + "\nstderr: " + stderr
	var partial, complete int
	ents, _ := os.ReadDir(work)
	for _, e := range ents {
		switch {
		case strings.HasSuffix(e.Name(), ".partial"):
			partial++
		case strings.Contains(e.Name(), ".preflight-backup-"):
			complete++
		}
	}
	if partial > 0 {
		t.Fatalf("%s: %d .partial backups left, want none", what, partial)
	}
	h := headerBytes(t, db)
	ws, _ := ps.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled() && h == "2/2" && complete == 0:
		st.early++
	case ps.ExitCode() == 0 && h == "1/1" && strings.Contains(stdout, "verified: journal_mode delete"):
		st.finished++
	case ps.ExitCode() != 128+int(sig):
		t.Fatalf("%s: exit %d (header %s), want %d", what, ps.ExitCode(), h, 128+int(sig))
	case h == "2/2" && (strings.Contains(stdout, "interrupted before the journal mode change") || stdout == ""):
		st.before++
		if complete > 0 {
			st.withBackup++
		}
	case h == "1/1" && strings.Contains(stdout, "interrupted after the journal mode change") && strings.Contains(stdout, "its verification "):
		st.cut++
	case h == "1/1" && strings.Contains(stdout, "verified: journal_mode delete"):
		st.verified++
	default:
		t.Fatalf("%s: header %s and a report that does not say where the conversion stopped", what, h)
	}
}

// clearDir removes every entry of dir.
func clearDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

// The exit codes of convert, by running the binary: 0 converted or
// already, 1 failed, 2 usage, 3 refused (above).
func TestConvertExitCodes(t *testing.T) {
	requireBinaries(t)
	pf := filepath.Join(binDir, "preflight")
	dir := t.TempDir()
	db := filepath.Join(dir, "app.db")
	testdb.Make(t, db, "wal", 10)
	base := []string{"convert", "--docker", "off", "--allow-unverified"}
	r := run(t, dockerTimeout, nil, pf, append(base, "--format", "json", db)...)
	wantCode(t, r, 0)
	wantContains(t, "json", r.stdout, `"schema": "preflight-convert/v1"`)
	wantContains(t, "json", r.stdout, `"status": "converted"`)
	wantContains(t, "json", r.stdout, `"check_result": "ok"`)
	r = run(t, dockerTimeout, nil, pf, append(base, db)...)
	wantCode(t, r, 0)
	wantContains(t, "stdout", r.stdout, "already delete: nothing to do")

	r = run(t, dockerTimeout, nil, pf, append(base, "--no-backup", "--accept-wal-loss", db)...)
	wantCode(t, r, 2)
	r = run(t, dockerTimeout, nil, pf, "--mountinfo", "/proc/self/mountinfo", "convert", db)
	wantCode(t, r, 2)
	r = run(t, dockerTimeout, nil, pf, append(base, "--to", "memory", db)...)
	wantCode(t, r, 2)

	bad := filepath.Join(dir, "bad.db")
	if err := os.WriteFile(bad, bytes.Repeat([]byte("x"), 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, dockerTimeout, nil, pf, append(base, bad)...)
	wantCode(t, r, 1)
	wantContains(t, "stdout", r.stdout, "not a SQLite database")
	wantContains(t, "stderr", r.stderr, "preflight: error: convert: a conversion failed")
}

// TestConvertBackupKilled: a backup cut short by SIGKILL stays in a
// directory named *.partial; a directory under the final name always
// holds every file at its full size.
func TestConvertBackupKilled(t *testing.T) {
	requireBinaries(t)
	requireSQLite3(t)
	tmpl, _ := crashFixture(t, 30)
	pf := filepath.Join(binDir, "preflight")
	var sizes = map[string]int64{}
	for _, s := range []string{"app.db", "app.db-wal"} {
		fi, err := os.Stat(filepath.Join(tmpl, s))
		if err != nil {
			t.Fatal(err)
		}
		sizes[s] = fi.Size()
	}
	partials, completes := 0, 0
	for i := 0; i < 8; i++ {
		work := t.TempDir()
		db := filepath.Join(work, "app.db")
		copyDB(t, filepath.Join(tmpl, "app.db"), db)
		cmd := exec.Command(pf, "convert", "--docker", "off", "--allow-unverified", db)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(10+i*15) * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		ents, _ := os.ReadDir(work)
		for _, e := range ents {
			if !strings.Contains(e.Name(), ".preflight-backup-") {
				continue
			}
			if strings.HasSuffix(e.Name(), ".partial") {
				partials++
				continue
			}
			completes++
			for name, size := range sizes {
				fi, err := os.Stat(filepath.Join(work, e.Name(), name))
				if err != nil || fi.Size() != size {
					t.Errorf("kill %d: backup %s: %s is %v (err %v), want %d bytes: an incomplete backup under the final name", i, e.Name(), name, fi, err, size)
				}
			}
		}
	}
	t.Logf("8 kills: %d backups cut short (.partial), %d complete", partials, completes)
}

// The docker exec refusal inside a plain container (no compose labels)
// whose data is on a FUSE share (Docker Desktop's grpcfuse): the stop /
// run --volumes-from / start recipe it prints, run as printed through sh
// -c without a terminal, converts the database. The one-off convert has
// no terminal to confirm on, so the recipe passes --yes and the output
// says above it what that confirms.
func TestConvertPlainContainerRecipe(t *testing.T) {
	requireDocker(t)
	backing, mnt := grpcfuseDir(t)
	opts := []string{"-v", mnt + ":/data"}
	seed(t, opts...)
	id := idleApp(t, append(opts, "--user", "0:0", "-v", dockerSocket+":"+dockerSocket)...)
	name := strings.TrimPrefix(strings.TrimSpace(docker(t, "inspect", "-f", "{{.Name}}", id).stdout), "/")
	path := filepath.Join(backing, "app.db")
	before := dbFiles(t, path)

	r := docker(t, "exec", id, "/preflight", "convert", "/data/app.db")
	wantCode(t, r, 3)
	wantContains(t, "stdout", r.stdout, "writer: process 1 (/demoapp")
	wantContains(t, "stdout", r.stdout, "(/data/app.db is on a cross-vm filesystem, whose other side (the host behind a VM share, other network clients) no probe sees: the --yes below confirms that nothing there has it open")
	wantContains(t, "stderr", r.stderr, "preflight: hint: read before the recipe: /data/app.db is on a cross-vm filesystem")
	recipe := recipeLines(r.stdout)
	want := []string{
		"docker stop " + name,
		"docker run --rm --volumes-from " + name + " --user 0:0 --entrypoint /preflight " + image + " convert --yes /data/app.db",
		"docker start " + name,
	}
	if strings.Join(recipe, "\n") != strings.Join(want, "\n") {
		t.Fatalf("recipe = %q, want %q\n%s", recipe, want, r)
	}
	wantContains(t, "stderr", r.stderr, "convert from outside: "+strings.Join(recipe, " ; "))
	wantSameFiles(t, path, before)
	runRecipe(t, id, name, path, recipe, "/data/app.db: converted wal -> delete (cross-vm filesystem)")
}

// runRecipe runs each line of a convert recipe with sh -c, as printed: each
// succeeds, the one-off prints converted, the database at path (on the
// host) is in rollback mode after it, and the application (container id)
// starts again. The one-off says once that an application that sets WAL
// turns it on again; when it reaches the engine (app, the application's
// name, is set), it names the stopped application as the one it runs for,
// not as a second writer to remove.
func runRecipe(t *testing.T, id, app, path string, recipe []string, converted string) {
	t.Helper()
	for i, l := range recipe {
		r := run(t, dockerTimeout, nil, "sh", "-c", l)
		wantCode(t, r, 0)
		if i == 1 {
			wantOneOffNotes(t, r.stdout, app)
			wantContains(t, "convert stdout", r.stdout, converted)
			if h := headerBytes(t, path); h != "1/1" {
				t.Errorf("header bytes 18/19 after the one-off convert = %s, want 1/1", h)
			}
		}
	}
	waitLog(t, id, "demoapp: pid=1 journal_mode=")
}

// wantOneOffNotes checks the notes of the recipe's one-off convert (see
// runRecipe).
func wantOneOffNotes(t *testing.T, stdout, app string) {
	t.Helper()
	if n := strings.Count(stdout, "note: an application that sets journal_mode=WAL itself turns WAL on again at its next start (wal-reenabled)"); n != 1 {
		t.Errorf("one-off convert stdout holds the wal-reenabled note %d times, want once:\n%s", n, stdout)
	}
	if strings.Contains(stdout, "second writer") || strings.Contains(stdout, "docker rm") {
		t.Errorf("one-off convert stdout calls the application a second writer:\n%s", stdout)
	}
	if app != "" {
		wantContains(t, "convert stdout", stdout, "container "+app+" (")
		wantContains(t, "convert stdout", stdout, "it is the application this one-off runs for (")
	}
}

// plainRecipe starts the idle demo app in a plain container with opts (a
// host directory at /data) and returns its convert recipe, from inside,
// checked against the one-off line want (NAME and IMAGE replaced), and the
// container.
func plainRecipe(t *testing.T, dir, want string, opts ...string) (recipe []string, id, name string) {
	t.Helper()
	seed(t, "-v", dir+":/data")
	id = idleApp(t, append([]string{"-v", dir + ":/data"}, opts...)...)
	name = strings.TrimPrefix(strings.TrimSpace(docker(t, "inspect", "-f", "{{.Name}}", id).stdout), "/")
	r := docker(t, "exec", id, "/preflight", "convert", "/data/app.db")
	wantCode(t, r, 3)
	recipe = recipeLines(r.stdout)
	want = strings.NewReplacer("NAME", name, "IMAGE", image).Replace(want)
	if len(recipe) != 3 || recipe[0] != "docker stop "+name || recipe[1] != want || recipe[2] != "docker start "+name {
		t.Fatalf("recipe = %q, want docker stop %s; %q; docker start %s\n%s", recipe, name, want, name, r)
	}
	return recipe, id, name
}

// TestConvertRecipeGroupAdd: an application that reaches the Docker socket
// through a supplementary group (--group-add of the socket's group, as the
// image's non-root user): the one-off carries the group (--volumes-from
// does not), reaches the engine and converts, as printed.
func TestConvertRecipeGroupAdd(t *testing.T) {
	requireDocker(t)
	gid, err := fileGID(dockerSocket)
	if err != nil {
		t.Skipf("no Docker socket at %s: %v", dockerSocket, err)
	}
	dir := hostDir(t)
	recipe, id, name := plainRecipe(t, dir, "docker run --rm --volumes-from NAME --user 65532:65532 --group-add "+gid+" --entrypoint /preflight IMAGE convert /data/app.db",
		"--group-add", gid, "-v", dockerSocket+":"+dockerSocket)
	runRecipe(t, id, name, filepath.Join(dir, "app.db"), recipe, "/data/app.db: converted wal -> delete")
}

// TestConvertRecipeDockerHost: an application that reaches the engine by
// DOCKER_HOST=tcp://... (a socket proxy, here a TCP proxy to the socket
// that the test runs on a network's gateway) on a user-defined network:
// the one-off carries DOCKER_HOST and the network, and converts as
// printed.
func TestConvertRecipeDockerHost(t *testing.T) {
	requireDocker(t)
	netName := containerName(t, "net")
	wantCode(t, docker(t, "network", "create", "--label", label, netName), 0)
	t.Cleanup(func() { docker(t, "network", "rm", netName) })
	gw := strings.TrimSpace(docker(t, "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Gateway}}{{end}}", netName).stdout)
	l, err := net.Listen("tcp", net.JoinHostPort(gw, "0"))
	if err != nil {
		t.Fatalf("listen on the network's gateway %q: %v", gw, err)
	}
	t.Cleanup(func() { l.Close() })
	go socketProxy(l, dockerSocket)
	host := "tcp://" + l.Addr().String()
	dir := hostDir(t)
	recipe, id, name := plainRecipe(t, dir, "docker run --rm --volumes-from NAME --user 65532:65532 -e DOCKER_HOST="+host+" --network "+netName+" --entrypoint /preflight IMAGE convert /data/app.db",
		"-e", "DOCKER_HOST="+host, "--network", netName)
	runRecipe(t, id, name, filepath.Join(dir, "app.db"), recipe, "/data/app.db: converted wal -> delete")
}

// socketProxy copies every connection l accepts to and from the unix
// socket sock, until l is closed.
func socketProxy(l net.Listener, sock string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			u, err := net.Dial("unix", sock)
			if err != nil {
				return
			}
			defer u.Close()
			go io.Copy(u, c)
			io.Copy(c, u)
		}()
	}
}

// TestConvertRecipeWithoutAPI: a plain container that cannot reach the
// Docker API (no socket) has no known compose service: the recipe is two
// templates, each marked as one, for a compose service (SERVICE to
// replace) and for a plain container by its id; the latter runs as
// printed.
func TestConvertRecipeWithoutAPI(t *testing.T) {
	requireDocker(t)
	dir := hostDir(t)
	seed(t, "-v", dir+":/data")
	id := idleApp(t, "-v", dir+":/data")
	r := docker(t, "exec", id, "/preflight", "convert", "/data/app.db")
	wantCode(t, r, 3)
	short := id[:12]
	for _, s := range []string{
		"  a template, if the container is a compose service: replace SERVICE with the compose service and run it in the project directory:\n" +
			"    docker compose stop SERVICE\n" +
			"    docker compose run --rm --no-deps --entrypoint /preflight SERVICE convert --allow-unverified /data/app.db\n" +
			"    docker compose start SERVICE\n",
		"  a template, if it is a plain container: " + short + " is this container's id (its default hostname); add the container's --user, --group-add and -e DOCKER_HOST if it was run with them:\n" +
			"    docker stop " + short + "\n",
	} {
		wantContains(t, "stdout", r.stdout, s)
	}
	wantContains(t, "stderr", r.stderr, "convert from outside with the template above that fits the container")
	recipe := recipeLines(r.stdout)
	if len(recipe) != 6 {
		t.Fatalf("recipe lines = %q, want 3 of each template", recipe)
	}
	runRecipe(t, id, "", filepath.Join(dir, "app.db"), recipe[3:], "/data/app.db: converted wal -> delete")
}
