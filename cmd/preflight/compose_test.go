package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/compose/golden")

// goldenDir holds one directory per case: the compose files, an optional
// args file (extra flags, one per line; -f FILE names are relative to the
// case), suggestions.golden (the default output) and diff.golden (--diff).
// Every case runs with --docker off --platform desktop unless its args
// name another --platform.
const goldenDir = "../../testdata/compose/golden"

func caseArgs(t *testing.T, dir string) []string {
	t.Helper()
	// The goldens' migration image: a development build has no default.
	args := []string{"compose", "--docker", "off", "--migrate-image", "preflight", "--project-directory", dir}
	b, err := os.ReadFile(filepath.Join(dir, "args"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	platform := false
	hasFile := false
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.SplitN(line, " ", 2)
		switch f[0] {
		case "--platform":
			platform = true
		case "-f":
			hasFile = true
			f[1] = filepath.Join(dir, f[1])
		case "--env-file", "--catalogue":
			f[1] = filepath.Join(dir, f[1])
		}
		args = append(args, f...)
	}
	if !platform {
		args = append(args, "--platform", "desktop")
	}
	if !hasFile {
		args = append(args, "-f", filepath.Join(dir, "compose.yaml"))
	}
	return args
}

// scrub replaces the case directory (absolute) with $CASE.
func scrub(s, dir string) string {
	return strings.ReplaceAll(s, dir, "$CASE")
}

func TestComposeGolden(t *testing.T) {
	cases, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 14 {
		t.Fatalf("%d golden cases, want at least 14", len(cases))
	}
	for _, c := range cases {
		if !c.IsDir() {
			continue
		}
		t.Run(c.Name(), func(t *testing.T) {
			dir, err := filepath.Abs(filepath.Join(goldenDir, c.Name()))
			if err != nil {
				t.Fatal(err)
			}
			args := caseArgs(t, dir)
			out, errOut, code := runMain(t, args...)
			want := verdictExit(t, out)
			if code != want {
				t.Fatalf("preflight %s: exit %d, want %d (the verdict's)\nstderr: %s", strings.Join(args, " "), code, want, errOut)
			}
			golden(t, filepath.Join(dir, "suggestions.golden"), scrub(out, dir))
			diff, errOut, code := runMain(t, append(args, "--diff")...)
			if code != want {
				t.Fatalf("preflight %s --diff: exit %d, want %d\nstderr: %s", strings.Join(args, " "), code, want, errOut)
			}
			golden(t, filepath.Join(dir, "diff.golden"), scrub(diff, dir))
			checkWrite(t, dir, args, diff != "")
		})
	}
}

// verdictExit returns the exit code the exit-code table gives the verdict
// printed on compose's last line (--fail-on error, compose's default): 3
// for unsafe, 0 otherwise.
func verdictExit(t *testing.T, out string) int {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	switch last := lines[len(lines)-1]; last {
	case "verdict: unsafe":
		return 3
	case "verdict: ok", "verdict: warn":
		return 0
	default:
		t.Fatalf("last line %q is not a verdict", last)
	}
	return -1
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(name, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("%v (run go test -run TestComposeGolden -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -run TestComposeGolden -update rewrites it)\n--- got\n%s\n--- want\n%s", filepath.Base(name), got, want)
	}
}

// checkWrite copies the case, runs --write there, checks that files with
// nothing to change are byte for byte the same, that the rewritten
// project loads in preflight and, when docker compose is installed, in
// Compose itself (docker compose config), and that a second run proposes
// nothing more.
func checkWrite(t *testing.T, dir string, args []string, changes bool) {
	t.Helper()
	tmp := t.TempDir()
	if err := os.CopyFS(tmp, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	var wargs []string
	for _, a := range args {
		wargs = append(wargs, strings.ReplaceAll(a, dir, tmp))
	}
	before := snapshot(t, tmp)
	planned, _, _ := runMain(t, append(wargs, "--format", "json")...)
	var pr preflight.Report
	if err := json.Unmarshal([]byte(planned), &pr); err != nil {
		t.Fatalf("json before --write: %v\n%s", err, planned)
	}
	written, errOut, code := runMain(t, append(wargs, "--write")...)
	if want := verdictExit(t, written); code != want {
		t.Fatalf("--write: exit %d, want %d (the verdict of the project as written)\nstderr: %s", code, want, errOut)
	}
	after := snapshot(t, tmp)
	for name, b := range before {
		if _, bak := after[name+".bak"]; bak {
			if !bytes.Equal(after[name+".bak"], b) {
				t.Errorf("%s.bak is not the original", name)
			}
			continue
		}
		if !bytes.Equal(after[name], b) {
			t.Errorf("%s changed without a backup", name)
		}
	}
	// The output is the project as written: a rewritten mount has no
	// bind finding left, and the rewrite is listed as made.
	for _, rw := range pr.Compose.Rewrites {
		if rw.Refused != "" {
			continue
		}
		for _, id := range []string{"bind-on-desktop", "bind-on-unsafe-fs"} {
			if strings.Contains(written, id+": "+rw.Service+":"+rw.Target+" ") {
				t.Errorf("--write output still reports %s for %s:%s, rewritten to %s:\n%s", id, rw.Service, rw.Target, rw.Volume, written)
			}
		}
		if !strings.Contains(written, "\nrewritten (") {
			t.Errorf("--write output does not list the rewrites made:\n%s", written)
		}
	}
	if !changes {
		if len(after) != len(before) {
			t.Errorf("--write with nothing to change made files: %d before, %d after", len(before), len(after))
		}
		return
	}
	// The rewritten project: nothing more to rewrite.
	out, _, _ := runMain(t, append(wargs, "--format", "json")...)
	var r preflight.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("json after --write: %v\n%s", err, out)
	}
	for _, rw := range r.Compose.Rewrites {
		if rw.Refused == "" {
			t.Errorf("after --write, still proposes %s:%s -> %s", rw.Service, rw.Target, rw.Volume)
		}
	}
	composeConfig(t, tmp, wargs)
}

// composeConfig runs docker compose config -q with the case's project
// flags, when the docker compose plugin is installed.
func composeConfig(t *testing.T, dir string, args []string) {
	t.Helper()
	if err := exec.Command("docker", "compose", "version").Run(); err != nil {
		if os.Getenv("CI") == "true" || os.Getenv("PREFLIGHT_REQUIRE_DOCKER") == "1" {
			t.Fatalf("docker compose not installed: %v", err)
		}
		t.Logf("docker compose not installed, rewritten files not validated by Compose: %v", err)
		return
	}
	cargs := []string{"compose"}
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-f", "--project-directory", "--profile", "--env-file", "-p":
			cargs = append(cargs, args[i], args[i+1])
			i++
		}
	}
	cargs = append(cargs, "config", "-q")
	cmd := exec.Command("docker", cargs...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "COMPOSE_PROFILES=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("docker %s: %v\n%s", strings.Join(cargs, " "), err, out)
	}
}

func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestComposeWriteCRLF: in a compose file written on Windows (CRLF line
// ends), the lines --write adds end in CRLF too, and the file still loads.
func TestComposeWriteCRLF(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "compose.yaml")
	src := "services:\r\n  app:\r\n    image: example/app\r\n    labels:\r\n      io.preflight.data-dir: /data\r\n    volumes:\r\n      - ./data:/data   # the database\r\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"compose", "--docker", "off", "--migrate-image", "preflight", "--platform", "desktop", "-f", file}
	if _, errOut, code := runMain(t, append(args, "--write")...); code != 0 {
		t.Fatalf("--write: exit %d\nstderr: %s", code, errOut)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) == src {
		t.Fatal("--write left the file as it was")
	}
	if n, crlf := bytes.Count(got, []byte("\n")), bytes.Count(got, []byte("\r\n")); n != crlf {
		t.Errorf("after --write, %d of %d line ends are CRLF:\n%q", crlf, n, got)
	}
	if !bytes.Contains(got, []byte("\r\nvolumes:\r\n")) {
		t.Errorf("after --write, no top-level volumes: block:\n%q", got)
	}
	out, errOut, _ := runMain(t, append(args, "--format", "json")...)
	var r preflight.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("json after --write: %v\n%s%s", err, out, errOut)
	}
	if len(r.Compose.Rewrites) != 0 {
		t.Errorf("after --write, still proposes %d rewrites", len(r.Compose.Rewrites))
	}
	composeConfig(t, dir, []string{"-f", file})
}

// TestComposeLoaderWarnings: Compose's loader warnings (an unset variable)
// reach the user as preflight's own warning lines and in the JSON, not as
// logrus's time=... level=warning lines.
func TestComposeLoaderWarnings(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "compose.yaml")
	src := "services:\n  app:\n    image: example/app\n    environment:\n      APP_ID: ${AppID}\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"compose", "--docker", "off", "--platform", "linux", "-f", file}
	_, errOut, code := runMain(t, args...)
	want := `preflight: warning: compose: The "AppID" variable is not set. Defaulting to a blank string.`
	if code != 0 || !strings.Contains(errOut, want) || strings.Contains(errOut, "level=") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 0 and the line %q, no logrus lines", code, errOut, want)
	}
	out, _, _ := runMain(t, append(args, "--format", "json")...)
	var r preflight.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if len(r.Compose.Warnings) != 1 || !strings.Contains(r.Compose.Warnings[0], `"AppID" variable is not set`) {
		t.Errorf("compose.warnings = %q, want the unset AppID warning", r.Compose.Warnings)
	}
}
