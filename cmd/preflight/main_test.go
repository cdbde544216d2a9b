package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// bin is the preflight binary built by TestMain, for tests that need a real
// process (run execs).
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "preflight-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "preflight")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
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
		ids = append(ids, f.ID+":"+string(f.Level))
	}
	return ids
}

// TestCheckVerdicts runs check over real databases with saved mount tables
// for the filesystems this machine cannot mount, and asserts the findings and
// exit codes of the one exit-code table.
func TestCheckVerdicts(t *testing.T) {
	walDir := t.TempDir()
	testdb.Make(t, filepath.Join(walDir, "app.db"), "wal", 3)
	delDir := t.TempDir()
	testdb.Make(t, filepath.Join(delDir, "app.db"), "delete", 3)
	emptyDir := t.TempDir()

	tests := []struct {
		name     string
		dir      string
		fstype   string
		source   string
		opts     string
		extra    []string
		wantIDs  []string
		wantCode int
		verdict  preflight.Verdict
	}{
		{"wal on local ext4", walDir, "ext4", "/dev/sda1", "rw", nil, nil, exitOK, preflight.VerdictOK},
		{"wal on docker desktop fakeowner", walDir, "fakeowner", "/run/host_mark/Users", "rw,fakeowner", nil, []string{"wal-on-cross-vm:error"}, exitUnsafe, preflight.VerdictUnsafe},
		{"wal on grpcfuse", walDir, "fuse.grpcfuse", "grpcfuse", "rw,user_id=0,group_id=0,allow_other", nil, []string{"wal-on-cross-vm:error"}, exitUnsafe, preflight.VerdictUnsafe},
		{"wal on nfs4", walDir, "nfs4", "10.0.0.2:/export", "rw,vers=4.1", nil, []string{"wal-on-network-fs:error"}, exitUnsafe, preflight.VerdictUnsafe},
		{"wal on unraid shfs", walDir, "fuse.shfs", "shfs", "rw", nil, []string{"wal-on-fuse:error"}, exitUnsafe, preflight.VerdictUnsafe},
		{"wal on other fuse", walDir, "fuse.foofs", "foofs", "rw", nil, []string{"wal-on-fuse:warn"}, exitWarn, preflight.VerdictWarn},
		{"delete on cross-vm", delDir, "virtiofs", "mount0", "rw", nil, nil, exitOK, preflight.VerdictOK},
		{"empty dir on cross-vm", emptyDir, "virtiofs", "mac", "rw", nil, []string{"new-db-on-unsafe-fs:info"}, exitOK, preflight.VerdictOK},
		{"unknown fs", walDir, "weirdfs", "x", "rw", nil, []string{"unknown-fs:warn"}, exitWarn, preflight.VerdictWarn},
		{"unknown fs, fail-on error", walDir, "weirdfs", "x", "rw", []string{"--fail-on", "error"}, []string{"unknown-fs:warn"}, exitOK, preflight.VerdictWarn},
		{"unsafe, fail-on never", walDir, "nfs", "srv:/x", "rw", []string{"--fail-on", "never"}, []string{"wal-on-network-fs:error"}, exitOK, preflight.VerdictUnsafe},
		{"unsafe, ignored", walDir, "nfs", "srv:/x", "rw", []string{"--ignore", "wal-on-network-fs"}, []string{"wal-on-network-fs:info"}, exitOK, preflight.VerdictOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mi := mountTable(t, tt.dir, tt.fstype, tt.source, tt.opts)
			args := append([]string{"--mountinfo", mi, "check", "--format", "json", tt.dir}, tt.extra...)
			out, stderr, code := runMain(t, args...)
			if code != tt.wantCode {
				t.Errorf("preflight %s: exit %d, want %d\nstderr: %s", strings.Join(args, " "), code, tt.wantCode, stderr)
			}
			r := decodeReport(t, out)
			if got := strings.Join(findingIDs(r), ","); got != strings.Join(tt.wantIDs, ",") {
				t.Errorf("findings = %s, want %s", got, strings.Join(tt.wantIDs, ","))
			}
			if r.Verdict != tt.verdict {
				t.Errorf("verdict = %s, want %s", r.Verdict, tt.verdict)
			}
		})
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
	for _, args := range [][]string{
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
	dir := t.TempDir()
	testdb.Make(t, filepath.Join(dir, "app.db"), "wal", 2)
	unsafeMI := mountTable(t, dir, "fuse.grpcfuse", "grpcfuse", "rw")
	localMI := mountTable(t, dir, "ext4", "/dev/sdb1", "rw")
	noexec := filepath.Join(t.TempDir(), "script")
	os.WriteFile(noexec, []byte("#!/bin/sh\necho hi\n"), 0o644)

	// The application replaces preflight: same pid, its exit code, its env.
	out, stderr, code, pid := runBin(t, []string{"PREFLIGHT_DATA_DIR=" + dir, "PREFLIGHT_MOUNTINFO=" + unsafeMI},
		"run", "--export-env", "APP_JOURNAL", "--", "/bin/sh", "-c", `echo "$$ $PREFLIGHT_JOURNAL_MODE $PREFLIGHT_FS_CLASS $APP_JOURNAL"; exit 7`)
	if code != 7 {
		t.Errorf("run sh exit 7: exit %d, stderr %s", code, stderr)
	}
	if want := fmt.Sprintf("%d delete cross-vm delete\n", pid); out != want {
		t.Errorf("run: child printed %q, want %q (same pid: exec, not fork)", out, want)
	}
	if n := strings.Count(stderr, "wal-on-cross-vm"); n != 1 || !strings.HasPrefix(stderr, "preflight: error: wal-on-cross-vm: ") {
		t.Errorf("run stderr logs wal-on-cross-vm %d times, want once as first line:\n%s", n, stderr)
	}

	out, _, code, _ = runBin(t, nil, "--mountinfo", localMI, "run", "--data-dir", dir, "--", "/bin/sh", "-c", `echo $PREFLIGHT_JOURNAL_MODE $PREFLIGHT_FS_CLASS`)
	if code != 0 || out != "wal local\n" {
		t.Errorf("run on local fs: exit %d, child printed %q; want 0, \"wal local\"", code, out)
	}

	for _, tt := range []struct {
		name string
		args []string
		want int
	}{
		{"on-unsafe fail", []string{"--mountinfo", unsafeMI, "run", "--data-dir", dir, "--on-unsafe", "fail", "--", "/bin/echo", "started"}, exitUnsafe},
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
	_, stderr, code, _ = runBin(t, nil, "--mountinfo", unsafeMI, "run", "--log-format", "json", "--data-dir", dir, "--", "/bin/true")
	if code != 0 {
		t.Fatalf("run --log-format json: exit %d", code)
	}
	var line struct{ Level, ID, Path string }
	if err := json.Unmarshal([]byte(strings.SplitN(stderr, "\n", 2)[0]), &line); err != nil || line.ID != "wal-on-cross-vm" || line.Level != "error" {
		t.Errorf("json log first line = %q (%v), want a wal-on-cross-vm error object", stderr, err)
	}
}
