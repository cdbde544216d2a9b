package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The full linux/amd64 release binary fits its 16 MiB goal: the command
// line parser must not make the linker keep every exported method (kong
// looked its hooks up by run-time names and did; 18,428,066 bytes).
func TestFullBinarySize(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go command not found: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, d := range strings.Fields(string(out)) {
		if strings.HasPrefix(d, "github.com/alecthomas/kong") {
			t.Errorf("cmd/preflight depends on %s, which looks methods up by run-time names", d)
		}
	}
	bin := filepath.Join(t.TempDir(), "preflight")
	build := exec.Command(goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 16<<20 {
		t.Errorf("full linux/amd64 binary: %d bytes, over the 16 MiB goal (%d)", fi.Size(), 16<<20)
	}
}

// Every flag that names no other variable is also PREFLIGHT_<NAME>
// (dashes as underscores), a value on the command line wins over it, a bad
// value from it is a usage error that names the variable, and a variable
// counts as the flag for cobra's required flags.
func TestFlagEnvironment(t *testing.T) {
	t.Setenv("PREFLIGHT_TO", "truncate")
	_, stderr, code := runMain(t, "convert", "--dry-run", "x.db")
	if code != exitUsage || !strings.Contains(stderr, `preflight: error: PREFLIGHT_TO: invalid argument "truncate" for "--to" flag: must be one of ["delete" "wal"]`) {
		t.Errorf("convert with PREFLIGHT_TO=truncate: exit %d, stderr %q; want a usage error naming PREFLIGHT_TO", code, stderr)
	}
	t.Setenv("PREFLIGHT_TO", "")
	os.Unsetenv("PREFLIGHT_TO")

	t.Setenv("PREFLIGHT_FORMAT", "json")
	stdout, stderr, code := runMain(t, "mounts", "/")
	if code != 0 || !strings.HasPrefix(strings.TrimSpace(stdout), "{") && !strings.HasPrefix(strings.TrimSpace(stdout), "[") {
		t.Errorf("mounts with PREFLIGHT_FORMAT=json: exit %d, stdout %q, stderr %q; want JSON", code, stdout, stderr)
	}
	stdout, _, code = runMain(t, "mounts", "--format", "text", "/")
	if code != 0 || strings.HasPrefix(strings.TrimSpace(stdout), "{") || strings.HasPrefix(strings.TrimSpace(stdout), "[") {
		t.Errorf("mounts --format text with PREFLIGHT_FORMAT=json: exit %d, stdout %q; want text", code, stdout)
	}

	t.Setenv("PREFLIGHT_MIGRATE_FROM", "/nonexistent-from")
	_, stderr, code = runMain(t, "migrate")
	if code != exitUsage || !strings.Contains(stderr, `required flag(s) "to" not set`) || strings.Contains(stderr, `"from"`) {
		t.Errorf("migrate with PREFLIGHT_MIGRATE_FROM: exit %d, stderr %q; want only --to missing", code, stderr)
	}
}

// Boolean flags take yes and no in any case, from the command line and
// from PREFLIGHT_* variables, as they always did; other words are usage
// errors.
func TestBoolFlagWords(t *testing.T) {
	dir := t.TempDir()
	off := []string{"check", "--docker", "off", "--kube", "off", "--data-dir", dir}
	for _, v := range []string{"yes", "YES", "no", "True", "0"} {
		if _, stderr, code := runMain(t, append(off, "--probe-fs="+v)...); code != exitOK {
			t.Errorf("check --probe-fs=%s: exit %d, stderr %q; want 0", v, code, stderr)
		}
		t.Setenv("PREFLIGHT_DEEP", v)
		if _, stderr, code := runMain(t, off...); code != exitOK {
			t.Errorf("check with PREFLIGHT_DEEP=%s: exit %d, stderr %q; want 0", v, code, stderr)
		}
	}
	t.Setenv("PREFLIGHT_DEEP", "t")
	if _, stderr, code := runMain(t, off...); code != exitUsage || !strings.Contains(stderr, `PREFLIGHT_DEEP: invalid argument "t" for "--deep" flag: must be true, 1, yes, false, 0, no, quick or full`) {
		t.Errorf("check with PREFLIGHT_DEEP=t: exit %d, stderr %q; want a usage error", code, stderr)
	}
}

// --deep=full (and PREFLIGHT_DEEP=full) is --deep with integrity_check,
// and after run's CMD, --deep=full is the application's argument.
func TestDeepFull(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "app.db")
	if out, err := exec.Command("sqlite3", db, "create table t(x); insert into t values(1);").CombinedOutput(); err != nil {
		t.Skipf("sqlite3: %v %s", err, out)
	}
	off := []string{"check", "--docker", "off", "--kube", "off"}
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--deep=full", dir}, "", "integrity (integrity_check"},
		{[]string{"--deep", dir}, "", "integrity (quick_check"},
		{[]string{"--deep=full", "--deep-mode", "quick", dir}, "", "integrity (quick_check"},
		{[]string{dir}, "full", "integrity (integrity_check"},
		{[]string{dir}, "yes", "integrity (quick_check"},
	} {
		t.Setenv("PREFLIGHT_DEEP", tc.env)
		out, stderr, code := runMain(t, append(off, tc.args...)...)
		if code != exitOK || !strings.Contains(out, tc.want) {
			t.Errorf("check %q with PREFLIGHT_DEEP=%q: exit %d, stderr %q, stdout:\n%s\nwant %q", tc.args, tc.env, code, stderr, out, tc.want)
		}
	}
	os.Unsetenv("PREFLIGHT_DEEP")
	for _, args := range [][]string{
		{"--data-dir", dir, "echo", "--deep=full"},
		{"--data-dir", dir, "--", "echo", "--deep=full", "--", "x"},
	} {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, append([]string{"run", "--docker", "off", "--kube", "off"}, args...)...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		want := strings.Join(args[slices.Index(args, "echo")+1:], " ") + "\n"
		if err := cmd.Run(); err != nil || stdout.String() != want {
			t.Errorf("run %q: %v, stdout %q, stderr %q; want %q", args, err, stdout.String(), stderr.String(), want)
		}
	}
}

// Only the command word run splits off an application's command line: a
// data directory named run before "--" is one of check's paths.
func TestSplitRun(t *testing.T) {
	for _, tc := range []struct {
		args, flags, cmd []string
	}{
		{[]string{"run", "--", "app", "-x"}, []string{"run", "--"}, []string{"app", "-x"}},
		{[]string{"--mountinfo", "t", "run", "--data-dir", "/d", "--", "app"}, []string{"--mountinfo", "t", "run", "--data-dir", "/d", "--"}, []string{"app"}},
		{[]string{"run", "app", "a", "--", "b"}, []string{"run", "app", "a", "--"}, []string{"b"}},
		{[]string{"check", "run", "--", "/data"}, []string{"check", "run", "--", "/data"}, nil},
		{[]string{"check", "--data-dir", "run", "--", "/data"}, []string{"check", "--data-dir", "run", "--", "/data"}, nil},
		{[]string{"--mountinfo", "run", "check", "--", "/data"}, []string{"--mountinfo", "run", "check", "--", "/data"}, nil},
	} {
		flags, cmd := splitRun(tc.args)
		if !slices.Equal(flags, tc.flags) || !slices.Equal(cmd, tc.cmd) {
			t.Errorf("splitRun(%q) = %q, %q; want %q, %q", tc.args, flags, cmd, tc.flags, tc.cmd)
		}
	}
	dir := t.TempDir()
	out, _, _ := runMain(t, "check", "--docker", "off", "--kube", "off", "run", "--", dir)
	if !strings.Contains(out, "\n"+dir+"\n") {
		t.Errorf("check run -- %s did not check %s:\n%s", dir, dir, out)
	}
}

// A comma-separated variable's items lose the spaces around them, and an
// empty item is none: PREFLIGHT_IGNORE='a, b,' ignores a and b.
func TestCommaListSpaces(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nothing-here")
	t.Setenv("PREFLIGHT_IGNORE", " wal-on-cross-vm, data-dir-missing ,")
	out, stderr, code := runMain(t, "check", "--docker", "off", "--kube", "off", missing)
	if code != exitOK || strings.Contains(stderr, "no finding has this ID") || !strings.Contains(out, "data-dir-missing") {
		t.Errorf("PREFLIGHT_IGNORE with spaces: exit %d, stderr %q, stdout:\n%s\nwant data-dir-missing ignored, exit 0", code, stderr, out)
	}
}

// completion for a shell cobra does not know is a usage error, not its
// help with exit 0.
func TestCompletionUnknownShell(t *testing.T) {
	_, stderr, code := runMain(t, "completion", "tcsh")
	if code != exitUsage || !strings.Contains(stderr, `unknown command "tcsh" for "preflight completion"`) {
		t.Errorf("completion tcsh: exit %d, stderr %q; want a usage error", code, stderr)
	}
	if out, _, code := runMain(t, "completion", "fish"); code != exitOK || !strings.Contains(out, "complete -c preflight") {
		t.Errorf("completion fish: exit %d, stdout %.200q", code, out)
	}
}

// In `run -- -- CMD` the second "--" is the application's name, not a
// separator: a usage error, as `run -- --flag` is.
func TestRunSecondDoubleDash(t *testing.T) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "run", "--docker", "off", "--kube", "off", "--data-dir", t.TempDir(), "--", "--", "echo", "x")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || stdout.Len() > 0 || !strings.Contains(stderr.String(), "preflight: error: run: unknown flag --\n") {
		t.Errorf("run -- -- echo x: %v, stdout %q, stderr %q; want exit 2 naming --", err, stdout.String(), stderr.String())
	}
}

// A flag of a mutually exclusive group set by its variable conflicts with
// another on the command line, whatever the value, as it always did: the
// variable is set through pflag, so cobra sees the flag Changed.
func TestXorFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	for _, v := range []string{"1", "0"} {
		t.Setenv("PREFLIGHT_WRITE", v)
		_, stderr, code := runMain(t, "compose", "--docker", "off", "--project-directory", dir, "--diff")
		if code != exitUsage || !strings.Contains(stderr, "preflight: error: if any flags in the group [diff write] are set none of the others can be; [diff write] were all set") {
			t.Errorf("compose --diff with PREFLIGHT_WRITE=%s: exit %d, stderr %q; want a usage error", v, code, stderr)
		}
	}
}

// A flag's value given as the next argument must not look like a flag: an
// entrypoint "run --data-dir $EMPTY -- app" is a usage error that starts
// nothing, not a check of a directory named "--"; after run's CMD starts,
// flags are the application's.
func TestFlagValueLooksLikeFlag(t *testing.T) {
	_, stderr, code := runMain(t, "check", "--docker", "off", "--kube", "off", "--data-dir", "--format", "json")
	if code != exitUsage || !strings.Contains(stderr, `preflight: error: --data-dir: expected a value but got "--format", a flag; perhaps try --data-dir="--format"?`) {
		t.Errorf("check --data-dir --format json: exit %d, stderr %q; want a usage error", code, stderr)
	}
	// A negative number is a value: the flag's own check judges it.
	_, stderr, code = runMain(t, "check", "--docker", "off", "--kube", "off", "--data-dir", t.TempDir(), "--max-depth", "-1")
	if code != exitUsage || !strings.Contains(stderr, `--max-depth -1: must be at least 1`) {
		t.Errorf("check --max-depth -1: exit %d, stderr %q; want --max-depth's own refusal", code, stderr)
	}
	if _, stderr, code := runMain(t, "check", "--docker", "off", "--kube", "off", "--sniff-max", "-1", "--sniff-time", "-1s", t.TempDir()); code != exitOK {
		t.Errorf("check --sniff-max -1 --sniff-time -1s: exit %d, stderr %q; want 0 (no limits)", code, stderr)
	}
	// Refused before the positional arguments are counted: the flag that
	// took --to made "new" one of them.
	_, stderr, code = runMain(t, "recover", "--schema-from", "--to", "new", "src.db")
	if code != exitUsage || !strings.Contains(stderr, `preflight: error: --schema-from: expected a value but got "--to", a flag;`) {
		t.Errorf("recover --schema-from --to new src.db: exit %d, stderr %q; want the value refused", code, stderr)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
	}{
		{[]string{"--data-dir", "--", "echo", "hi"}, exitUsage, ""},
		{[]string{"--data-dir", dir, "echo", "--data-dir", "-x"}, 0, "--data-dir -x\n"},
	} {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, append([]string{"run", "--docker", "off", "--kube", "off"}, tc.args...)...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if cmd.ProcessState.ExitCode() != tc.code || stdout.String() != tc.stdout {
			t.Errorf("run %q: %v, stdout %q, stderr %q; want exit %d, stdout %q", tc.args, err, stdout.String(), stderr.String(), tc.code, tc.stdout)
		}
	}
}

// An unknown long flag names the flags it starts or is close to (pflag's
// *NotExistError), a short one and a flag without its value are pflag's
// errors as they are, and an unknown command names cobra's suggestions.
func TestFlagErrorWording(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "--formatt", "json"}, "preflight: error: unknown flag: --formatt, did you mean --format?\n"},
		{[]string{"check", "--kube-time=1s"}, "preflight: error: unknown flag: --kube-time, did you mean --kube-timeout?\n"},
		{[]string{"convert", "-z"}, "preflight: error: unknown shorthand flag: 'z' in -z\n"},
		{[]string{"check", "--bogus"}, "preflight: error: unknown flag: --bogus\n"},
		{[]string{"kube", "--file"}, "preflight: error: flag needs an argument: --file\n"},
		{[]string{"chek"}, "preflight: error: unknown command \"chek\" for \"preflight\", did you mean check?\n"},
	} {
		_, stderr, code := runMain(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
