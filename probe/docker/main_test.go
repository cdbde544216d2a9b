package docker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/probe/docker"
)

// Tests that need a Docker engine skip with a message when the default
// socket does not answer, unless PREFLIGHT_REQUIRE_DOCKER=1 or CI=true,
// which turn the skip into a failure. Every container, volume and image
// they create carries the label preflight.test=<runID> and is removed by
// TestMain.

var runID = fmt.Sprintf("pft%d", os.Getpid())

var (
	engineOnce sync.Once
	engineRes  docker.Result

	imageOnce sync.Once
	imageTag  string
	imageErr  error
	workDir   string
)

func TestMain(m *testing.M) {
	if os.Getenv("PREFLIGHT_DOCKER_HELPER") != "" {
		os.Exit(helperMain())
	}
	code := m.Run()
	if imageTag != "" {
		cleanup()
	}
	if workDir != "" {
		os.RemoveAll(workDir)
	}
	os.Exit(code)
}

// needDocker skips (or fails, see above) unless the engine answers.
func needDocker(tb testing.TB) {
	tb.Helper()
	engineOnce.Do(func() {
		engineRes = docker.WritersOf(context.Background(), "", "", docker.Options{Host: docker.DefaultHost, Timeout: 5 * time.Second})
	})
	if engineRes.Status == docker.StatusRan {
		return
	}
	msg := fmt.Sprintf("docker engine not answering at %s (status %s: %s)", docker.DefaultHost, engineRes.Status, engineRes.Err)
	if os.Getenv("PREFLIGHT_REQUIRE_DOCKER") == "1" || os.Getenv("CI") == "true" {
		tb.Fatalf("%s; PREFLIGHT_REQUIRE_DOCKER=1 or CI=true requires it", msg)
	}
	tb.Skipf("skipping: %s; set PREFLIGHT_REQUIRE_DOCKER=1 to fail instead", msg)
}

// testImage builds internal/testprobe static and a FROM scratch image
// around it, once per run.
func testImage(tb testing.TB) string {
	tb.Helper()
	needDocker(tb)
	imageOnce.Do(func() {
		dir, err := os.MkdirTemp("", "preflight-docker-test-")
		if err != nil {
			imageErr = err
			return
		}
		workDir = dir
		build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "testprobe"), "./internal/testprobe")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			imageErr = fmt.Errorf("go build testprobe: %v\n%s", err, out)
			return
		}
		df := "FROM scratch\nCOPY testprobe /testprobe\nENTRYPOINT [\"/testprobe\"]\nCMD [\"sleep\"]\n"
		if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
			imageErr = err
			return
		}
		tag := "preflight-docker-test:" + runID
		if _, err := dockerCmd("build", "-q", "--label", "preflight.test="+runID, "-t", tag, dir); err != nil {
			imageErr = err
			return
		}
		imageTag = tag
	})
	if imageErr != nil {
		tb.Fatalf("build test image: %v", imageErr)
	}
	return imageTag
}

// dockerCmd runs the docker CLI and returns its trimmed stdout.
func dockerCmd(args ...string) (string, error) {
	cmd := exec.Command("docker", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

func mustDocker(tb testing.TB, args ...string) string {
	tb.Helper()
	out, err := dockerCmd(args...)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// runSleeper starts a detached sleeper container with extra docker run
// arguments and returns its full id.
func runSleeper(tb testing.TB, args ...string) string {
	tb.Helper()
	img := testImage(tb)
	a := append([]string{"run", "-d", "--label", "preflight.test=" + runID}, args...)
	a = append(a, img, "sleep")
	return mustDocker(tb, a...)
}

// probeInside creates a container running `testprobe probe PATHS...` with
// the extra docker arguments, runs it attached and returns its id and the
// decoded Result.
func probeInside(tb testing.TB, dockerArgs []string, paths ...string) (string, docker.Result) {
	tb.Helper()
	img := testImage(tb)
	a := append([]string{"create", "--label", "preflight.test=" + runID}, dockerArgs...)
	a = append(a, img, "probe", "-timeout", "10s")
	a = append(a, paths...)
	id := mustDocker(tb, a...)
	out := mustDocker(tb, "start", "-a", id)
	var r docker.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		tb.Fatalf("decode probe output: %v\n%s", err, out)
	}
	return id, r
}

func cleanup() {
	filter := "label=preflight.test=" + runID
	if ids, _ := dockerCmd("ps", "-aq", "--filter", filter); ids != "" {
		removeContainers(strings.Fields(ids))
	}
	if vols, _ := dockerCmd("volume", "ls", "-q", "--filter", filter); vols != "" {
		dockerCmd(append([]string{"volume", "rm", "-f"}, strings.Fields(vols)...)...)
	}
	dockerCmd("rmi", "-f", imageTag)
}

// removeContainers removes containers in parallel batches.
func removeContainers(ids []string) {
	var wg sync.WaitGroup
	for len(ids) > 0 {
		n := min(25, len(ids))
		batch := ids[:n]
		ids = ids[n:]
		wg.Add(1)
		go func() {
			defer wg.Done()
			dockerCmd(append([]string{"rm", "-f"}, batch...)...)
		}()
	}
	wg.Wait()
}

// helperMain runs in a re-executed test binary (see TestDenied): it
// prints WritersOf against $PREFLIGHT_DOCKER_HELPER_HOST as JSON.
func helperMain() int {
	r := docker.WritersOf(context.Background(), "v", "", docker.Options{
		Host:    os.Getenv("PREFLIGHT_DOCKER_HELPER_HOST"),
		Timeout: 2 * time.Second,
	})
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		return 1
	}
	return 0
}

func writerNames(ws []docker.Writer) map[string]docker.Writer {
	m := map[string]docker.Writer{}
	for _, w := range ws {
		m[w.Container.ID] = w
	}
	return m
}

func dumpJSON(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
