package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/internal/fuseloop"
	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/rogpeppe/go-internal/testscript"
)

// bin is the preflight binary built by TestMain, for tests that need a real
// process (run execs).
var bin string

func TestMain(m *testing.M) {
	if os.Getenv(testdb.AppEnv) != "" {
		os.Exit(testdb.AppMain()) // the application run execs (run_convert_test.go)
	}
	// testscript.Main runs scriptCommands when the binary is started under
	// one of their names (script_test.go), and otherwise buildAndRun.
	testscript.Main(buildAndRun{m}, scriptCommands)
}

// buildAndRun runs the tests after building bin, and removes bin after.
type buildAndRun struct{ m *testing.M }

func (b buildAndRun) Run() int {
	dir, err := os.MkdirTemp("", "preflight-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "preflight")
	// Stamped as a release, as the archives the Action tests make of it
	// are (releaseDir): compose prints its released migration image.
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v0.0.0-test", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	return b.m.Run()
}

// runMain runs the CLI in-process and returns stdout, stderr and the exit code.
func runMain(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return out.String(), errb.String(), code
}

// mountTable writes a saved mountinfo table with / on ext4 and dir mounted
// with fstype and source, and returns its path.
func mountTable(t *testing.T, dir, fstype, source, opts string) string {
	t.Helper()
	text := "1 0 254:1 / / rw,relatime - ext4 /dev/vda1 rw\n"
	if dir != "" {
		text += fmt.Sprintf("2 1 0:46 / %s rw,nosuid,nodev,relatime - %s %s %s\n", dir, fstype, source, opts)
	}
	p := filepath.Join(t.TempDir(), "mountinfo")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func decodeReport(t *testing.T, out string) preflight.Report {
	t.Helper()
	var r preflight.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("decode report: %v\n%s", err, out)
	}
	if r.Schema != "preflight/v1" {
		t.Fatalf("schema = %q, want preflight/v1", r.Schema)
	}
	return r
}

func findingIDs(r preflight.Report) []string {
	var ids []string
	for _, f := range r.Findings {
		ids = append(ids, string(f.ID)+":"+string(f.Level))
	}
	return ids
}

// TestCheckSavedTable classifies paths against saved mount tables: the
// paths belong to the machine the table came from, so nothing here is read.
func TestCheckSavedTable(t *testing.T) {
	dir := t.TempDir()
	testdb.Make(t, filepath.Join(dir, "app.db"), "wal", 1) // must not be read
	tests := []struct {
		fstype, source string
		wantIDs        string
		wantCode       int
	}{
		{"ext4", "/dev/sda1", "", exitOK},
		{"fakeowner", "/run/host_mark/Users", "unsafe-fs-not-inspected:warn", exitWarn},
		{"nfs4", "127.0.0.1:/", "unsafe-fs-not-inspected:warn", exitWarn},
		{"weirdfs", "x", "unknown-fs:warn", exitWarn},
	}
	for _, tt := range tests {
		mi := mountTable(t, dir, tt.fstype, tt.source, "rw")
		out, stderr, code := runMain(t, "--mountinfo", mi, "check", "--docker", "off", "--format", "json", dir)
		r := decodeReport(t, out)
		if code != tt.wantCode || strings.Join(findingIDs(r), ",") != tt.wantIDs {
			t.Errorf("check %s on saved %s table: exit %d, findings %v; want %d, %s\n%s", dir, tt.fstype, code, findingIDs(r), tt.wantCode, tt.wantIDs, stderr)
		}
		if r.DataDirs[0].Inspected || len(r.DataDirs[0].Databases) != 0 {
			t.Errorf("check with a saved %s table read this machine's %s: %+v", tt.fstype, dir, r.DataDirs[0].Databases)
		}
	}
}

func TestCheckEphemeralAndMissing(t *testing.T) {
	dir := t.TempDir()
	testdb.Make(t, filepath.Join(dir, "app.db"), "wal", 1)
	// overlay at / : the container's writable layer.
	mi := filepath.Join(t.TempDir(), "mounts")
	os.WriteFile(mi, []byte("overlay / overlay rw,relatime,lowerdir=/l,upperdir=/u,workdir=/w 0 0\n"), 0o644)
	out, _, code := runMain(t, "--mountinfo", mi, "check", "--format", "json", dir)
	r := decodeReport(t, out)
	if code != exitWarn || strings.Join(findingIDs(r), ",") != "ephemeral-data-dir:warn" {
		t.Errorf("check on writable layer: exit %d, findings %v; want 4, [ephemeral-data-dir:warn]", code, findingIDs(r))
	}
	if r.JournalMode != "wal" || r.FSClass != "ephemeral" {
		t.Errorf("journal mode %q, class %q; want wal, ephemeral", r.JournalMode, r.FSClass)
	}

	missing := filepath.Join(dir, "nope")
	out, _, code = runMain(t, "check", "--format", "json", missing)
	r = decodeReport(t, out)
	if code != exitUnsafe || !strings.Contains(strings.Join(findingIDs(r), ","), "data-dir-missing:error") {
		t.Errorf("check %s: exit %d, findings %v; want 3 with data-dir-missing", missing, code, findingIDs(r))
	}
}

func TestCheckNotSQLite(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.db"), []byte("this is not a database, just text that is long enough to have a header"), 0o644)
	out, _, code := runMain(t, "check", "--format", "json", dir)
	r := decodeReport(t, out)
	if code != exitWarn || !strings.Contains(strings.Join(findingIDs(r), ","), "not-sqlite:warn") {
		t.Errorf("check dir with non-SQLite notes.db: exit %d, findings %v; want 4 with not-sqlite", code, findingIDs(r))
	}
}

func TestUsageErrors(t *testing.T) {
	garbage := filepath.Join(t.TempDir(), "garbage")
	os.WriteFile(garbage, []byte("hello\nworld $ \n"), 0o644)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--mountinfo", "/dev/zero", "check", "/data"},
		{"--mountinfo", fifo, "check", "/data"},
		{"--mountinfo", t.TempDir(), "check", "/data"},
		{"check", "--max-depth", "0", "/tmp"},
		{"check", "--sniff-max", "0", "/tmp"},
		{"check", "--sniff-time", "0s", "/tmp"},
		{"check"},
		{"check", "--format", "yaml", "/"},
		{"--mountinfo", garbage, "check", "/data"},
		{"--mountinfo", "/does/not/exist", "check", "/data"},
		{"--mountinfo", garbage, "check", "relative/path"},
		{"no-such-command"},
		{"run", "--data-dir", "/tmp"},
	} {
		_, stderr, code := runMain(t, args...)
		if code != exitUsage {
			t.Errorf("preflight %s: exit %d, want %d", strings.Join(args, " "), code, exitUsage)
		}
		if !strings.HasPrefix(stderr, "preflight: error: ") {
			t.Errorf("preflight %s: stderr %q, want a 'preflight: error: ' line", strings.Join(args, " "), stderr)
		}
	}
}

func TestHelpListsExitCodes(t *testing.T) {
	out, _, code := runMain(t, "--help")
	if code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	for _, want := range []string{"3    unsafe", "4    warnings only", "127  run: CMD not found"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	out, _, code = runMain(t, "--version")
	if code != 0 || !strings.HasPrefix(out, "preflight ") {
		t.Errorf("--version: exit %d, output %q", code, out)
	}
}

func TestMountsPathJSON(t *testing.T) {
	dir := t.TempDir()
	mi := mountTable(t, dir, "fakeowner", "/run/host_mark/Users", "rw,fakeowner")
	out, _, code := runMain(t, "--mountinfo", mi, "mounts", "--format", "json", filepath.Join(dir, "app.db"))
	if code != 0 {
		t.Fatalf("mounts: exit %d", code)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"class": "cross-vm", "fstype": "fakeowner", "source": "/run/host_mark/Users", "mountpoint": dir} {
		if m[k] != want {
			t.Errorf("mounts json %s = %v, want %q", k, m[k], want)
		}
	}
}

// runBin runs the built binary with env added to ours.
func runBin(t *testing.T, env []string, args ...string) (string, string, int, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %s: %v", bin, err)
	}
	return out.String(), errb.String(), code, cmd.Process.Pid
}

func TestRunExec(t *testing.T) {
	if os.Geteuid() != 0 {
		skipOrFail(t, "TestRunExec mounts FUSE: needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		skipOrFail(t, "TestRunExec mounts FUSE: needs /dev/fuse")
	}
	// A real grpcfuse mount: the data directory as Docker Desktop shows it.
	backing, dir := t.TempDir(), t.TempDir()
	testdb.Make(t, filepath.Join(backing, "app.db"), "wal", 2)
	unmount, err := fuseloop.Mount(backing, dir, "grpcfuse")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmount() })
	local := t.TempDir()
	testdb.Make(t, filepath.Join(local, "app.db"), "wal", 2)
	noexec := filepath.Join(t.TempDir(), "script")
	os.WriteFile(noexec, []byte("#!/bin/sh\necho hi\n"), 0o644)

	// The application replaces preflight: same pid, its exit code, its env.
	out, stderr, code, pid := runBin(t, []string{"PREFLIGHT_DATA_DIR=" + dir, "PREFLIGHT_DOCKER=off"},
		"run", "--export-env", "APP_JOURNAL", "--", "/bin/sh", "-c", `echo "$$ $PREFLIGHT_JOURNAL_MODE $PREFLIGHT_FS_CLASS $APP_JOURNAL"; exit 7`)
	if code != 7 {
		t.Errorf("run sh exit 7: exit %d, stderr %s", code, stderr)
	}
	if want := fmt.Sprintf("%d delete cross-vm delete\n", pid); out != want {
		t.Errorf("run: child printed %q, want %q (same pid: exec, not fork)", out, want)
	}
	if n := strings.Count(stderr, "preflight: error: wal-on-cross-vm: "); n != 1 || !strings.HasPrefix(stderr, "preflight: error: wal-on-cross-vm: ") {
		t.Errorf("run stderr logs wal-on-cross-vm %d times, want once as first line:\n%s", n, stderr)
	}

	out, _, code, _ = runBin(t, nil, "run", "--data-dir", local, "--", "/bin/sh", "-c", `echo $PREFLIGHT_JOURNAL_MODE $PREFLIGHT_FS_CLASS`)
	if code != 0 || out != "wal local\n" {
		t.Errorf("run on local fs: exit %d, child printed %q; want 0, \"wal local\"", code, out)
	}

	for _, tt := range []struct {
		name string
		args []string
		want int
	}{
		{"on-unsafe fail", []string{"run", "--data-dir", dir, "--on-unsafe", "fail", "--", "/bin/echo", "started"}, exitUnsafe},
		{"misspelled flag", []string{"run", "--data-dir", dir, "--on-unsafe-typo", "fail", "--", "/bin/echo", "started"}, exitUsage},
		{"not found", []string{"run", "--data-dir", dir, "--", "/no/such/app"}, exitNotFound},
		{"not found in PATH", []string{"run", "--data-dir", dir, "--", "no-such-app-xyz"}, exitNotFound},
		{"not executable", []string{"run", "--data-dir", dir, "--", noexec}, exitCannotExec},
		{"directory", []string{"run", "--data-dir", dir, "--", dir}, exitCannotExec},
		{"no command", []string{"run", "--data-dir", dir, "--"}, exitUsage},
	} {
		out, stderr, code, _ := runBin(t, nil, tt.args...)
		if code != tt.want {
			t.Errorf("%s: preflight %s: exit %d, want %d\nstderr: %s", tt.name, strings.Join(tt.args, " "), code, tt.want, stderr)
		}
		if strings.Contains(out, "started") {
			t.Errorf("%s: the application ran: %q", tt.name, out)
		}
	}

	// JSON log lines: one object per finding.
	_, stderr, code, _ = runBin(t, nil, "run", "--log-format", "json", "--data-dir", dir, "--", "/bin/true")
	if code != 0 {
		t.Fatalf("run --log-format json: exit %d", code)
	}
	found := false
	for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		var line struct{ Level, ID, Path string }
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Errorf("json log line %q: %v", l, err)
		}
		found = found || line.ID == "wal-on-cross-vm" && line.Level == "error"
	}
	if !found {
		t.Errorf("json log = %q, want a wal-on-cross-vm error object", stderr)
	}
}

func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// writers --host-path on a filesystem that stops answering exits 1 within
// --fs-timeout instead of hanging.
func TestWritersHostPathUnresponsive(t *testing.T) {
	backing := t.TempDir()
	mnt := testdb.StoppedFUSE(t, backing)
	start := time.Now()
	_, stderr, code, _ := runBin(t, []string{"DOCKER_HOST=unix:///nonexistent.sock"}, "writers", "--host-path", mnt, "--fs-timeout", "1s")
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("writers --host-path on a stopped mount took %s, want about the 1s timeout", el)
	}
	if code != exitInternal || !strings.Contains(stderr, "did not answer") {
		t.Errorf("writers --host-path on a stopped mount: exit %d, stderr %q; want %d and did not answer", code, stderr, exitInternal)
	}
}

// run does not start the application over an empty database file whose
// -wal holds frames (it would delete them), whatever --on-unsafe says.
func TestRunRefusesWALWithoutDatabase(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	db := testdb.Open(t, path, "wal", 3)
	if _, err := db.Exec("PRAGMA wal_autocheckpoint=0; insert into t(v) values ('x')"); err != nil {
		t.Fatal(err)
	}
	wal, err := os.ReadFile(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+"-wal", wal, 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code, _ := runBin(t, nil, "run", "--docker", "off", "--data-dir", dir, "--", "/bin/echo", "started")
	if code != exitUnsafe || strings.Contains(out, "started") || !strings.Contains(stderr, "start-refused") {
		t.Errorf("run over an empty database with a -wal: exit %d, stdout %q, stderr %q; want %d, not started", code, out, stderr, exitUnsafe)
	}
	out, _, code, _ = runBin(t, nil, "run", "--docker", "off", "--ignore", "wal-without-database", "--data-dir", dir, "--", "/bin/echo", "started")
	if code != 0 || !strings.Contains(out, "started") {
		t.Errorf("run --ignore wal-without-database: exit %d, stdout %q; want the application started", code, out)
	}
}

// --export-env takes environment variable names only; blank entries of
// PREFLIGHT_EXPORT_ENV are skipped.
func TestRunExportEnvNames(t *testing.T) {
	dir := t.TempDir()
	for _, bad := range []string{"PATH=/evil:", "1ABC", "A-B", "A B"} {
		out, stderr, code, _ := runBin(t, nil, "run", "--docker", "off", "--data-dir", dir, "--export-env", bad, "--", "/bin/echo", "started")
		if code != exitUsage || strings.Contains(out, "started") {
			t.Errorf("--export-env %q: exit %d, stdout %q, stderr %q; want %d, not started", bad, code, out, stderr, exitUsage)
		}
	}
	out, stderr, code, _ := runBin(t, []string{"PREFLIGHT_EXPORT_ENV= ,MY_MODE"}, "run", "--docker", "off", "--data-dir", dir, "--", "/usr/bin/env")
	if code != 0 || !strings.Contains(out, "\nMY_MODE=") || strings.Contains(out, "\n=") || strings.Contains(out, "\n =") {
		t.Errorf("PREFLIGHT_EXPORT_ENV=' ,MY_MODE': exit %d, stderr %q, environment:\n%s", code, stderr, out)
	}
}

// The text report says which live-writer probes looked: with --docker off
// containers were not checked, and it says so.
func TestCheckTextNamesProbesThatRan(t *testing.T) {
	dir := t.TempDir()
	db := testdb.Open(t, filepath.Join(dir, "app.db"), "wal", 1)
	db.Close()
	out, _, _ := runMain(t, "check", "--docker", "off", dir)
	want := "containers (--docker off)"
	if !strings.Contains(out, "not checked: ") || !strings.Contains(out, want) {
		t.Errorf("check --docker off output does not contain %q:\n%s", want, out)
	}
	if strings.Contains(out, "containers checked") {
		t.Errorf("check --docker off output claims containers were checked:\n%s", out)
	}
}

// TestCheckDeepSIGTERMRemovesCopy: a check --deep process told to stop
// (SIGTERM) while it copies a database to check it privately removes the
// copy before it exits, and says it was interrupted.
func TestCheckDeepSIGTERMRemovesCopy(t *testing.T) {
	data, tmp := t.TempDir(), t.TempDir()
	db := testdb.Open(t, filepath.Join(data, "app.db"), "wal", 0)
	// About 96 MiB: long enough to copy that the signal comes mid-copy.
	if _, err := db.Exec(`insert into t(v) with recursive n(i) as (select 1 union all select i+1 from n where i < 24576) select hex(randomblob(2048)) from n`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil { // an idle WAL database: checked on a copy
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "check", "--deep", "--docker", "off", "--tmp-dir", tmp, data)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	copies := filepath.Join(tmp, "preflight-check-*", "copy.db")
	for seen := false; !seen; {
		select {
		case err := <-done:
			t.Fatalf("check --deep ended (%v) before its copy %s was seen\n%s", err, copies, stderr.String())
		case <-time.After(200 * time.Microsecond):
		}
		m, _ := filepath.Glob(copies)
		seen = len(m) > 0
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("check --deep did not end within 30s of SIGTERM\n%s", stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != exitSignal+int(syscall.SIGTERM) || !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("check --deep after SIGTERM: exit %d, stderr %q; want %d and interrupted", code, stderr.String(), exitSignal+int(syscall.SIGTERM))
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("--tmp-dir after SIGTERM holds %v, want nothing", left)
	}
}

// TestCheckEphemeralVolumeNames: ephemeral-data-dir's fix names a volume
// after each directory (app-config for .../config, app-data for
// .../data), one spelling, not one volume for every directory.
func TestCheckEphemeralVolumeNames(t *testing.T) {
	root := t.TempDir()
	cfg, data := filepath.Join(root, "config"), filepath.Join(root, "data")
	for _, d := range []string{cfg, data} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mi := filepath.Join(t.TempDir(), "mounts")
	if err := os.WriteFile(mi, []byte("overlay / overlay rw,relatime,lowerdir=/l,upperdir=/u,workdir=/w 0 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, _ := runMain(t, "--mountinfo", mi, "check", "--docker", "off", "--format", "json", cfg, data)
	r := decodeReport(t, out)
	want := map[string]string{
		cfg:  "Mount a named volume at " + cfg + ": docker run -v app-config:" + cfg + " ..., or in compose: volumes: [\"app-config:" + cfg + "\"] with a top-level volumes: {app-config: {}}.",
		data: "Mount a named volume at " + data + ": docker run -v app-data:" + data + " ..., or in compose: volumes: [\"app-data:" + data + "\"] with a top-level volumes: {app-data: {}}.",
	}
	got := map[string]string{}
	for _, f := range r.Findings {
		if f.ID == "ephemeral-data-dir" && len(f.Remedy) > 0 {
			got[f.Path] = f.Remedy[0]
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ephemeral-data-dir fixes (-want +got):\n%s", diff)
	}
}
