package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"
)

// actionScript is the GitHub Action's logic (action.yml runs it).
const actionScript = "../../scripts/action.sh"

// releaseDir writes a release as the action expects it into a new
// directory: preflight_VERSION_linux_ARCH.tar.gz holding the test binary,
// and SHA256SUMS. It returns the directory and the archive's name.
func releaseDir(t *testing.T, version string) (string, string) {
	t.Helper()
	exe, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	tw := tar.NewWriter(zw)
	for _, f := range []struct {
		name string
		mode int64
		body []byte
	}{{"README.md", 0o644, []byte("preflight\n")}, {"preflight", 0o755, exe}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	name := fmt.Sprintf("preflight_%s_linux_%s.tar.gz", version, runtime.GOARCH)
	if err := os.WriteFile(filepath.Join(dir, name), gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(gz.Bytes())
	sums := fmt.Sprintf("%s  preflight_%s_darwin_arm64.tar.gz\n%s  %s\n", strings.Repeat("0", 64), version, hex.EncodeToString(sum[:]), name)
	if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(sums), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, name
}

// skipActionPlatform skips a test on a platform releaseDir builds no
// archive for.
func skipActionPlatform(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skipf("the action test builds a linux/amd64 or linux/arm64 release, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
}

// runAction runs the action's script in project directory dir with the
// given environment and returns its exit code, stderr and the outputs it
// wrote to GITHUB_OUTPUT.
func runAction(t *testing.T, dir string, env ...string) (int, string, string) {
	t.Helper()
	script, err := filepath.Abs(actionScript)
	if err != nil {
		t.Fatal(err)
	}
	outputs := filepath.Join(t.TempDir(), "github-output")
	arch := map[string]string{"amd64": "X64", "arm64": "ARM64"}[runtime.GOARCH]
	cmd := exec.Command("bash", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RUNNER_OS=Linux", "RUNNER_ARCH="+arch, "GITHUB_OUTPUT="+outputs)
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %s: %v", script, err)
	}
	out, _ := os.ReadFile(outputs)
	return code, stderr.String(), string(out)
}

// actionProject skips unless the test binary can be a release archive
// here, and returns a release of version (releaseDir: its directory and
// archive name) and a project directory with data/ bound to app:/data by
// compose.yaml.
func actionProject(t *testing.T, version string) (rel, archive, project string) {
	t.Helper()
	skipActionPlatform(t)
	rel, archive = releaseDir(t, version)
	project = t.TempDir()
	if err := os.Mkdir(filepath.Join(project, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "compose.yaml"), []byte("services:\n  app:\n    image: example/app\n    volumes:\n      - ./data:/data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return rel, archive, project
}

// TestActionScript: the action downloads the release archive, verifies it
// against SHA256SUMS, runs the command and writes SARIF and the verdict;
// an archive whose checksum does not match is never run.
func TestActionScript(t *testing.T) {
	const version = "0.0.0-test"
	rel, archive, project := actionProject(t, version)
	sch := loadSARIFSchema(t)
	args := "INPUT_ARGS=compose --docker off --platform desktop --data-dir app:/data"

	code, stderr, outputs := runAction(t, project, "INPUT_VERSION=v"+version, "PREFLIGHT_BASE_URL=file://"+rel, args)
	if code != exitUnsafe || !strings.Contains(outputs, "verdict=unsafe\n") || !strings.Contains(outputs, "exit-code=3\n") || !strings.Contains(stderr, "verified "+archive) {
		t.Fatalf("action on an unsafe project: exit %d, outputs %q, want 3 with verdict=unsafe, exit-code=3\n%s", code, outputs, stderr)
	}
	sarifOut, err := os.ReadFile(filepath.Join(project, "preflight.sarif"))
	if err != nil {
		t.Fatal(err)
	}
	l := decodeSARIF(t, sch, string(sarifOut))
	if r := sarifFind(t, l, "bind-on-desktop"); r.Locations[0].PhysicalLocation.Region.StartLine != 5 {
		t.Errorf("bind-on-desktop at line %d of compose.yaml, want 5", r.Locations[0].PhysicalLocation.Region.StartLine)
	}

	// fail: false passes the step and leaves the verdict to the outputs; a
	// local directory works as the base URL.
	code, stderr, outputs = runAction(t, project, "INPUT_VERSION="+version, "PREFLIGHT_BASE_URL="+rel, "INPUT_FAIL=false", "INPUT_SARIF_FILE=out.sarif", args)
	if code != 0 || !strings.Contains(outputs, "verdict=unsafe\n") || !strings.Contains(outputs, "sarif-file=out.sarif\n") {
		t.Errorf("action with fail: false: exit %d, outputs %q; want 0, verdict=unsafe, sarif-file=out.sarif\n%s", code, outputs, stderr)
	}

	t.Run("tampered", func(t *testing.T) { testActionTampered(t, project, version, args) })
}

// testActionTampered: a checksum that does not match the archive, or an
// archive SHA256SUMS does not list, fails before preflight runs.
func testActionTampered(t *testing.T, project, version, args string) {
	for _, tt := range []struct {
		name   string
		tamper func(sums, archive []byte, name string) ([]byte, []byte)
		want   string
	}{
		{"checksum changed", func(sums, archive []byte, name string) ([]byte, []byte) {
			i := bytes.Index(sums, []byte("  "+name)) - 64 // the first hex digit of the archive's line
			s := bytes.Clone(sums)
			s[i] = '0'
			if sums[i] == '0' {
				s[i] = '1'
			}
			return s, archive
		}, "checksum mismatch"},
		{"archive changed", func(sums, archive []byte, name string) ([]byte, []byte) {
			return sums, append(bytes.Clone(archive), 0)
		}, "checksum mismatch"},
		{"archive not listed", func(sums, archive []byte, name string) ([]byte, []byte) {
			return bytes.ReplaceAll(sums, []byte("  "+name), []byte("  other.tar.gz")), archive
		}, "is not listed in SHA256SUMS"},
	} {
		rel, name := releaseDir(t, version)
		sums, _ := os.ReadFile(filepath.Join(rel, "SHA256SUMS"))
		arc, _ := os.ReadFile(filepath.Join(rel, name))
		sums, arc = tt.tamper(sums, arc, name)
		os.WriteFile(filepath.Join(rel, "SHA256SUMS"), sums, 0o644)
		os.WriteFile(filepath.Join(rel, name), arc, 0o644)
		sarif := filepath.Join(project, tt.name+".sarif")
		code, stderr, outputs := runAction(t, project, "INPUT_VERSION="+version, "PREFLIGHT_BASE_URL=file://"+rel, "INPUT_SARIF_FILE="+sarif, args)
		if code != exitInternal || !strings.Contains(stderr, tt.want) || outputs != "" {
			t.Errorf("action, %s: exit %d, outputs %q; want 1 with %q and no outputs\n%s", tt.name, code, outputs, tt.want, stderr)
		}
		if _, err := os.Stat(sarif); err == nil {
			t.Errorf("action, %s: preflight ran (%s written)", tt.name, sarif)
		}
	}
}

// TestActionArgs: the args input is split into words on spaces and line
// breaks (args: | over several lines), quotes group words, an input of
// only whitespace is the default, and an unmatched quote fails before
// preflight runs.
func TestActionArgs(t *testing.T) {
	const version = "0.0.0-test"
	skipActionPlatform(t)
	rel, _ := releaseDir(t, version)
	project := t.TempDir()
	for name, body := range map[string]string{
		// compose.yaml is safe; the prod files bind a host directory on
		// Docker Desktop (exit 3).
		"compose.yaml":      "services:\n  app:\n    image: example/app\n    volumes:\n      - data:/data\nvolumes:\n  data: {}\n",
		"compose.prod.yaml": "services:\n  app:\n    image: example/app\n    volumes:\n      - ./data:/data\n",
		"my prod.yaml":      "services:\n  app:\n    image: example/app\n    volumes:\n      - ./data:/data\n",
	} {
		if err := os.WriteFile(filepath.Join(project, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name, args string
		code       int
		stderr     string
	}{
		{"one line", "compose --docker off --platform desktop --data-dir app:/data -f compose.prod.yaml", exitUnsafe, ""},
		{"multi-line", "compose --docker off --platform desktop\n  --data-dir app:/data\n-f compose.prod.yaml\n", exitUnsafe,
			"preflight compose --docker off --platform desktop --data-dir app:/data -f compose.prod.yaml --format sarif"},
		{"tabs and blank lines", "compose\t--docker off\n\n--platform desktop --data-dir app:/data", exitOK, ""},
		{"single quotes", "compose --docker off --platform desktop --data-dir app:/data -f 'my prod.yaml'", exitUnsafe, `-f my\ prod.yaml --format sarif`},
		{"double quotes over lines", "compose --docker off\n--platform desktop --data-dir app:/data\n-f \"my prod.yaml\"", exitUnsafe, `-f my\ prod.yaml --format sarif`},
		{"only whitespace", " \n\t\n", exitOK, "preflight compose --check --format sarif"},
		{"unmatched quote", "compose --docker off -f 'my prod.yaml", exitInternal, "preflight-action: error: args: unmatched single quote"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sarif := filepath.Join(t.TempDir(), "out.sarif")
			code, stderr, outputs := runAction(t, project, "INPUT_VERSION="+version, "PREFLIGHT_BASE_URL="+rel, "INPUT_SARIF_FILE="+sarif, "INPUT_ARGS="+tt.args)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("action with args %q: exit %d, want %d with %q in stderr; outputs %q\n%s", tt.args, code, tt.code, tt.stderr, outputs, stderr)
			}
			if _, err := os.Stat(sarif); tt.code == exitInternal && err == nil {
				t.Errorf("action with args %q: preflight ran (%s written)", tt.args, sarif)
			}
		})
	}
}

// TestActionVersionFromRef: without the version input, the Action runs
// the release it is used at (uses: preflight-sqlite/preflight@v1.2.3),
// read from github.action_ref (action.yml's PREFLIGHT_ACTION_REF), else
// GITHUB_ACTION_REF, else the last part of GITHUB_ACTION_PATH; a ref that
// is not a release tag runs latest and says so.
func TestActionVersionFromRef(t *testing.T) {
	const version = "0.0.0-test"
	rel, _, project := actionProject(t, version)
	// No ref from the test's own environment (a CI runner's).
	clean := []string{"INPUT_VERSION=", "PREFLIGHT_ACTION_REF=", "GITHUB_ACTION_REF=", "GITHUB_ACTION_PATH=", "PREFLIGHT_BASE_URL=" + rel, "INPUT_ARGS=check --docker off data"}
	for _, ref := range [][]string{
		{"PREFLIGHT_ACTION_REF=v" + version},
		{"GITHUB_ACTION_REF=v" + version},
		{"GITHUB_ACTION_PATH=/home/runner/work/_actions/preflight-sqlite/preflight/v" + version},
	} {
		code, stderr, outputs := runAction(t, project, append(clean, ref...)...)
		if code != 0 || !strings.Contains(outputs, "version="+version+"\n") || !strings.Contains(stderr, "the release the Action is used at (@v"+version+")") {
			t.Errorf("action with %s and no version input: exit %d, outputs %q; want 0 and version=%s\n%s", ref[0], code, outputs, version, stderr)
		}
	}
	// A branch runs latest, which the log names; the lookup of latest
	// fails here (no proxy answers), so nothing runs.
	for _, ref := range []string{"main", "v1", "0123456789abcdef0123456789abcdef01234567"} {
		code, stderr, outputs := runAction(t, project, append(clean, "PREFLIGHT_ACTION_REF="+ref, "https_proxy=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9")...)
		want := "version: latest, since the Action's ref '" + ref + "' is not a release tag"
		if code != exitInternal || !strings.Contains(stderr, want) || !strings.Contains(stderr, "could not find the latest release") || outputs != "" {
			t.Errorf("action at ref %s: exit %d, outputs %q; want 1, %q and the latest release looked up\n%s", ref, code, outputs, want, stderr)
		}
	}
	// The version input wins over the ref.
	code, stderr, outputs := runAction(t, project, append(clean, "PREFLIGHT_ACTION_REF=main", "INPUT_VERSION=v"+version)...)
	if code != 0 || !strings.Contains(outputs, "version="+version+"\n") || strings.Contains(stderr, "latest") {
		t.Errorf("action with version v%s at ref main: exit %d, outputs %q; want 0, version=%s, no latest\n%s", version, code, outputs, version, stderr)
	}
}

// TestExampleWorkflowsUseTheAction: the example workflows run preflight
// through this repository's Action pinned to a release tag, which picks
// the version (no version input, no setup-go or go install), with
// arguments preflight accepts.
func TestExampleWorkflowsUseTheAction(t *testing.T) {
	release := regexp.MustCompile(`^preflight-sqlite/preflight@v[0-9]+\.[0-9]+\.[0-9]+$`)
	for _, name := range []string{"github-workflow.yml", "code-scanning.yml"} {
		b, err := os.ReadFile(filepath.Join("../../examples", name))
		if err != nil {
			t.Fatal(err)
		}
		var wf struct {
			Jobs map[string]struct {
				Steps []struct {
					Uses string            `yaml:"uses"`
					Run  string            `yaml:"run"`
					With map[string]string `yaml:"with"`
				} `yaml:"steps"`
			} `yaml:"jobs"`
		}
		if err := yaml.Unmarshal(b, &wf); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		actions := 0
		for job, j := range wf.Jobs {
			for i, s := range j.Steps {
				if strings.HasPrefix(s.Uses, "actions/setup-go") || strings.Contains(s.Run, "go install") || strings.Contains(s.Run, "go build") {
					t.Errorf("%s: job %s step %d builds preflight (%s%s); want the Action", name, job, i, s.Uses, s.Run)
				}
				if !strings.HasPrefix(s.Uses, "preflight-sqlite/preflight") {
					continue
				}
				actions++
				if !release.MatchString(s.Uses) {
					t.Errorf("%s: uses %s, want the Action pinned to a release tag (@vX.Y.Z)", name, s.Uses)
				}
				if v, ok := s.With["version"]; ok {
					t.Errorf("%s: version: %s given; the Action's tag picks it", name, v)
				}
				args := append(strings.Fields(s.With["args"]), "--help")
				if _, stderr, code := runMain(t, args...); code != exitOK {
					t.Errorf("%s: preflight %s: exit %d, want 0:\n%s", name, strings.Join(args, " "), code, stderr)
				}
			}
		}
		if actions == 0 {
			t.Errorf("%s: no step uses preflight-sqlite/preflight", name)
		}
	}
}
