package integration_test

// Live-writer probes end to end: preflight check and run, from inside the
// writer's container, from a second container on the same volume or bind
// mount (through the Docker socket, and without it), from the host over a
// FUSE share whose writer is on the other side, and on the host with a
// sidecar replaced under a live SQLite process.

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// dockerSocket is the engine socket bind-mounted into containers that
// should see other containers. The tests' own docker CLI uses the default
// endpoint, so this is where the daemon listens.
const dockerSocket = "/var/run/docker.sock"

// writerInterval is the demo app's insert interval for a live writer.
const writerInterval = "200ms"

// wReport is the part of the JSON report (preflight/v1) the live-writer
// tests assert on.
type wReport struct {
	Schema   string            `json:"schema"`
	Verdict  string            `json:"verdict"`
	Probes   map[string]string `json:"probes"`
	Docker   *wDocker          `json:"docker"`
	DataDirs []struct {
		Path      string      `json:"path"`
		Databases []wDatabase `json:"databases"`
	} `json:"data_dirs"`
	Findings []wFinding `json:"findings"`

	raw string
}

type wDocker struct {
	Status      string      `json:"status"`
	Error       string      `json:"error"`
	InContainer bool        `json:"in_container"`
	Self        *wContainer `json:"self"`
	SelfHow     string      `json:"self_how"`
	Writers     []struct {
		Container wContainer `json:"container"`
		Relation  string     `json:"relation"`
		Path      string     `json:"path"`
	} `json:"writers"`
	Sure bool `json:"sure"`
}

type wContainer struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	Image          string `json:"image"`
	State          string `json:"state"`
	ComposeProject string `json:"compose_project"`
	ComposeService string `json:"compose_service"`
	OneOff         bool   `json:"oneoff"`
}

type wDatabase struct {
	Path         string          `json:"path"`
	JournalMode  string          `json:"journal_mode"`
	WritersRaw   json.RawMessage `json:"writers"`
	Writers      []wWriter       `json:"-"`
	WriterProbes struct {
		Processes string   `json:"processes"`
		Locks     string   `json:"locks"`
		Docker    string   `json:"docker"`
		Activity  string   `json:"activity"`
		Sure      bool     `json:"sure"`
		Blind     []string `json:"blind"`
	} `json:"writer_probes"`
	Unlinked []struct {
		PID  int    `json:"pid"`
		Comm string `json:"comm"`
		File string `json:"file"`
		Link string `json:"link"`
		How  string `json:"how"`
	} `json:"unlinked_sidecars"`
	Activity *struct {
		Changed bool     `json:"changed"`
		What    []string `json:"what"`
	} `json:"activity"`
}

type wWriter struct {
	Kind      string      `json:"kind"`
	PID       int         `json:"pid"`
	Comm      string      `json:"comm"`
	Cmdline   string      `json:"cmdline"`
	User      string      `json:"user"`
	Files     []string    `json:"files"`
	Locks     []wLock     `json:"locks"`
	Container *wContainer `json:"container"`
	Relation  string      `json:"relation"`
}

type wLock struct {
	File           string `json:"file"`
	Name           string `json:"name"`
	Type           string `json:"type"`
	PID            int    `json:"pid"`
	OtherNamespace bool   `json:"other_pid_namespace"`
}

type wFinding struct {
	ID      string `json:"id"`
	Level   string `json:"level"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

// decodeWReport checks r's exit code and decodes its stdout.
func decodeWReport(t *testing.T, r result, code int) wReport {
	t.Helper()
	wantCode(t, r, code)
	rep := wReport{raw: r.stdout}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, r)
	}
	for i := range rep.DataDirs {
		for j := range rep.DataDirs[i].Databases {
			db := &rep.DataDirs[i].Databases[j]
			if err := json.Unmarshal(db.WritersRaw, &db.Writers); err != nil {
				t.Fatalf("decode %s writers: %v\n%s", db.Path, err, r)
			}
		}
	}
	return rep
}

// db returns the report's database at path, failing the test without it.
func (r wReport) db(t *testing.T, path string) *wDatabase {
	t.Helper()
	for i := range r.DataDirs {
		for j := range r.DataDirs[i].Databases {
			if db := &r.DataDirs[i].Databases[j]; db.Path == path {
				return db
			}
		}
	}
	t.Fatalf("report has no database %s:\n%s", path, r.raw)
	return nil
}

// finding returns the first finding with id (and path, when not ""), or nil.
func (r wReport) finding(id, path string) *wFinding {
	for i, f := range r.Findings {
		if f.ID == id && (path == "" || f.Path == path) {
			return &r.Findings[i]
		}
	}
	return nil
}

// wantFinding fails the test unless the report has finding id at level.
func wantFinding(t *testing.T, r wReport, id, path, level string) {
	t.Helper()
	f := r.finding(id, path)
	switch {
	case f == nil:
		t.Errorf("no finding %s (path %q); findings: %s", id, path, findingList(r))
	case f.Level != level:
		t.Errorf("finding %s level = %q, want %q: %s", id, f.Level, level, f.Message)
	}
}

func wantNoFinding(t *testing.T, r wReport, id string) {
	t.Helper()
	if f := r.finding(id, ""); f != nil {
		t.Errorf("unexpected finding %s (%s): %s", id, f.Level, f.Message)
	}
}

func findingList(r wReport) string {
	var s []string
	for _, f := range r.Findings {
		s = append(s, f.ID+"="+f.Level)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// writersOf returns db's writers of kind.
func (db *wDatabase) writersOf(kind string) []wWriter {
	var ws []wWriter
	for _, w := range db.Writers {
		if w.Kind == kind {
			ws = append(ws, w)
		}
	}
	return ws
}

func (db *wDatabase) String() string {
	b, _ := json.MarshalIndent(struct {
		Writers      json.RawMessage `json:"writers"`
		WriterProbes any             `json:"writer_probes"`
		Unlinked     any             `json:"unlinked_sidecars,omitempty"`
		Activity     any             `json:"activity,omitempty"`
	}{db.WritersRaw, db.WriterProbes, db.Unlinked, db.Activity}, "", "  ")
	return string(b)
}

// wantWritersArray fails the test when db's writers field is not a JSON
// array (the report documents it as a list, empty when none was seen).
func wantWritersArray(t *testing.T, db *wDatabase) {
	t.Helper()
	if s := strings.TrimSpace(string(db.WritersRaw)); !strings.HasPrefix(s, "[") {
		t.Errorf("%s: writers = %s, want a JSON array ([] when no writer was seen)", db.Path, s)
	}
}

// hasLock reports whether ls holds a lock named name on file.
func hasLock(ls []wLock, file, name string) *wLock {
	for i, l := range ls {
		if l.File == file && l.Name == name {
			return &ls[i]
		}
	}
	return nil
}

// wantAppLocks fails the test unless ls holds what an open WAL connection
// holds: a shared lock on the database and the -shm dead-man switch.
func wantAppLocks(t *testing.T, what string, ls []wLock) {
	t.Helper()
	if hasLock(ls, "db", "shared") == nil || hasLock(ls, "shm", "dms") == nil {
		t.Errorf("%s locks = %+v, want db shared and shm dms", what, ls)
	}
}

// wantBlind fails the test unless one of db's blind entries contains sub.
func wantBlind(t *testing.T, db *wDatabase, sub string) {
	t.Helper()
	for _, b := range db.WriterProbes.Blind {
		if strings.Contains(b, sub) {
			return
		}
	}
	t.Errorf("%s: writer_probes.blind has no entry containing %q: %q", db.Path, sub, db.WriterProbes.Blind)
}

// containerName is a unique container name for this run and test.
func containerName(t *testing.T, role string) string {
	return "preflight-it-" + runID + "-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())) + "-" + role
}

// startWriter starts the demo app writing /data/app.db every
// writerInterval in a detached container with the given docker run options
// (mount, name, labels, user) and waits for its first insert.
func startWriter(t *testing.T, opts ...string) string {
	t.Helper()
	args := append(opts, "-e", "DEMO_INTERVAL="+writerInterval, "--entrypoint", "/demoapp", image)
	id := startApp(t, args...)
	waitLog(t, id, "demoapp: insert id=")
	return id
}

// otherContainer runs the second-container scenario on data, a docker run
// -v source (a named volume or a host directory): container A writes with
// compose labels, container C mounts the same data read-only, and container
// B checks /data through the Docker socket.
func otherContainer(t *testing.T, data, relation string) {
	nameA, nameB, nameC := containerName(t, "a"), containerName(t, "b"), containerName(t, "c")
	startWriter(t, "--name", nameA, "-v", data+":/data",
		"--label", "com.docker.compose.project=demo", "--label", "com.docker.compose.service=app", "--label", "com.docker.compose.config-hash=0123abcd")
	// C has the data read-only and keeps its own database in its writable
	// layer, so it holds no lock on /data/app.db.
	startApp(t, "--name", nameC, "--user", "0", "-v", data+":/data:ro",
		"-e", "DATA_DIR=/", "-e", "DEMO_INTERVAL=1h", "--entrypoint", "/demoapp", image)

	sock := []string{"--user", "0", "-v", dockerSocket + ":" + dockerSocket}
	b := append([]string{"--name", nameB, "-v", data + ":/data"}, sock...)
	rep := decodeWReport(t, dockerRun(t, append(b, "--entrypoint", "/preflight", image,
		"check", "--format", "json", "/data")...), 0)
	if rep.Verdict != "ok" {
		t.Errorf("verdict = %q, want ok (one writer besides us); findings %s", rep.Verdict, findingList(rep))
	}
	d := rep.Docker
	if d == nil || d.Status != "ran" || !d.InContainer {
		t.Fatalf("docker = %+v, want status ran, in_container true\n%s", d, rep.raw)
	}
	if d.Self == nil || d.Self.Name != nameB {
		t.Errorf("docker.self = %+v, want container %s (self_how %q)", d.Self, nameB, d.SelfHow)
	}
	for _, w := range d.Writers {
		if w.Container.Name == nameB || w.Container.Name == nameC {
			t.Errorf("docker.writers lists %s (relation %q): only %s writes /data", w.Container.Name, w.Relation, nameA)
		}
	}

	db := rep.db(t, "/data/app.db")
	if db.JournalMode != "wal" {
		t.Errorf("journal_mode = %q, want wal", db.JournalMode)
	}
	cs := db.writersOf("container")
	if len(cs) != 1 || cs[0].Container == nil {
		t.Fatalf("container writers = %+v, want exactly %s\n%s", cs, nameA, db)
	}
	c := cs[0]
	if c.Container.Name != nameA || c.Container.ComposeProject != "demo" || c.Container.ComposeService != "app" || c.Relation != relation {
		t.Errorf("container writer = %+v relation %q, want %s, compose demo/app, relation %q", *c.Container, c.Relation, nameA, relation)
	}
	if c.Container.State != "running" || c.Container.Image != image {
		t.Errorf("container writer state %q image %q, want running %s", c.Container.State, c.Container.Image, image)
	}
	wantFinding(t, rep, "live-writer-container", "/data/app.db", "info")
	if f := rep.finding("live-writer-container", ""); f != nil {
		wantContains(t, "live-writer-container message", f.Message, nameA)
		wantContains(t, "live-writer-container message", f.Message, "service app")
	}
	wantNoFinding(t, rep, "multiple-writers")
	if ps := db.writersOf("process"); len(ps) != 0 {
		t.Errorf("process writers = %+v, want none: A's processes are in another PID namespace", ps)
	}

	// A's locks reach us through the shared kernel, but not its pid: they
	// are attached to the one container writer (it has the database open
	// now, not only mounted), not listed as an unnamed lock writer.
	if ls := db.writersOf("lock"); len(ls) != 0 {
		t.Errorf("lock writers = %+v, want A's locks on its container writer\n%s", ls, db)
	}
	wantAppLocks(t, "container writer", c.Locks)
	for _, lk := range c.Locks {
		if !lk.OtherNamespace || lk.PID != 0 {
			t.Errorf("lock %+v: want other_pid_namespace true, no pid", lk)
		}
	}

	// run: a writer before the application starts is one too many.
	r := dockerRun(t, append(append([]string{"-v", data + ":/data"}, sock...),
		"-e", "DEMO_ROWS=1", "--entrypoint", "/preflight", image, "run", "--data-dir", "/data", "--", "/demoapp")...)
	wantCode(t, r, 0)
	wantContains(t, "run stderr", r.stderr, "preflight: warn: multiple-writers: /data/app.db")
	wantContains(t, "run stderr", r.stderr, "preflight: info: live-writer-container: /data/app.db")
	wantContains(t, "run stderr", r.stderr, "reference/findings/#live-writer-container)")
	wantNotContains(t, "run stderr", r.stderr, nameC)
	wantContains(t, "app stdout", r.stdout, "demoapp: pid=1 journal_mode=wal db=/data/app.db")

	// Without the socket the lock alone is the evidence.
	r = dockerRun(t, "-v", data+":/data", "-e", "DEMO_ROWS=1", "--entrypoint", "/preflight", image,
		"run", "--data-dir", "/data", "--", "/demoapp")
	wantCode(t, r, 0)
	wantContains(t, "run stderr (no socket)", r.stderr, "preflight: warn: multiple-writers: /data/app.db")
	wantContains(t, "run stderr (no socket)", r.stderr, "preflight: info: live-writer-lock: /data/app.db")
}

// 1. The app and the check in one container: the app is a process writer
// with its WAL locks, and one writer is no warning.
func TestWriterSameContainer(t *testing.T) {
	requireDocker(t)
	id := startWriter(t, "-v", volume(t)+":/data")
	rep := decodeWReport(t, docker(t, "exec", id, "/preflight", "check", "--format", "json", "/data"), 0)
	if rep.Verdict != "ok" {
		t.Errorf("verdict = %q, want ok; findings %s", rep.Verdict, findingList(rep))
	}
	db := rep.db(t, "/data/app.db")
	if len(db.Writers) != 1 || db.Writers[0].Kind != "process" {
		t.Fatalf("writers: want exactly one process writer\n%s", db)
	}
	w := db.Writers[0]
	if w.PID != 1 || w.Comm != "demoapp" || w.Cmdline != "/demoapp" || w.User != "65532" {
		t.Errorf("process writer = pid %d comm %q cmdline %q user %q, want pid 1 demoapp /demoapp 65532", w.PID, w.Comm, w.Cmdline, w.User)
	}
	wantAppLocks(t, "process writer", w.Locks)
	for _, l := range w.Locks {
		if l.PID != 1 || l.OtherNamespace {
			t.Errorf("lock %+v: want pid 1 in our namespace", l)
		}
	}
	for _, f := range []string{"db fd", "wal fd", "shm mmap"} {
		found := false
		for _, got := range w.Files {
			found = found || strings.HasPrefix(got, f)
		}
		if !found {
			t.Errorf("process writer files = %q, want one starting %q", w.Files, f)
		}
	}
	if db.WriterProbes.Processes != "ran" || db.WriterProbes.Locks != "ran" {
		t.Errorf("writer_probes = %+v, want processes and locks ran", db.WriterProbes)
	}
	wantFinding(t, rep, "live-writer-process", "/data/app.db", "info")
	wantNoFinding(t, rep, "multiple-writers")
	wantNoFinding(t, rep, "live-writer-lock")
}

// 2. A second container on the same named volume sees the writing
// container through the Docker API and its locks through the kernel.
func TestWriterOtherContainerVolume(t *testing.T) {
	requireDocker(t)
	otherContainer(t, volume(t), "same volume")
}

// 3. The same with a host directory bind-mounted in both containers.
func TestWriterOtherContainerBind(t *testing.T) {
	requireDocker(t)
	otherContainer(t, hostDir(t), "same bind source")
}

// 4. A container that mounts the volume read-only is not a writer.
func TestWriterReadOnlyComount(t *testing.T) {
	requireDocker(t)
	vol := volume(t)
	seed(t, "-v", vol+":/data")
	nameC := containerName(t, "c")
	startApp(t, "--name", nameC, "--user", "0", "-v", vol+":/data:ro",
		"-e", "DATA_DIR=/", "-e", "DEMO_INTERVAL=1h", "--entrypoint", "/demoapp", image)

	rep := decodeWReport(t, dockerRun(t, "--user", "0", "-v", dockerSocket+":"+dockerSocket, "-v", vol+":/data",
		"--entrypoint", "/preflight", image, "check", "--format", "json", "/data"), 0)
	if rep.Docker == nil || rep.Docker.Status != "ran" {
		t.Fatalf("docker = %+v, want status ran\n%s", rep.Docker, rep.raw)
	}
	if len(rep.Docker.Writers) != 0 {
		t.Errorf("docker.writers = %+v, want none (%s mounts /data read-only)", rep.Docker.Writers, nameC)
	}
	db := rep.db(t, "/data/app.db")
	if len(db.Writers) != 0 {
		t.Errorf("writers: want none\n%s", db)
	}
	wantWritersArray(t, db)
	if !db.WriterProbes.Sure {
		t.Errorf("writer_probes.sure = false on a named volume with every probe run: %q", db.WriterProbes.Blind)
	}
	if rep.Verdict != "ok" {
		t.Errorf("verdict = %q, want ok; findings %s", rep.Verdict, findingList(rep))
	}
	wantNoFinding(t, rep, "live-writer-container")
}

// 5. Without the Docker API the report says other containers were not
// checked, never that there are none; a hung engine costs at most the
// timeout.
func TestWriterDockerUnreachable(t *testing.T) {
	t.Run("no socket", func(t *testing.T) {
		requireDocker(t)
		vol := volume(t)
		seed(t, "-v", vol+":/data")
		b := []string{"--user", "0", "-v", vol + ":/data", "--entrypoint", "/preflight", image, "check", "--format", "json"}
		rep := decodeWReport(t, dockerRun(t, append(b, "/data")...), 0)
		if rep.Docker == nil || rep.Docker.Status != "unreachable" || rep.Docker.Sure {
			t.Errorf("docker = %+v, want status unreachable, sure false", rep.Docker)
		}
		wantFinding(t, rep, "docker-unreachable", "", "info")
		db := rep.db(t, "/data/app.db")
		if db.WriterProbes.Sure || db.WriterProbes.Docker != "unreachable" {
			t.Errorf("writer_probes = %+v, want docker unreachable, sure false", db.WriterProbes)
		}
		wantBlind(t, db, "containers")

		for name, args := range map[string][]string{
			"flag": append(append([]string{}, b...), "--docker", "required", "/data"),
			"env":  append([]string{"-e", "PREFLIGHT_DOCKER=required"}, append(b, "/data")...),
		} {
			rep := decodeWReport(t, dockerRun(t, args...), 3)
			if rep.Verdict != "unsafe" {
				t.Errorf("required (%s): verdict = %q, want unsafe", name, rep.Verdict)
			}
			wantFinding(t, rep, "docker-unreachable", "", "error")
		}
	})

	t.Run("hung socket", func(t *testing.T) {
		requireBinaries(t)
		sock := filepath.Join(t.TempDir(), "docker.sock")
		accepted := hangingSocket(t, sock)
		dir := t.TempDir()
		wantCode(t, run(t, dockerTimeout, []string{"DATA_DIR=" + dir, "DEMO_ROWS=1"}, filepath.Join(binDir, "demoapp")), 0)

		env := []string{"DOCKER_HOST=unix://" + sock, "DOCKER_CONTEXT="}
		const timeout = time.Second
		for _, mode := range []string{"auto", "required"} {
			start := time.Now()
			r := run(t, 30*time.Second, env, filepath.Join(binDir, "preflight"), "check", "--format", "json",
				"--docker", mode, "--docker-timeout", timeout.String(), dir)
			elapsed := time.Since(start)
			if elapsed > timeout+time.Second {
				t.Errorf("--docker %s: check took %v with a hung engine, want at most %v", mode, elapsed, timeout+time.Second)
			}
			code, level := 0, "info"
			if mode == "required" {
				code, level = 3, "error"
			}
			rep := decodeWReport(t, r, code)
			if rep.Docker == nil || rep.Docker.Status != "unreachable" {
				t.Errorf("--docker %s: docker = %+v, want status unreachable", mode, rep.Docker)
			}
			wantFinding(t, rep, "docker-unreachable", "", level)
			db := rep.db(t, filepath.Join(dir, "app.db"))
			if db.WriterProbes.Sure {
				t.Errorf("--docker %s: writer_probes.sure = true with the engine hung", mode)
			}
			wantBlind(t, db, "containers")
			t.Logf("--docker %s: %v, docker error %q", mode, elapsed.Round(time.Millisecond), rep.Docker.Error)
		}
		if n := accepted(); n == 0 {
			t.Errorf("preflight never connected to %s", sock)
		}
	})
}

// hangingSocket listens on a unix socket at path, accepts connections and
// never reads or answers; it returns how many connections were accepted.
func hangingSocket(t *testing.T, path string) func() int {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatalf("listen on %s: %v", path, err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(conns)
	}
}

// startHostProcess starts name with args and env on the host, its stdout
// and stderr in a file, and stops it (SIGKILL) when the test ends. It
// returns the process and a function returning its output so far.
func startHostProcess(t *testing.T, env []string, stdin io.Reader, name string, args ...string) (*exec.Cmd, func() string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr, cmd.Stdin = f, f, stdin
	if err := cmd.Start(); err != nil {
		cancel()
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-waited:
		case <-time.After(10 * time.Second):
			t.Errorf("%s (pid %d) did not exit after SIGKILL", name, cmd.Process.Pid)
		}
		f.Close()
	})
	return cmd, func() string {
		b, _ := os.ReadFile(out)
		return string(b)
	}
}

// waitFor polls cond every 50ms for up to 20s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// 6. A writer on the far side of a share: the demo app writes the backing
// directory of a grpcfuse loopback mount, as a macOS program writes a
// folder Docker Desktop shares into its VM. Through the mount no process
// or lock can be tied to the database, but its files change: someone we
// cannot see is writing.
func TestWriterBehindShare(t *testing.T) {
	requireBinaries(t)
	backing, mnt := grpcfuseDir(t)
	// Registered after the unmount, so stopped before it.
	app, output := startHostProcess(t, []string{"DATA_DIR=" + backing, "DEMO_INTERVAL=100ms"}, nil, filepath.Join(binDir, "demoapp"))
	waitFor(t, "the demo app's first insert", func() bool { return strings.Contains(output(), "demoapp: insert id=") })
	pf := filepath.Join(binDir, "preflight")

	// Control: on the backing directory the writer is plain to see.
	rep := decodeWReport(t, run(t, dockerTimeout, nil, pf, "check", "--format", "json", "--docker", "off", backing), 0)
	db := rep.db(t, filepath.Join(backing, "app.db"))
	if ps := db.writersOf("process"); len(ps) != 1 || ps[0].PID != app.Process.Pid {
		t.Errorf("backing dir: process writers = %+v, want the demo app (pid %d)\n%s", ps, app.Process.Pid, db)
	}

	assertUnseen := func(t *testing.T, rep wReport, dbPath string) {
		t.Helper()
		if rep.Verdict != "unsafe" {
			t.Errorf("verdict = %q, want unsafe", rep.Verdict)
		}
		db := rep.db(t, dbPath)
		if len(db.writersOf("process"))+len(db.writersOf("lock")) != 0 {
			t.Errorf("a process or lock writer is attributed to %s through the mount\n%s", dbPath, db)
		}
		if db.Activity == nil || !db.Activity.Changed || db.WriterProbes.Activity != "changed" {
			t.Errorf("activity: want changed during the watch\n%s", db)
		}
		if db.WriterProbes.Sure {
			t.Errorf("writer_probes.sure = true on a cross-vm share with an unseen writer")
		}
		wantBlind(t, db, "another kernel")
		wantFinding(t, rep, "activity-unseen-writer", dbPath, "error")
		wantFinding(t, rep, "wal-on-cross-vm", dbPath, "error")
		wantNoFinding(t, rep, "live-writer-process")
		wantNoFinding(t, rep, "live-writer-lock")
		wantWritersArray(t, db)
	}

	t.Run("host", func(t *testing.T) {
		r := run(t, dockerTimeout, nil, pf, "check", "--format", "json", "--watch", "1s", mnt)
		assertUnseen(t, decodeWReport(t, r, 3), filepath.Join(mnt, "app.db"))
	})

	t.Run("container", func(t *testing.T) {
		requireDocker(t)
		r := dockerRun(t, "-v", mnt+":/data", "--entrypoint", "/preflight", image,
			"check", "--format", "json", "--watch", "1s", "/data")
		rep := decodeWReport(t, r, 3)
		assertUnseen(t, rep, "/data/app.db")
		wantFinding(t, rep, "docker-unreachable", "", "info")
	})
}

// sqliteShell is a host sqlite3 process holding a database open, fed
// statements through a pipe.
type sqliteShell struct {
	cmd *exec.Cmd
	in  io.WriteCloser
}

func startSQLite(t *testing.T, db string) *sqliteShell {
	t.Helper()
	bin, err := exec.LookPath("sqlite3")
	if err != nil {
		if required {
			t.Fatalf("sqlite3 not found (PREFLIGHT_REQUIRE_DOCKER=1 or CI=true): %v", err)
		}
		t.Skipf("sqlite3 not found: %v", err)
	}
	pr, pw := io.Pipe()
	cmd, _ := startHostProcess(t, nil, pr, bin, db)
	t.Cleanup(func() { pw.Close() })
	return &sqliteShell{cmd: cmd, in: pw}
}

func (s *sqliteShell) exec(t *testing.T, sql string) {
	t.Helper()
	w := bufio.NewWriter(s.in)
	if _, err := w.WriteString(sql + "\n"); err != nil {
		t.Fatalf("write to sqlite3: %v", err)
	}
	if err := w.Flush(); err != nil {
		t.Fatalf("write to sqlite3: %v", err)
	}
}

// 7. A -wal renamed over under a live connection: the process keeps
// writing a file nobody else opens.
func TestWriterSidecarReplaced(t *testing.T) {
	requireBinaries(t)
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "app.db")
	sh := startSQLite(t, dbPath)
	sh.exec(t, "pragma journal_mode=wal; create table t(x); insert into t values(1);")
	waitFor(t, "app.db-wal and app.db-shm", func() bool {
		_, e1 := os.Stat(dbPath + "-wal")
		_, e2 := os.Stat(dbPath + "-shm")
		return e1 == nil && e2 == nil
	})
	pf := filepath.Join(binDir, "preflight")
	pid := sh.cmd.Process.Pid

	// Linked sidecars: a process writer, nothing unlinked. (Debian's
	// sqlite3 3.40.1 has the WAL-reset bug: --ignore keeps that warning
	// out of the exit code.)
	rep := decodeWReport(t, run(t, dockerTimeout, nil, pf, "check", "--ignore", "wal-reset-bug", "--format", "json", dir), 0)
	db := rep.db(t, dbPath)
	if ps := db.writersOf("process"); len(ps) != 1 || ps[0].PID != pid || ps[0].Comm != "sqlite3" {
		t.Errorf("process writers: want sqlite3 (pid %d)\n%s", pid, db)
	} else {
		wantAppLocks(t, "sqlite3", ps[0].Locks)
	}
	if len(db.Unlinked) != 0 {
		t.Errorf("unlinked_sidecars with linked sidecars:\n%s", db)
	}
	wantNoFinding(t, rep, "wal-sidecar-unlinked")
	wantFinding(t, rep, "live-writer-process", dbPath, "info")

	// A new file renamed over the -wal the process holds.
	tmp := filepath.Join(dir, "replacement")
	if err := os.WriteFile(tmp, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dbPath+"-wal"); err != nil {
		t.Fatal(err)
	}
	rep = decodeWReport(t, run(t, dockerTimeout, nil, pf, "check", "--format", "json", dir), 3)
	if rep.Verdict != "unsafe" {
		t.Errorf("verdict = %q, want unsafe", rep.Verdict)
	}
	wantFinding(t, rep, "wal-sidecar-unlinked", dbPath, "error")
	db = rep.db(t, dbPath)
	if len(db.Unlinked) != 1 || db.Unlinked[0].PID != pid || db.Unlinked[0].File != "wal" || !strings.HasPrefix(db.Unlinked[0].How, "fd ") {
		t.Errorf("unlinked_sidecars: want sqlite3 (pid %d) holding wal by fd\n%s", pid, db)
	}
	if f := rep.finding("wal-sidecar-unlinked", ""); f != nil {
		wantContains(t, "wal-sidecar-unlinked message", f.Message, "sqlite3")
	}
}

// 8. Our own container is never a writer: checked from inside the app's
// container with the Docker API reachable, the app is a process writer and
// no container is listed; run at the app's start saw no writer either.
func TestWriterSelfNotReported(t *testing.T) {
	requireDocker(t)
	name := containerName(t, "app")
	// The image's ENTRYPOINT: preflight run in front of the demo app.
	id := startApp(t, "--name", name, "--user", "0", "-v", dockerSocket+":"+dockerSocket,
		"-v", volume(t)+":/data", "-e", "DEMO_INTERVAL="+writerInterval, image)
	logs := waitLog(t, id, "demoapp: insert id=")
	wantContains(t, "logs", logs, "demoapp: pid=1 journal_mode=wal")
	wantNotContains(t, "logs", logs, "multiple-writers")
	wantNotContains(t, "logs", logs, "live-writer")
	wantNotContains(t, "logs", logs, "docker-unreachable")

	rep := decodeWReport(t, docker(t, "exec", id, "/preflight", "check", "--format", "json", "/data"), 0)
	if rep.Verdict != "ok" {
		t.Errorf("verdict = %q, want ok; findings %s", rep.Verdict, findingList(rep))
	}
	d := rep.Docker
	if d == nil || d.Status != "ran" || !d.InContainer || d.Self == nil {
		t.Fatalf("docker = %+v, want status ran, in our container\n%s", d, rep.raw)
	}
	if d.Self.Name != name || !strings.HasPrefix(d.Self.ID, strings.TrimSpace(id)[:12]) {
		t.Errorf("docker.self = %s %s, want %s %s", d.Self.Name, d.Self.ID, name, id)
	}
	if len(d.Writers) != 0 {
		t.Errorf("docker.writers = %+v, want none", d.Writers)
	}
	db := rep.db(t, "/data/app.db")
	if len(db.Writers) != 1 || db.Writers[0].Kind != "process" || db.Writers[0].PID != 1 || db.Writers[0].Comm != "demoapp" {
		t.Errorf("writers: want exactly the demo app as process pid 1\n%s", db)
	}
	if !db.WriterProbes.Sure {
		t.Errorf("writer_probes.sure = false with every probe run on a named volume: %q", db.WriterProbes.Blind)
	}
	wantFinding(t, rep, "live-writer-process", "/data/app.db", "info")
	wantNoFinding(t, rep, "live-writer-container")
	wantNoFinding(t, rep, "multiple-writers")
}

// 4b. Each database is matched to the mount it is on, not to its data
// directory's: a writer of a host directory bind-mounted below /data (on
// a named volume) writes /data/sub/app.db, and is not taken for a writer
// of the volume's own database.
func TestWriterNestedBind(t *testing.T) {
	requireDocker(t)
	vol, hd := volume(t), hostDir(t)
	seed(t, "-v", vol+":/data")
	nameA := containerName(t, "a")
	startWriter(t, "--name", nameA, "-v", hd+":/data")

	rep := decodeWReport(t, dockerRun(t, "--user", "0", "-v", dockerSocket+":"+dockerSocket,
		"-v", vol+":/data", "-v", hd+":/data/sub",
		"--entrypoint", "/preflight", image, "check", "--format", "json", "/data"), 0)
	sub := rep.db(t, "/data/sub/app.db")
	cs := sub.writersOf("container")
	if len(cs) != 1 || cs[0].Container == nil || cs[0].Container.Name != nameA || cs[0].Relation != "same bind source" {
		t.Errorf("/data/sub/app.db container writers = %+v, want %s by the same bind source\n%s", cs, nameA, sub)
	}
	if cs := rep.db(t, "/data/app.db").writersOf("container"); len(cs) != 0 {
		t.Errorf("/data/app.db (on the volume) container writers = %+v, want none", cs)
	}

	// The reverse: the data directory is the parent of the writer's bind
	// source; only the database inside that source has the writer.
	parent := filepath.Dir(hd)
	testdb.Make(t, filepath.Join(parent, "other.db"), "wal", 1)
	rep = decodeWReport(t, dockerRun(t, "--user", "0", "-v", dockerSocket+":"+dockerSocket,
		"-v", parent+":/data", "--entrypoint", "/preflight", image,
		"check", "--format", "json", "--max-depth", "2", "/data"), 0)
	in := rep.db(t, "/data/"+filepath.Base(hd)+"/app.db")
	if cs := in.writersOf("container"); len(cs) != 1 || cs[0].Container.Name != nameA {
		t.Errorf("database in the writer's bind source: container writers = %+v, want %s", cs, nameA)
	}
	if cs := rep.db(t, "/data/other.db").writersOf("container"); len(cs) != 0 {
		t.Errorf("/data/other.db, outside the writer's bind source: container writers = %+v, want none", cs)
	}
}

// 4c. A container that joined another's network namespace (--network
// container:X, compose network_mode: service:X) has X's /etc/hostname
// mounts: it must still know itself (by its root filesystem) and report X
// as the writer it is.
func TestWriterSharedNetworkNamespace(t *testing.T) {
	requireDocker(t)
	vol := volume(t)
	nameA := containerName(t, "a")
	idA := startWriter(t, "--name", nameA, "-v", vol+":/data")
	// check runs preflight check in a container that joined network's
	// namespace. In a full CI run, with other packages' containers coming
	// and going, the checker has once in a few runs not found itself among
	// the joined containers (docker.error then says how many it looked
	// at): the first such answer is logged and the check run once more.
	// --docker-timeout 20s: finding itself inspects every container that
	// joined a network namespace, which a loaded engine answers slowly.
	check := func(network string) wReport {
		var rep wReport
		for attempt := 1; attempt <= 2; attempt++ {
			rep = decodeWReport(t, dockerRun(t, "--user", "0", "-v", dockerSocket+":"+dockerSocket,
				"-v", vol+":/data", "--network", "container:"+network,
				"--entrypoint", "/preflight", image, "check", "--docker-timeout", "20s", "--format", "json", "/data"), 0)
			if rep.Docker == nil || rep.Docker.Self != nil {
				break
			}
			t.Logf("attempt %d: the checker did not find itself: %s", attempt, rep.Docker.Error)
		}
		return rep
	}
	rep := check(idA)
	d := rep.Docker
	if d == nil || d.Status != "ran" {
		t.Fatalf("docker = %+v, want status ran\n%s", d, rep.raw)
	}
	if d.Self == nil || d.Self.Name == nameA {
		t.Errorf("docker.self = %+v (how %q), want this checking container, not %s whose network it shares\n%s", d.Self, d.SelfHow, nameA, rep.raw)
	}
	cs := rep.db(t, "/data/app.db").writersOf("container")
	if len(cs) != 1 || cs[0].Container == nil || cs[0].Container.Name != nameA {
		t.Errorf("container writers = %+v, want %s", cs, nameA)
	}

	// A chain: B joined A's network, and the checker joins B's.
	nameB := containerName(t, "b")
	idB := startApp(t, "--name", nameB, "--user", "0", "--network", "container:"+idA, "-e", "DATA_DIR=/", "-e", "DEMO_INTERVAL=1h", "--entrypoint", "/demoapp", image)
	rep = check(idB)
	if d := rep.Docker; d == nil || d.Self == nil || d.Self.Name == nameA || d.Self.Name == nameB {
		t.Errorf("chain: docker = %+v, want this checking container as self\n%s", d, rep.raw)
	}
	if cs := rep.db(t, "/data/app.db").writersOf("container"); len(cs) != 1 || cs[0].Container.Name != nameA {
		t.Errorf("chain: container writers = %+v, want %s", cs, nameA)
	}

	// preflight writers inside a container that joined A's network.
	r := dockerRun(t, "--user", "0", "-v", dockerSocket+":"+dockerSocket, "-v", vol+":/data",
		"--network", "container:"+idA, "--entrypoint", "/preflight", image, "writers", "--format", "json", "--volume", vol)
	wantCode(t, r, 0)
	wantContains(t, "writers in a joined container", r.stdout, nameA)
}

// 4d. On the engine's host, a container that bind-mounts a symlink to the
// data directory writes it: the engine reports the source as written, and
// preflight resolves it as it resolves the data path.
func TestWriterBindThroughSymlink(t *testing.T) {
	requireDocker(t)
	real := hostDir(t)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	nameA := containerName(t, "a")
	startWriter(t, "--name", nameA, "-v", link+":/data")
	pf := filepath.Join(binDir, "preflight")
	r := run(t, dockerTimeout, nil, pf, "writers", "--format", "json", "--host-path", real)
	wantCode(t, r, 0)
	wantContains(t, "writers --host-path (the real directory)", r.stdout, nameA)
	r = run(t, dockerTimeout, nil, pf, "writers", "--format", "json", "--host-path", link)
	wantCode(t, r, 0)
	wantContains(t, "writers --host-path (the symlink)", r.stdout, nameA)
}

// 4e. A running container whose bind source is on a filesystem that stops
// answering does not hang host-side probes of other paths: the source is
// compared as written and the answer says it is not sure.
func TestWriterStuckBindSource(t *testing.T) {
	requireDocker(t)
	backing := hostDir(t)
	if err := os.MkdirAll(filepath.Join(backing, "sub"), 0o777); err != nil {
		t.Fatal(err)
	}
	mnt, stop, resume := testdb.StartFUSE(t, backing)
	startApp(t, "-v", filepath.Join(mnt, "sub")+":/x", "--entrypoint", "/demoapp", "-e", "DATA_DIR=/x", "-e", "DEMO_INTERVAL=1h", image)
	t.Cleanup(resume) // before the container is removed
	stop()
	other := hostDir(t)
	start := time.Now()
	r := run(t, 20*time.Second, nil, filepath.Join(binDir, "preflight"), "writers", "--format", "json", "--host-path", other)
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("writers --host-path beside a stuck bind source took %s, want under the Docker timeout", el)
	}
	wantCode(t, r, 0)
	wantContains(t, "writers beside a stuck bind source", r.stdout, "did not answer")
}

// 4f. A local volume that is a bind mount of a host directory in disguise
// (driver_opts type none, o bind, device DIR) is the same data as a bind of
// DIR: writers through either are found from the other.
func TestWriterBindVolume(t *testing.T) {
	requireDocker(t)
	hd := hostDir(t)
	bv := "preflight-it-" + runID + "-bindvol"
	wantCode(t, docker(t, "volume", "create", "--label", label, "--opt", "type=none", "--opt", "o=bind", "--opt", "device="+hd, bv), 0)
	t.Cleanup(func() { docker(t, "volume", "rm", "-f", bv) })

	// A writes through a bind of the directory; the check runs on the volume.
	nameA := containerName(t, "a")
	startWriter(t, "--name", nameA, "-v", hd+":/data")
	rep := decodeWReport(t, dockerRun(t, "--user", "0", "-v", dockerSocket+":"+dockerSocket, "-v", bv+":/data",
		"--entrypoint", "/preflight", image, "check", "--format", "json", "/data"), 0)
	if cs := rep.db(t, "/data/app.db").writersOf("container"); len(cs) != 1 || cs[0].Container.Name != nameA {
		t.Errorf("check on the bind volume: container writers = %+v, want %s (it binds the volume's device)", cs, nameA)
	}

	// B writes through the volume; the host asks about the directory.
	nameB := containerName(t, "b")
	startWriter(t, "--name", nameB, "-v", bv+":/data")
	r := run(t, dockerTimeout, nil, filepath.Join(binDir, "preflight"), "writers", "--format", "json", "--host-path", hd)
	wantCode(t, r, 0)
	wantContains(t, "writers --host-path DIR", r.stdout, nameB)
	r = run(t, dockerTimeout, nil, filepath.Join(binDir, "preflight"), "writers", "--format", "json", "--volume", bv)
	wantCode(t, r, 0)
	wantContains(t, "writers --volume (its device bound by A)", r.stdout, nameA)
}
