// Package integration_test runs the static preflight binary the way users
// do: as the ENTRYPOINT of the example image (examples/Dockerfile) in front
// of the demo app, over bind mounts, named volumes, the container's writable
// layer and a FUSE mount named grpcfuse (Docker Desktop's file sharing as
// seen from a container).
//
// The tests drive the docker CLI. Without a reachable Docker daemon they
// skip, unless PREFLIGHT_REQUIRE_DOCKER=1 or CI=true: then they fail. The
// FUSE cases also need root and /dev/fuse, under the same rule.
package integration_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Bounds on external commands.
const (
	dockerTimeout = 2 * time.Minute  // one docker CLI call
	buildTimeout  = 10 * time.Minute // go build (cold modernc.org/sqlite), docker build
)

var (
	required = os.Getenv("PREFLIGHT_REQUIRE_DOCKER") == "1" || os.Getenv("CI") == "true"

	// Set by TestMain.
	repoRoot   string
	binDir     string // preflight, demoapp built with CGO_ENABLED=0
	buildErr   error  // building the binaries failed
	dockerErr  error  // docker not reachable
	imageErr   error  // building the example image failed
	runID      string // unique per test run
	image      string // example image tag
	label      string // key=value label on every container and volume made
	toRemove   []string
	contextDir string // temp dir holding build contexts
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	var err error
	if repoRoot, err = filepath.Abs(".."); err != nil {
		fmt.Fprintf(os.Stderr, "integration: %v\n", err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "preflight-it-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	binDir = filepath.Join(tmp, "bin")
	contextDir = filepath.Join(tmp, "context")

	var b [4]byte
	_, _ = rand.Read(b[:])
	runID = hex.EncodeToString(b[:])
	image = "preflight-it:" + runID
	label = "preflight-it=" + runID

	start := time.Now()
	buildErr = buildBinaries(binDir)
	logf("built binaries in %v (err: %v)", time.Since(start).Round(time.Millisecond), buildErr)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	if _, err := dockerCmd(ctx, "info", "--format", "{{.ServerVersion}}"); err != nil {
		dockerErr = err
	}
	cancel()
	if dockerErr == nil && buildErr == nil {
		start = time.Now()
		imageErr = buildImage(image, "examples/Dockerfile", map[string]string{
			"bin/preflight-nocompose": filepath.Join(binDir, "preflight-nocompose"),
			"bin/demoapp":             filepath.Join(binDir, "demoapp"),
			".dockerignore":           filepath.Join(repoRoot, "examples/.dockerignore"),
		}, "rootfs/data")
		logf("built image %s in %v (err: %v)", image, time.Since(start).Round(time.Millisecond), imageErr)
	}

	code := m.Run()
	if dockerErr == nil {
		cleanupDocker()
	}
	return code
}

func logf(format string, args ...any) {
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "integration: "+format+"\n", args...)
	}
}

// buildBinaries builds static preflight, preflight-nocompose (the images'
// binary) and demoapp into dir, as scripts/build.sh does.
func buildBinaries(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	for _, b := range []struct{ name, pkg, tags string }{
		{"preflight", "./cmd/preflight", ""},
		{"preflight-nocompose", "./cmd/preflight", "nocompose"},
		{"demoapp", "./examples/demoapp", ""},
	} {
		cmd := exec.CommandContext(ctx, "go", "build", "-tags", b.tags, "-trimpath",
			"-ldflags", "-s -w -X main.version=integration-test",
			"-o", filepath.Join(dir, b.name), b.pkg)
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %w\n%s", b.name, err, out)
		}
	}
	return nil
}

// buildImage builds tag from the repository's dockerfile (a path relative
// to the repository root) in a fresh context holding the given files
// (context path -> source path) and empty directories.
func buildImage(tag, dockerfile string, files map[string]string, dirs ...string) error {
	if err := os.MkdirAll(contextDir, 0o755); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(contextDir, "ctx-")
	if err != nil {
		return err
	}
	files["Dockerfile"] = filepath.Join(repoRoot, dockerfile)
	for dst, src := range files {
		if err := copyFile(src, filepath.Join(dir, dst)); err != nil {
			return err
		}
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	if _, err := dockerCmd(ctx, "build", "-q", "--label", label, "-t", tag, dir); err != nil {
		return fmt.Errorf("build image from %s: %w", dockerfile, err)
	}
	toRemove = append(toRemove, tag)
	return nil
}

// toolImage builds the preflight image (the repository's Dockerfile,
// FROM scratch, with the static preflight-nocompose) as name:runID and
// returns its tag.
func toolImage(t *testing.T, name string) string {
	t.Helper()
	tag := name + ":" + runID
	if err := buildImage(tag, "Dockerfile", map[string]string{
		"bin/preflight-nocompose": filepath.Join(binDir, "preflight-nocompose"),
		".dockerignore":           filepath.Join(repoRoot, ".dockerignore"),
		"entrypoint.sh":           filepath.Join(repoRoot, "entrypoint.sh"),
	}, "rootfs/tmp"); err != nil {
		t.Fatal(err)
	}
	return tag
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, st.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// cleanupDocker removes every container and volume labelled for this run,
// then the images built.
func cleanupDocker() {
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	if out, err := dockerCmd(ctx, "ps", "-aq", "--filter", "label="+label); err == nil && strings.TrimSpace(out) != "" {
		_, _ = dockerCmd(ctx, append([]string{"rm", "-f"}, strings.Fields(out)...)...)
	}
	if out, err := dockerCmd(ctx, "volume", "ls", "-q", "--filter", "label="+label); err == nil && strings.TrimSpace(out) != "" {
		_, _ = dockerCmd(ctx, append([]string{"volume", "rm", "-f"}, strings.Fields(out)...)...)
	}
	if len(toRemove) > 0 {
		if _, err := dockerCmd(ctx, append([]string{"rmi", "-f"}, toRemove...)...); err != nil {
			fmt.Fprintf(os.Stderr, "integration: remove images: %v\n", err)
		}
	}
}

// dockerCmd runs the docker CLI and returns its stdout; a non-zero exit is
// an error carrying stderr.
func dockerCmd(ctx context.Context, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// requireBinaries stops the test when the static binaries did not build.
func requireBinaries(t *testing.T) {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("build binaries: %v", buildErr)
	}
}

// requireDocker skips the test without a reachable Docker daemon (fails
// instead when Docker is required) and fails it if the image did not build.
func requireDocker(t *testing.T) {
	t.Helper()
	requireBinaries(t)
	if dockerErr != nil {
		if required {
			t.Fatalf("docker not reachable (PREFLIGHT_REQUIRE_DOCKER=1 or CI=true): %v", dockerErr)
		}
		t.Skipf("docker not reachable: %v", dockerErr)
	}
	if imageErr != nil {
		t.Fatalf("build example image: %v", imageErr)
	}
}

// result is a finished command.
type result struct {
	args           []string
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// run runs name with args, bounded by timeout, and returns its output and
// exit code; failing to start it or a timeout fails the test.
func run(t *testing.T, timeout time.Duration, env []string, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	start := time.Now()
	err := cmd.Run()
	r := result{args: append([]string{name}, args...), stdout: stdout.String(), stderr: stderr.String()}
	if ctx.Err() != nil {
		t.Fatalf("%s: timed out after %v\n%s", strings.Join(r.args, " "), timeout, r)
	}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		r.code = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", strings.Join(r.args, " "), err)
	}
	t.Logf("%s: exit %d in %v", strings.Join(r.args, " "), r.code, time.Since(start).Round(time.Millisecond))
	return r
}

// docker runs the docker CLI with a per-call timeout.
func docker(t *testing.T, args ...string) result {
	t.Helper()
	return run(t, dockerTimeout, nil, "docker", args...)
}

// dockerRun runs `docker run --rm --label <run label> args...`.
func dockerRun(t *testing.T, args ...string) result {
	t.Helper()
	return docker(t, append([]string{"run", "--rm", "--label", label}, args...)...)
}

// wantCode fails the test unless r exited with code.
func wantCode(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\n%s", r.code, code, r)
	}
}
