package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The images' binary (-tags nocompose) links no compose-go loader and no
// JSON-schema validator, runs every other command, and says what is
// missing when asked for compose.
func TestNoComposeBuild(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go command not found: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-tags", "nocompose", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, d := range strings.Fields(string(out)) {
		if strings.HasPrefix(d, "github.com/santhosh-tekuri/jsonschema") || strings.HasPrefix(d, "github.com/compose-spec/compose-go/v2/loader") {
			t.Errorf("the nocompose build depends on %s", d)
		}
	}

	lean := filepath.Join(t.TempDir(), "preflight-nocompose")
	build := exec.Command(goTool, "build", "-tags", "nocompose", "-o", lean, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags nocompose: %v\n%s", err, b)
	}
	exitOf := func(err error) int {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	}

	dir := filepath.Join(t.TempDir(), "proj")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "compose.yaml"), []byte("services:\n  app:\n    image: x\n    volumes: [\"./data:/data\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(lean, "compose", "--docker", "off", "-f", filepath.Join(dir, "compose.yaml"))
	cmd.Stderr = &stderr
	if code := exitOf(cmd.Run()); code != exitInternal {
		t.Errorf("compose in the nocompose build exited %d, want %d; stderr: %s", code, exitInternal, stderr.String())
	}
	if !strings.Contains(stderr.String(), "built without compose support") || !strings.Contains(stderr.String(), "hint:") {
		t.Errorf("compose in the nocompose build printed %q, want the error and a hint", stderr.String())
	}

	// Nor preflight kube.
	stderr.Reset()
	cmd = exec.Command(lean, "kube", "-f", filepath.Join(dir, "compose.yaml"))
	cmd.Stderr = &stderr
	if code := exitOf(cmd.Run()); code != exitInternal || !strings.Contains(stderr.String(), "built without manifest support") {
		t.Errorf("kube in the nocompose build exited %d with %q, want %d and the reason", code, stderr.String(), exitInternal)
	}

	// Nor kube policy (no catalogue to compile in) or kube audit.
	for _, args := range [][]string{{"kube", "policy"}, {"kube", "audit", "--kubeconfig", filepath.Join(dir, "none")}} {
		stderr.Reset()
		var stdout bytes.Buffer
		cmd = exec.Command(lean, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if code := exitOf(cmd.Run()); code != exitInternal || stdout.Len() > 0 || !strings.Contains(stderr.String(), "built without manifest support") {
			t.Errorf("%s in the nocompose build exited %d with %q, stdout %d bytes; want %d, the reason and nothing written", args, code, stderr.String(), stdout.Len(), exitInternal)
		}
	}

	// --help does not offer them.
	help, err := exec.Command(lean, "--help").Output()
	if err != nil {
		t.Fatalf("--help: %v", err)
	}
	if strings.Contains(string(help), "\n  compose") {
		t.Errorf("--help of the nocompose build lists compose:\n%s", help)
	}
	if strings.Contains(string(help), "\n  kube") {
		t.Errorf("--help of the nocompose build lists kube:\n%s", help)
	}
	if !strings.Contains(string(help), "\n  convert") {
		t.Errorf("--help of the nocompose build lists no convert:\n%s", help)
	}

	data := t.TempDir()
	stderr.Reset()
	cmd = exec.Command(lean, "run", "--docker", "off", "--data-dir", data, "--", "/bin/sh", "-c", "exit 7")
	cmd.Stderr = &stderr
	if code := exitOf(cmd.Run()); code != 7 {
		t.Errorf("run in the nocompose build exited %d, want the application's 7; stderr: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "checked: "+data) {
		t.Errorf("run in the nocompose build logged %q, want the checked line", stderr.String())
	}
}

// `preflight run` parses with a tree of run alone (runCommand): its help and
// its flags must be those of the full tree.
func TestRunTreeMatchesFullTree(t *testing.T) {
	help := func(tree []command) string {
		var out bytes.Buffer
		g := &Globals{ctx: context.Background(), stdout: &out, stderr: &out}
		root := newRoot(g, tree)
		root.SetArgs([]string{"run", "--help"})
		_ = root.Execute()
		return out.String()
	}
	full, alone := help(commands), help([]command{newRunCmd})
	if full == "" || full != alone {
		t.Errorf("run --help differs between the full tree and the run tree:\n--- full\n%s\n--- run alone\n%s", full, alone)
	}
	stdout, stderr, code := runMain(t, "run", "--help")
	if code != 0 || stdout != full {
		t.Errorf("preflight run --help: exit %d, stdout %q, stderr %q; want the full tree's help", code, stdout, stderr)
	}
}
