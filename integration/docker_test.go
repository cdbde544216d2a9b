package integration_test

import (
	"archive/tar"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/fuseloop"
	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// report is the part of preflight's JSON report (schema preflight/v1) that
// these tests assert on.
type report struct {
	Schema   string `json:"schema"`
	Verdict  string `json:"verdict"`
	DataDirs []struct {
		Path      string     `json:"path"`
		Mount     *mountInfo `json:"mount"`
		Databases []struct {
			Path        string `json:"path"`
			JournalMode string `json:"journal_mode"`
		} `json:"databases"`
	} `json:"data_dirs"`
	Findings []struct {
		ID      string `json:"id"`
		Level   string `json:"level"`
		Path    string `json:"path"`
		Message string `json:"message"`
	} `json:"findings"`
}

// mountInfo is a classified mount, as in `preflight mounts --format json
// PATH` and a report's data_dirs[].mount.
type mountInfo struct {
	Mountpoint string `json:"mountpoint"`
	FSType     string `json:"fstype"`
	Source     string `json:"source"`
	Class      string `json:"class"`
	Platform   string `json:"platform"`
	Reason     string `json:"reason"`
}

// findings returns the report's findings as id -> level.
func (r report) findings() map[string]string {
	m := make(map[string]string)
	for _, f := range r.Findings {
		m[f.ID] = f.Level
	}
	return m
}

// assertReport checks a report on /data: its verdict, the data directory's
// filesystem class, that app.db was seen in WAL mode, and the findings that
// are warnings or errors (id -> level).
func assertReport(t *testing.T, r report, verdict, class string, want map[string]string) {
	t.Helper()
	if r.Schema != "preflight/v1" {
		t.Errorf("schema = %q, want preflight/v1", r.Schema)
	}
	if r.Verdict != verdict {
		t.Errorf("verdict = %q, want %q", r.Verdict, verdict)
	}
	if len(r.DataDirs) != 1 {
		t.Fatalf("data_dirs has %d entries, want 1 (/data)", len(r.DataDirs))
	}
	d := r.DataDirs[0]
	if d.Mount == nil {
		t.Errorf("data_dirs[0].mount is missing")
	} else if d.Mount.Class != class {
		t.Errorf("data_dirs[0].mount.class = %q, want %q (mount %+v)", d.Mount.Class, class, *d.Mount)
	}
	found := false
	for _, db := range d.Databases {
		if db.Path == "/data/app.db" {
			found = true
			if db.JournalMode != "wal" {
				t.Errorf("/data/app.db journal_mode = %q, want wal", db.JournalMode)
			}
		}
	}
	if !found {
		t.Errorf("data_dirs[0].databases has no /data/app.db: %+v", d.Databases)
	}
	got := make(map[string]string)
	for id, level := range r.findings() {
		if level == "warn" || level == "error" {
			got[id] = level
		}
	}
	if len(got) != len(want) {
		t.Errorf("warn/error findings = %v, want %v", got, want)
		return
	}
	for id, level := range want {
		if got[id] != level {
			t.Errorf("warn/error findings = %v, want %v", got, want)
			return
		}
	}
}

// seed writes a WAL database /data/app.db with five rows, running the demo
// app directly (no preflight) with the given docker run options.
func seed(t *testing.T, opts ...string) {
	t.Helper()
	args := append(opts, "--entrypoint", "/demoapp", "-e", "DEMO_ROWS=5", image)
	r := dockerRun(t, args...)
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "journal_mode=wal db=/data/app.db") {
		t.Fatalf("seeding did not make a WAL database:\n%s", r)
	}
}

// check runs `preflight check --format json /data` in a new container with
// the given docker run options, checks its exit code and returns the report.
func check(t *testing.T, code int, opts ...string) report {
	t.Helper()
	args := append(opts, "--entrypoint", "/preflight", image, "check", "--format", "json", "/data")
	return decodeReport(t, dockerRun(t, args...), code)
}

func decodeReport(t *testing.T, r result, code int) report {
	t.Helper()
	wantCode(t, r, code)
	var rep report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, r)
	}
	return rep
}

// volume creates a labelled named volume, removed when the test ends.
func volume(t *testing.T) string {
	t.Helper()
	name := "preflight-it-" + runID + "-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	wantCode(t, docker(t, "volume", "create", "--label", label, name), 0)
	t.Cleanup(func() { docker(t, "volume", "rm", "-f", name) })
	return name
}

// hostDir returns an empty directory writable by the image's user (65532).
func hostDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// grpcfuseDir returns a host directory (writable by the image's user) and
// a FUSE loopback mount of it listed as fuse.grpcfuse (Docker Desktop's
// file sharing), unmounted when the test ends; it skips without FUSE.
func grpcfuseDir(t *testing.T) (backing, mnt string) {
	t.Helper()
	testdb.NeedFUSE(t)
	backing, mnt = hostDir(t), t.TempDir()
	unmount, err := fuseloop.Mount(backing, mnt, "grpcfuse")
	if err != nil {
		t.Fatalf("fuseloop.Mount(%q, %q, grpcfuse): %v", backing, mnt, err)
	}
	t.Cleanup(func() {
		if err := unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return backing, mnt
}

// waitLog waits up to 30s for a line starting with prefix in the logs of
// container id, and returns the logs.
func waitLog(t *testing.T, id, prefix string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := docker(t, "logs", id)
		logs := r.stdout + r.stderr
		for _, line := range strings.Split(logs, "\n") {
			if strings.HasPrefix(line, prefix) {
				return logs
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("container %s: no line %q in 30s; logs:\n%s", id, prefix, logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startApp starts the image detached (not removed, so its exit code can be
// read) and returns the container ID; it is removed when the test ends.
func startApp(t *testing.T, args ...string) string {
	t.Helper()
	r := docker(t, append([]string{"run", "-d", "--label", label}, args...)...)
	wantCode(t, r, 0)
	id := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { docker(t, "rm", "-f", id) })
	return id
}

func wantContains(t *testing.T, what, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%s does not contain %q:\n%s", what, sub, s)
	}
}

func wantNotContains(t *testing.T, what, s, sub string) {
	t.Helper()
	if strings.Contains(s, sub) {
		t.Errorf("%s contains %q:\n%s", what, sub, s)
	}
}

// (a) A host directory on the host's own filesystem, bind-mounted: local.
func TestBindMountLocal(t *testing.T) {
	requireDocker(t)
	opts := []string{"-v", hostDir(t) + ":/data"}
	seed(t, opts...)
	assertReport(t, check(t, 0, opts...), "ok", "local", nil)

	r := dockerRun(t, append(opts, "-e", "DEMO_ROWS=1", image)...)
	wantCode(t, r, 0)
	wantContains(t, "app stdout", r.stdout, "demoapp: pid=1 journal_mode=wal db=/data/app.db")
	wantNotContains(t, "preflight stderr", r.stderr, "preflight: warn:")
	wantNotContains(t, "preflight stderr", r.stderr, "preflight: error:")
}

// (b) A named volume: local.
func TestNamedVolumeLocal(t *testing.T) {
	requireDocker(t)
	opts := []string{"-v", volume(t) + ":/data"}
	seed(t, opts...)
	assertReport(t, check(t, 0, opts...), "ok", "local", nil)
}

// (c) No volume: /data is in the container's writable layer, which goes
// with the container. The app is running while it is checked.
func TestNoVolumeEphemeral(t *testing.T) {
	requireDocker(t)
	id := startApp(t, "--entrypoint", "/demoapp", "-e", "DEMO_INTERVAL=100ms", image)
	waitLog(t, id, "demoapp: pid=1 journal_mode=wal")
	rep := decodeReport(t, docker(t, "exec", id, "/preflight", "check", "--format", "json", "/data"), 4)
	assertReport(t, rep, "warn", "ephemeral", map[string]string{"ephemeral-data-dir": "warn"})

	// run warns and still starts the app.
	r := dockerRun(t, "-e", "DEMO_ROWS=1", image)
	wantCode(t, r, 0)
	wantContains(t, "preflight stderr", r.stderr, "preflight: warn: ephemeral-data-dir: /data")
	wantContains(t, "app stdout", r.stdout, "demoapp: pid=1 journal_mode=wal db=/data/app.db")
	wantContains(t, "app stdout", r.stdout, "demoapp: preflight fs_class=ephemeral journal_mode=wal")
}

// (d) A FUSE loopback mount named grpcfuse, served by this process and
// bind-mounted into the container: what a bind mount of a host directory
// looks like on Docker Desktop. WAL there is unsafe.
func TestGrpcfuseCrossVM(t *testing.T) {
	requireDocker(t)
	backing, mnt := grpcfuseDir(t)
	opts := []string{"-v", mnt + ":/data"}
	seed(t, opts...)
	if _, err := os.Stat(filepath.Join(backing, "app.db")); err != nil {
		t.Fatalf("seeded database not in the backing directory: %v", err)
	}

	r := dockerRun(t, append(opts, "--entrypoint", "/preflight", image, "mounts", "--format", "json", "/data")...)
	wantCode(t, r, 0)
	var m mountInfo
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("decode mounts output: %v\n%s", err, r)
	}
	if m.FSType != "fuse.grpcfuse" || m.Source != "grpcfuse" || m.Class != "cross-vm" || m.Mountpoint != "/data" {
		t.Errorf("mounts /data = %+v, want mountpoint /data, fstype fuse.grpcfuse, source grpcfuse, class cross-vm", m)
	}

	assertReport(t, check(t, 3, opts...), "unsafe", "cross-vm", map[string]string{"wal-on-cross-vm": "error"})

	t.Run("on-unsafe=fail", func(t *testing.T) {
		r := dockerRun(t, append(opts, "--entrypoint", "/preflight", image,
			"run", "--data-dir", "/data", "--on-unsafe", "fail", "--", "/demoapp")...)
		wantCode(t, r, 3)
		wantNotContains(t, "stdout", r.stdout, "demoapp: pid=")
		wantContains(t, "preflight stderr", r.stderr, "preflight: error: wal-on-cross-vm: /data")

		// The same through the environment, with the image's ENTRYPOINT.
		r = dockerRun(t, append(opts, "-e", "PREFLIGHT_ON_UNSAFE=fail", image)...)
		wantCode(t, r, 3)
		wantNotContains(t, "stdout", r.stdout, "demoapp: pid=")
	})

	// Last: the app follows the recommendation and leaves WAL mode.
	t.Run("on-unsafe=warn", func(t *testing.T) {
		r := dockerRun(t, append(opts, "-e", "DEMO_ROWS=1", "--entrypoint", "/preflight", image,
			"run", "--data-dir", "/data", "--on-unsafe", "warn", "--", "/demoapp")...)
		wantCode(t, r, 0)
		wantContains(t, "preflight stderr", r.stderr, "preflight: error: wal-on-cross-vm: /data")
		wantContains(t, "app stdout", r.stdout, "demoapp: pid=1 journal_mode=delete db=/data/app.db")
		wantContains(t, "app stdout", r.stdout, "demoapp: preflight fs_class=cross-vm journal_mode=delete")
	})
}

// After exec the app is PID 1, gets the journal mode and filesystem class,
// receives the container's SIGTERM, and its exit code is the container's.
func TestRunExecsApp(t *testing.T) {
	requireDocker(t)
	id := startApp(t, "-v", volume(t)+":/data", "-e", "DEMO_INTERVAL=100ms", "-e", "DEMO_EXIT_CODE=42", image)
	logs := waitLog(t, id, "demoapp: insert id=")
	wantContains(t, "logs", logs, "demoapp: pid=1 journal_mode=wal db=/data/app.db")
	wantContains(t, "logs", logs, "demoapp: preflight fs_class=local journal_mode=wal")

	start := time.Now()
	wantCode(t, docker(t, "stop", "-t", "20", id), 0)
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("docker stop took %v: SIGTERM did not end the app", d)
	}
	r := docker(t, "inspect", "-f", "{{.State.ExitCode}}", id)
	if got := strings.TrimSpace(r.stdout); got != "42" {
		t.Errorf("container exit code %s, want 42 (DEMO_EXIT_CODE)", got)
	}
	r = docker(t, "logs", id)
	wantContains(t, "logs", r.stdout, "demoapp: got terminated")
}

// run's own exit codes when the command cannot be executed.
func TestRunExecFailures(t *testing.T) {
	requireDocker(t)
	vol := volume(t) + ":/data"
	t.Run("not found", func(t *testing.T) {
		wantCode(t, dockerRun(t, "-v", vol, image, "/no/such/app"), 127)
	})
	t.Run("not executable", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "notexec")
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		wantCode(t, dockerRun(t, "-v", vol, "-v", f+":/notexec:ro", image, "/notexec"), 126)
	})
}

// The top-level Dockerfile: preflight alone, FROM scratch.
func TestPreflightImage(t *testing.T) {
	requireDocker(t)
	tag := toolImage(t, "preflight-it-tool")
	r := dockerRun(t, tag, "--version")
	wantCode(t, r, 0)
	if !strings.HasPrefix(r.stdout, "preflight ") {
		t.Errorf("--version printed %q, want \"preflight <version>\"", r.stdout)
	}
	wantCode(t, dockerRun(t, tag, "mounts"), 0)
	// The image's binary is built without compose: it says so.
	r = dockerRun(t, tag, "compose")
	wantCode(t, r, 1)
	if !strings.Contains(r.stderr, "built without compose support") {
		t.Errorf("compose in the image printed %q, want the nocompose error", r.stderr)
	}
}

// TestPreflightImageDeepOnShare: the top-level image (FROM scratch) has a
// writable /tmp, so check --deep on a FUSE-backed bind (Docker Desktop's
// share, where the database is checked on a private copy) checks
// integrity instead of reporting integrity-not-checked, and leaves no copy.
func TestPreflightImageDeepOnShare(t *testing.T) {
	requireDocker(t)
	testdb.NeedFUSE(t)
	tag := toolImage(t, "preflight-it-tool-deep")
	backing, mnt := grpcfuseDir(t)
	testdb.Make(t, filepath.Join(backing, "app.db"), "delete", 50)

	name := "preflight-it-deep-" + runID
	r := docker(t, "run", "--name", name, "--label", label, "-v", mnt+":/data", tag,
		"check", "--deep", "--docker", "off", "--fail-on", "never", "--format", "json", "/data")
	defer docker(t, "rm", "-f", name)
	wantCode(t, r, 0)
	var rep struct {
		DataDirs []struct {
			Databases []struct {
				Health *struct {
					Integrity *struct {
						Ran         bool   `json:"ran"`
						OK          bool   `json:"ok"`
						CheckedCopy bool   `json:"checked_copy"`
						Err         string `json:"error"`
					} `json:"integrity"`
				} `json:"health"`
			} `json:"databases"`
		} `json:"data_dirs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("decode check output: %v\n%s", err, r)
	}
	if len(rep.DataDirs) != 1 || len(rep.DataDirs[0].Databases) != 1 || rep.DataDirs[0].Databases[0].Health == nil || rep.DataDirs[0].Databases[0].Health.Integrity == nil {
		t.Fatalf("check --deep /data: no integrity result\n%s", r)
	}
	in := rep.DataDirs[0].Databases[0].Health.Integrity
	if !in.Ran || !in.OK || !in.CheckedCopy {
		t.Errorf("check --deep /data in the image: integrity ran %v ok %v on a copy %v (%s), want a checked copy\n%s", in.Ran, in.OK, in.CheckedCopy, in.Err, r)
	}
	wantNotContains(t, "stdout", r.stdout, "integrity-not-checked")
	// The container's /tmp holds no copy afterwards.
	out := docker(t, "cp", name+":/tmp", "-")
	wantCode(t, out, 0)
	tr := tar.NewReader(strings.NewReader(out.stdout))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read docker cp %s:/tmp: %v", name, err)
		}
		if h.Name != "tmp/" && h.Name != "tmp" {
			t.Errorf("the container's /tmp holds %s after check --deep, want nothing", h.Name)
		}
		if h.Name == "tmp/" && h.Uid != 65532 {
			t.Errorf("the image's /tmp is owned by uid %d, want 65532", h.Uid)
		}
	}
}
