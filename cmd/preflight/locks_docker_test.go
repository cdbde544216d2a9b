//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/locks"
)

// needEngine skips (or fails under CI=true, PREFLIGHT_REQUIRE_DOCKER=1)
// unless the docker CLI reaches an engine.
func needEngine(t *testing.T) {
	t.Helper()
	if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		if testdb.Required() {
			t.Fatalf("docker engine not reachable: %v\n%s", err, out)
		}
		t.Skipf("skipping: docker engine not reachable: %v", err)
	}
}

func dockerRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestLocksHolderInContainer: a process in another container (a FROM
// scratch image holding the database through a bind mount) that holds
// the WAL write lock is named with its container, from its cgroup and
// the Engine API, on a real Docker engine: as the lock holder, and as the
// one writer (live-writer-process, with PID, command, user and container;
// not again as a container), whose remedy is docker stop NAME. A stopped
// container mounting the same data holds no lock, and locks does not
// advise removing it. Every command locks prints is then run as printed:
// docker stop releases the lock.
func TestLocksHolderInContainer(t *testing.T) {
	tag, label := sqlserveImage(t)
	data := t.TempDir()
	testdb.Make(t, filepath.Join(data, "app.db"), "wal", 1)
	name := fmt.Sprintf("preflight-locks-%d", os.Getpid())
	stopped := name + "-stopped"
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", name, stopped).Run() })
	dockerRun(t, "create", "--name", stopped, "--label", label, "-v", data+":/data", tag, "/data/app.db")
	c := holdInContainer(t, data, "docker", "run", "-i", "--rm", "--name", name, "--label", label, "-v", data+":/data", tag, "/data/app.db")
	id := dockerRun(t, "inspect", "--format", "{{.Id}}", name)
	path := filepath.Join(data, "app.db")
	out, _, _ := runMain(t, "locks", "--docker-timeout", "10s", "--watch", "400ms", "--busy-timeout", "100ms", path)
	who := "(/sqlserve /data/app.db, user root, container " + name + ")"
	for _, want := range []string{
		"lock: process ", who + " holds the write lock (WAL)",
		"live-writer-process: app.db is open in process ", "/sqlserve /data/app.db, user root, container " + name + ") via db fd",
		"fix: Stop it before converting or moving the database: docker stop " + name,
		"or stop it: docker stop " + name,
		"stopped-container-writer: app.db is reachable read-write from stopped container " + stopped,
		"fix: Stopped, " + stopped + " holds no lock: it is not what keeps the database locked now.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("preflight locks with a holder in container %s: want %q in\n%s", name, want, out)
		}
	}
	for _, not := range []string{"live-writer-container", "docker rm", "kill "} {
		if strings.Contains(out, not) {
			t.Errorf("preflight locks with a holder in container %s: %q in\n%s\nwant the holder once, as its container, and no docker rm", name, not, out)
		}
	}
	jout, _, _ := runMain(t, "locks", "--docker-timeout", "10s", "--format", "json", path)
	db := decodeReport(t, jout).DataDirs[0].Databases[0]
	if len(db.LockHolders) != 1 || db.LockHolders[0].ContainerID != id || db.LockHolders[0].Container == nil || db.LockHolders[0].Container.Name != name {
		t.Errorf("lock_holders = %+v, want one in container %s (%s)", db.LockHolders, name, id)
	}
	if len(db.Writers) != 1 || db.Writers[0].PID == 0 || db.Writers[0].ContainerID != id || db.Writers[0].Container == nil || db.Writers[0].Container.Name != name {
		t.Errorf("writers = %+v, want one: the process, in container %s (%s)", db.Writers, name, id)
	}

	cmds := testdb.PrintedCommands(out)
	if !slices.Contains(cmds, "docker stop "+name) {
		t.Fatalf("locks printed %q, want docker stop %s", cmds, name)
	}
	runPrintedInOrder(t, cmds, func() {
		c.Cmd.Wait()
		if out, _, _ := runMain(t, "locks", "--docker-timeout", "10s", path); !strings.Contains(out, "no lock held") {
			t.Errorf("locks after docker stop %s:\n%s\nwant no lock held", name, out)
		}
	})
}

// sqlserveImage builds a FROM scratch image of testdb's sqlserve (SQL
// lines on stdin against the database named by its argument) and returns
// its tag and the label that marks what the test made.
func sqlserveImage(t *testing.T) (tag, label string) {
	t.Helper()
	needEngine(t)
	work := t.TempDir()
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(work, "sqlserve"), "../../internal/testdb/sqlserve")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build sqlserve: %v\n%s", err, out)
	}
	df := "FROM scratch\nCOPY sqlserve /sqlserve\nENTRYPOINT [\"/sqlserve\"]\n"
	if err := os.WriteFile(filepath.Join(work, "Dockerfile"), []byte(df), 0o644); err != nil {
		t.Fatal(err)
	}
	label = fmt.Sprintf("preflight.test=locks%d", os.Getpid())
	tag = fmt.Sprintf("preflight-locks-test:%d", os.Getpid())
	dockerRun(t, "build", "-q", "--label", label, "-t", tag, work)
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", tag).Run() })
	return tag, label
}

// holdInContainer starts argv (a docker run -i of sqlserveImage on
// data/app.db), takes the WAL write lock in it, and waits until the lock
// shows.
func holdInContainer(t *testing.T, data string, argv ...string) *testdb.Child {
	t.Helper()
	c := testdb.StartCmd(t, exec.Command(argv[0], argv[1:]...))
	c.Do(t, "begin immediate")
	c.Do(t, "insert into t(v) values ('held')")
	path := filepath.Join(data, "app.db")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if res, _ := locks.Probe(path); len(res.Locks) > 0 {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatal("no lock on app.db within 10s")
		}
	}
}

// TestLocksHostileComposeService: a container whose compose service label
// is a shell command line ("app; touch MARKER; echo"), or starts with
// '-', holds the write lock. The docker compose stop line locks prints
// stops that container when run as printed, and runs nothing else.
func TestLocksHostileComposeService(t *testing.T) {
	tag, label := sqlserveImage(t)
	for i, service := range []string{"app; touch MARKER; echo ", "-h"} {
		data := t.TempDir()
		testdb.Make(t, filepath.Join(data, "app.db"), "wal", 1)
		marker := filepath.Join(t.TempDir(), "pwned")
		service = strings.ReplaceAll(service, "MARKER", marker)
		name := fmt.Sprintf("preflight-hostile-%d-%d", os.Getpid(), i)
		project := fmt.Sprintf("hostile%d-%d", os.Getpid(), i)
		t.Cleanup(func() { exec.Command("docker", "rm", "-f", name).Run() })
		c := holdInContainer(t, data, "docker", "run", "-i", "--rm", "--name", name, "--label", label,
			"--label", "com.docker.compose.project="+project, "--label", "com.docker.compose.service="+service,
			"--label", "com.docker.compose.config-hash=h", "--label", "com.docker.compose.oneoff=False",
			"-v", data+":/data", tag, "/data/app.db")

		out, _, _ := runMain(t, "locks", "--docker-timeout", "10s", filepath.Join(data, "app.db"))
		var stop string
		for _, cmd := range testdb.PrintedCommands(out) {
			if strings.HasPrefix(cmd, "docker compose ") {
				stop = cmd
			}
		}
		if stop == "" {
			t.Fatalf("service %q: locks printed no docker compose stop line:\n%s", service, out)
		}
		if out, code := testdb.RunPrinted(t, stop, bin); code != 0 {
			t.Errorf("%s, as printed: exit %d\n%s", stop, code, out)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("service %q: running %s as printed ran the label's command (%s exists)", service, stop, marker)
		}
		done := make(chan struct{})
		go func() { c.Cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("service %q: %s, as printed, did not stop container %s", service, stop, name)
		}
	}
}

// TestLocksCgroupNamedAfterAnotherContainer: a lock holder in container
// A that made a cgroup named after container V's id inside its own (as a
// privileged container can), so that its /proc/PID/cgroup reads
// /docker/A/V, is A's: locks names A and prints docker stop A, never V,
// which holds nothing. The holder here is a host sqlite3 moved into that
// cgroup: the same /proc/PID/cgroup as such a process in A.
func TestLocksCgroupNamedAfterAnotherContainer(t *testing.T) {
	tag, label := sqlserveImage(t)
	idle := t.TempDir()
	a := fmt.Sprintf("preflight-cg-a-%d", os.Getpid())
	v := fmt.Sprintf("preflight-cg-v-%d", os.Getpid())
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", a, v).Run() })
	for _, n := range []string{a, v} {
		dockerRun(t, "run", "-d", "-i", "--name", n, "--label", label, "-v", idle+":/data", tag, "/data/"+n+".db")
	}
	aID, vID := dockerRun(t, "inspect", "--format", "{{.Id}}", a), dockerRun(t, "inspect", "--format", "{{.Id}}", v)

	// A's cgroup directory in the first hierarchy /proc/PID/cgroup lists.
	aPID := dockerRun(t, "inspect", "--format", "{{.State.Pid}}", a)
	cg, err := os.ReadFile("/proc/" + aPID + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	first := strings.SplitN(strings.SplitN(string(cg), "\n", 2)[0], ":", 3)
	if len(first) != 3 || !strings.Contains(first[2], aID) {
		t.Skipf("container %s's cgroup %q does not name it", a, cg)
	}
	hier := "/sys/fs/cgroup"
	if first[1] != "" {
		hier = filepath.Join(hier, strings.TrimPrefix(strings.Split(first[1], ",")[0], "name="))
	}
	spoof := filepath.Join(hier, first[2], vID)
	if err := os.Mkdir(spoof, 0o755); err != nil {
		t.Skipf("cannot make a cgroup inside container %s's (%v): needs root and a writable cgroup hierarchy", a, err)
	}

	path, s := sqlite3Holding(t, "wal", "begin immediate; insert into t values (2);", locks.RoleWALWrite)
	t.Cleanup(func() {
		s.Stop()
		os.Remove(spoof)
	})
	if err := os.WriteFile(filepath.Join(spoof, "cgroup.procs"), []byte(itoa(s.Cmd.Process.Pid)), 0o644); err != nil {
		t.Skipf("cannot move a process into %s: %v", spoof, err)
	}
	out, _, _ := runMain(t, "locks", "--docker-timeout", "10s", path)
	if want := "container " + a + ") holds the write lock (WAL)"; !strings.Contains(out, want) || !strings.Contains(out, "docker stop "+a) || strings.Contains(out, v) {
		t.Errorf("holder in cgroup %s: want %q and docker stop %s, never %s, in\n%s", spoof, want, a, v, out)
	}
}
