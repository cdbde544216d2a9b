package integration_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestLocksInContainerHostPID: preflight locks run as the documented
// container (the socket, the host's PID namespace, root), over the demo
// app in another container that has the database open: the app's
// process is one writer, with its container (from its cgroup and the
// engine), not also counted as the container (which would make two,
// multiple-writers); its remedy is docker stop NAME, run here as printed.
func TestLocksInContainerHostPID(t *testing.T) {
	requireDocker(t)
	dir := hostDir(t)
	id := startApp(t, "-v", dir+":/data", "-e", "DEMO_INTERVAL=1h", "--entrypoint", "/demoapp", image)
	waitLog(t, id, "demoapp: pid=")
	name := strings.TrimPrefix(strings.TrimSpace(docker(t, "inspect", "--format", "{{.Name}}", id).stdout), "/")
	tag := toolImage(t, "preflight-it-locks")
	db := filepath.Join(dir, "app.db")
	args := []string{"--pid", "host", "--user", "0", "--cap-add", "SYS_PTRACE", "-v", "/var/run/docker.sock:/var/run/docker.sock:ro", "-v", dir + ":" + dir, tag, "locks", "--docker-timeout", "10s"}

	r := dockerRun(t, append(args, "--format", "json", db)...)
	var rep struct {
		report
		DataDirs []struct {
			Databases []struct {
				Writers []struct {
					Kind      string `json:"kind"`
					PID       int    `json:"pid"`
					Container *struct {
						Name string `json:"name"`
					} `json:"container"`
				} `json:"writers"`
			} `json:"databases"`
		} `json:"data_dirs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.DataDirs) != 1 || len(rep.DataDirs[0].Databases) != 1 {
		t.Fatalf("locks --format json: %v\n%s", err, r)
	}
	ws := rep.DataDirs[0].Databases[0].Writers
	if len(ws) != 1 || ws[0].Kind != "process" || ws[0].PID == 0 || ws[0].Container == nil || ws[0].Container.Name != name {
		t.Errorf("locks in a container with --pid host: writers %+v, want one: the app's process, in container %s\n%s", ws, name, r)
	}
	if lvl, ok := rep.findings()["multiple-writers"]; ok {
		t.Errorf("locks in a container with --pid host: multiple-writers (%s) for one app counted twice\n%s", lvl, r)
	}

	r = dockerRun(t, append(args, db)...)
	stop := "docker stop " + name
	wantContains(t, "locks text", r.stdout, "fix: Stop it before converting or moving the database: "+stop+"\n")
	wantNotContains(t, "locks text", r.stdout, "kill ")
	wantCode(t, run(t, dockerTimeout, nil, "sh", "-c", stop), 0)
	if st := strings.TrimSpace(docker(t, "inspect", "--format", "{{.State.Status}}", id).stdout); st != "exited" {
		t.Errorf("container %s after %s: %s, want exited", name, stop, st)
	}
}
