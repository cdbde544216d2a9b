//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// asNobody runs the preflight binary as uid and gid 65534 with args and
// returns stdout, stderr and the exit code. The binary is copied into a
// directory that uid can reach.
func asNobody(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "running preflight as uid 65534 needs root")
	}
	dir := reachableDir(t)
	nb := filepath.Join(dir, "preflight")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nb, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nb, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %s as uid 65534: %v", nb, err)
	}
	return out.String(), errb.String(), code
}

// reachableDir returns a new directory, mode 0755, whose parents every
// user can search; removed when the test ends.
func reachableDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "preflight-fx4-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A data directory that exists but cannot be listed is data-dir-unreadable
// (an error, exit 3), not "none found" with scan-incomplete; run does not
// recommend wal for it.
func TestCheckDataDirUnlistable(t *testing.T) {
	if os.Geteuid() != 0 {
		skipOrFail(t, "TestCheckDataDirUnlistable runs preflight as uid 65534: needs root")
	}
	data := filepath.Join(reachableDir(t), "data")
	if err := os.Mkdir(data, 0o700); err != nil { // root-owned, 0700
		t.Fatal(err)
	}
	out, stderr, code := asNobody(t, "check", "--docker", "off", "--format", "json", data)
	r := decodeReport(t, out)
	ids := findingIDs(r)
	if code != exitUnsafe || !slices.Contains(ids, "data-dir-unreadable:error") || slices.Contains(ids, "scan-incomplete:warn") {
		t.Errorf("check %s as uid 65534: exit %d, findings %v; want %d with data-dir-unreadable:error and no scan-incomplete\n%s", data, code, ids, exitUnsafe, stderr)
	}
	if r.JournalMode != "delete" {
		t.Errorf("check %s as uid 65534: journal mode %q, want delete", data, r.JournalMode)
	}
	out, _, _ = asNobody(t, "check", "--docker", "off", data)
	if strings.Contains(out, "none found") || !strings.Contains(out, "databases: not inspected (the path could not be read)") {
		t.Errorf("check %s as uid 65534 (text) says:\n%s\nwant \"databases: not inspected (the path could not be read)\"", data, out)
	}
	out, stderr, code = asNobody(t, "run", "--docker", "off", "--data-dir", data, "--", "/usr/bin/env")
	if code != 0 || !strings.Contains(out, "PREFLIGHT_JOURNAL_MODE=delete\n") {
		t.Errorf("run --data-dir %s -- env as uid 65534: exit %d, env:\n%s\nwant PREFLIGHT_JOURNAL_MODE=delete; stderr:\n%s", data, code, out, stderr)
	}
	if !strings.Contains(stderr, "not inspected (the path could not be read)") {
		t.Errorf("run --data-dir %s as uid 65534 logged:\n%s\nwant the checked line to say the path could not be read", data, stderr)
	}
}

// compose prints compose-go's warning about an unset variable as
// preflight's own line only, never logrus's time=... level=warning line,
// also for a variable inside a default (${A:-${B}}).
func TestComposeUnsetVariableWarnsOnce(t *testing.T) {
	for _, src := range []string{"${FX4_UNSET_VAR}/d", "${FX4_UNSET_A:-${FX4_UNSET_VAR}}/d"} {
		dir := t.TempDir()
		file := filepath.Join(dir, "compose.yaml")
		if err := os.WriteFile(file, []byte("services:\n  app:\n    image: x\n    volumes: [\""+src+":/data\"]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr, code, _ := runBin(t, nil, "compose", "--docker", "off", "--platform", "linux", "-f", file)
		want := `preflight: warning: compose: The "FX4_UNSET_VAR" variable is not set. Defaulting to a blank string.`
		if code != exitOK || strings.Contains(stderr, "level=warning") || strings.Count(stderr, want) != 1 {
			t.Errorf("compose -f %s (volume %s): exit %d, stderr:\n%s\nwant exit 0 and only %q", file, src, code, stderr, want)
		}
	}
}

// compose --check is the default gate (exit 0 on warnings only); --fail-on
// warn exits 4 on the same project; --help lists --check.
func TestComposeCheckIsDefaultGate(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(file, []byte("services:\n  app:\n    image: x\n    volumes: [\"./d:/data\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"compose", "--docker", "off", "--platform", "desktop", "-f", file}
	for _, tt := range []struct {
		args []string
		want int
	}{
		{nil, exitOK},
		{[]string{"--check"}, exitOK},
		{[]string{"--check", "--fail-on", "warn"}, exitWarn},
		{[]string{"--fail-on", "warn"}, exitWarn},
	} {
		out, stderr, code := runMain(t, append(append([]string{}, base...), tt.args...)...)
		if code != tt.want || !strings.Contains(out, "verdict: warn") {
			t.Errorf("compose %v on a warnings-only project: exit %d, want %d\n%s%s", tt.args, code, tt.want, out, stderr)
		}
	}
	out, _, _ := runMain(t, "compose", "--help")
	if !strings.Contains(out, "--check") || strings.Contains(out, "gate CI (--check)") {
		t.Errorf("compose --help does not document --check, or still calls it the gate:\n%s", out)
	}
}

// check as an unprivileged user names the processes it could not read
// (PID 1 here, root's), not only how many.
func TestCheckNamesUnreadableProcesses(t *testing.T) {
	data := filepath.Join(reachableDir(t), "data")
	if err := os.Mkdir(data, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(data, 0o777)
	testdb.Make(t, filepath.Join(data, "app.db"), "delete", 1)
	if err := os.Chmod(filepath.Join(data, "app.db"), 0o644); err != nil {
		t.Fatal(err)
	}
	comm, err := os.ReadFile("/proc/1/comm")
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, _ := asNobody(t, "check", "--docker", "off", data)
	want := "(PID 1 " + strings.TrimSpace(string(comm))
	if !strings.Contains(out, "processes could not be read "+want) {
		t.Errorf("check %s as uid 65534 does not name %q among the unreadable processes:\n%s%s", data, want, out, stderr)
	}
}

// run counts a database with a damaged header in its checked line, and a
// single unreadable entry is "1 entry".
func TestRunCountsDamagedAndPlurals(t *testing.T) {
	dir := t.TempDir()
	junk := bytes.Repeat([]byte("not a header "), 400)
	if err := os.WriteFile(filepath.Join(dir, "dmg.db"), junk, 0o644); err != nil {
		t.Fatal(err)
	}
	// A -wal beside it says it is a database, its header damaged.
	if err := os.WriteFile(filepath.Join(dir, "dmg.db-wal"), make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, _, _ := runBin(t, nil, "run", "--docker", "off", "--data-dir", dir, "--", "/bin/true")
	if !strings.Contains(stderr, "databases: 1 damaged header") || strings.Contains(stderr, "no database") {
		t.Errorf("run on a damaged-header database logged:\n%s\nwant its checked line to count \"1 damaged header\"", stderr)
	}

	data := filepath.Join(reachableDir(t), "data")
	if err := os.MkdirAll(filepath.Join(data, "locked"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(data, 0o755); err != nil {
		t.Fatal(err)
	}
	out, stderr, _ := asNobody(t, "check", "--docker", "off", data)
	if !strings.Contains(out, "scan-incomplete: 1 entry under "+data+" could not be read") {
		t.Errorf("check %s as uid 65534 with one unreadable subdirectory:\n%s%s\nwant \"1 entry under ... could not be read\"", data, out, stderr)
	}
}

// A bad flag value from the environment names the variable; errors that
// leave the user guessing come with a hint.
func TestErrorsNameVariableAndHint(t *testing.T) {
	t.Setenv("PREFLIGHT_ON_UNSAFE", "bogus")
	_, stderr, code := runMain(t, "run", "--", "/bin/true")
	if code != exitUsage || !strings.Contains(stderr, `preflight: error: PREFLIGHT_ON_UNSAFE: invalid argument "bogus" for "--on-unsafe" flag: must be one of`) {
		t.Errorf("run with PREFLIGHT_ON_UNSAFE=bogus: exit %d, stderr %q; want %d naming --on-unsafe (PREFLIGHT_ON_UNSAFE)", code, stderr, exitUsage)
	}
	_, stderr, _ = runMain(t, "run", "--on-unsafe", "bad", "--", "/bin/true")
	if !strings.Contains(stderr, `preflight: error: invalid argument "bad" for "--on-unsafe" flag: must be one of`) {
		t.Errorf("run --on-unsafe bad (PREFLIGHT_ON_UNSAFE=bogus set too): stderr %q; want the flag named alone", stderr)
	}
	os.Unsetenv("PREFLIGHT_ON_UNSAFE")

	junk := filepath.Join(t.TempDir(), "junk")
	if err := os.WriteFile(junk, []byte("not a mount table\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--mountinfo", junk, "mounts"}, "preflight: hint: --mountinfo takes a saved /proc/PID/mountinfo"},
		{[]string{"--mountinfo", junk, "check", "--docker", "off", "/data"}, "preflight: hint: --mountinfo takes a saved /proc/PID/mountinfo"},
		{[]string{"convert", "--no-backup", "--backup-dir", t.TempDir(), dir}, "preflight: hint: choose one: --backup-dir DIR"},
	} {
		_, stderr, code := runMain(t, tt.args...)
		if code != exitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr, exitUsage, tt.want)
		}
	}
}

// check --container with a name no container has hints at docker ps -a.
func TestCheckNoSuchContainerHint(t *testing.T) {
	if err := exec.Command("docker", "info").Run(); err != nil {
		if os.Getenv("CI") == "true" || os.Getenv("PREFLIGHT_REQUIRE_DOCKER") == "1" {
			t.Fatalf("docker not running: %v", err)
		}
		t.Skipf("docker not running: %v", err)
	}
	_, stderr, code := runMain(t, "check", "--container", "preflight-fx4-no-such-container", "/data")
	if code != exitUsage || !strings.Contains(stderr, "no such container") || !strings.Contains(stderr, "preflight: hint: docker ps -a") {
		t.Errorf("check --container preflight-fx4-no-such-container: exit %d, stderr %q; want %d with a docker ps -a hint", code, stderr, exitUsage)
	}
}

// migrate's summary gives its counts with the nouns' number right.
func TestMigrateSummaryPlurals(t *testing.T) {
	from := t.TempDir()
	testdb.Make(t, filepath.Join(from, "app.db"), "delete", 1)
	if err := os.WriteFile(filepath.Join(from, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(t.TempDir(), "volume")
	out, stderr, code := runMain(t, "migrate", "--from", from, "--to", to, "--docker", "off", "--allow-unverified")
	if want := ": 1 database, 1 file, "; code != 0 || !strings.Contains(out, want) {
		t.Errorf("migrate of one database and one file: exit %d, stdout %q, stderr %q; want %q", code, out, stderr, want)
	}
}
