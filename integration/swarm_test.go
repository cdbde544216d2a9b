package integration_test

// Swarm on this machine's engine: a service with two replicas writing one
// named volume, found from a third container through the Docker socket
// (check, convert) and from the host (writers). The engine is shared with
// other tests: the swarm is made here and left at the end, even on failure,
// and everything made carries a swarm- name.

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// swarmReport is the part of check's JSON report about Swarm.
type swarmReport struct {
	Docker struct {
		Swarm *struct {
			Role            string `json:"role"`
			ServicesVisible bool   `json:"services_visible"`
			Services        []struct {
				Name        string `json:"name"`
				Mode        string `json:"mode"`
				Replicas    int    `json:"replicas"`
				UpdateOrder string `json:"update_order"`
				Relation    string `json:"relation"`
				Path        string `json:"path"`
				Tasks       []struct {
					Name      string `json:"name"`
					OtherNode bool   `json:"other_node"`
					State     string `json:"state"`
				} `json:"tasks"`
			} `json:"services"`
		} `json:"swarm"`
	} `json:"docker"`
}

// swarmInit makes this engine a one-node swarm for the test and registers
// the cleanup that removes the service and volume and leaves the swarm. An
// engine already in a swarm belongs to someone else: the test skips (fails
// when Docker is required) rather than leave it.
func swarmInit(t *testing.T, service, vol string) {
	t.Helper()
	state := strings.TrimSpace(docker(t, "info", "--format", "{{.Swarm.LocalNodeState}}").stdout)
	if state != "inactive" {
		if required {
			t.Fatalf("the engine is already in a swarm (state %q), not made by this test", state)
		}
		t.Skipf("the engine is already in a swarm (state %q), not made by this test: not touching it", state)
	}
	wantCode(t, docker(t, "swarm", "init", "--advertise-addr", "127.0.0.1"), 0)
	t.Cleanup(func() {
		docker(t, "service", "rm", service)
		// The tasks' containers go with the service, then the volume can.
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if strings.TrimSpace(docker(t, "ps", "-aq", "--filter", "label=com.docker.swarm.service.name="+service).stdout) == "" {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		docker(t, "volume", "rm", "-f", vol)
		if r := docker(t, "swarm", "leave", "--force"); r.code != 0 {
			t.Errorf("leave the swarm: %s", r)
		}
	})
}

// swarmTasks waits up to 60s for n running task containers of service that
// have each written to the database, and returns their names.
func swarmTasks(t *testing.T, service string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		names := strings.Fields(docker(t, "ps", "--filter", "label=com.docker.swarm.service.name="+service, "--filter", "status=running", "--format", "{{.Names}}").stdout)
		if len(names) == n {
			for _, name := range names {
				waitLog(t, name, "demoapp: insert id=")
			}
			return names
		}
		if time.Now().After(deadline) {
			t.Fatalf("service %s: %d running task containers after 60s, want %d\n%s", service, len(names), n, docker(t, "service", "ps", "--no-trunc", service))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestSwarmReplicasOneVolume: a service with two replicas (start-first
// updates) writing one volume is found from a third container, which
// mounts the volume and the Docker socket: both task containers are
// writers named with their service, the service is found with its two
// tasks on this node, replicas and start-first are findings, and convert
// refuses with the docker service scale command; writers on the host lists
// the service and its tasks.
func TestSwarmReplicasOneVolume(t *testing.T) {
	requireDocker(t)
	service, vol, checker := "swarm-"+runID+"-app", "swarm-"+runID+"-vol", "swarm-"+runID+"-check"
	swarmInit(t, service, vol)
	wantCode(t, docker(t, "volume", "create", "--label", label, vol), 0)
	wantCode(t, docker(t, "service", "create", "-d", "--name", service, "--label", label, "--replicas", "2",
		"--update-order", "start-first", "--mount", "type=volume,src="+vol+",dst=/data",
		"-e", "DEMO_INTERVAL="+writerInterval, "--entrypoint", "/demoapp", image), 0)
	tasks := swarmTasks(t, service, 2)

	sock := []string{"--user", "0", "-v", dockerSocket + ":" + dockerSocket}
	b := append([]string{"--name", checker, "-v", vol + ":/data"}, sock...)
	r := dockerRun(t, append(b, "--entrypoint", "/preflight", image, "check", "--format", "json", "/data")...)
	rep := decodeWReport(t, r, 4)
	db := rep.db(t, "/data/app.db")
	cs := db.writersOf("container")
	if len(cs) != 2 {
		t.Fatalf("container writers = %+v, want the two task containers %q\n%s", cs, tasks, db)
	}
	for _, c := range cs {
		if c.Container == nil || !strings.HasPrefix(c.Container.Name, service+".") || c.Relation != "same volume" {
			t.Errorf("container writer %+v relation %q, want a task container of %s on the same volume", c.Container, c.Relation, service)
		}
	}
	wantFinding(t, rep, "live-writer-container", "/data/app.db", "info")
	wantFinding(t, rep, "multiple-writers", "/data/app.db", "warn")
	wantFinding(t, rep, "replicas-on-sqlite-volume", "/data/app.db", "warn")
	wantFinding(t, rep, "start-first-on-sqlite-volume", "/data/app.db", "warn")
	wantNoFinding(t, rep, "live-writer-task") // both tasks are on this node: containers
	if f := rep.finding("live-writer-container", "/data/app.db"); f != nil {
		wantContains(t, "live-writer-container message", f.Message, "a task of swarm service "+service)
	}
	if f := rep.finding("replicas-on-sqlite-volume", "/data/app.db"); f != nil {
		wantContains(t, "replicas-on-sqlite-volume message", f.Message, service+".1 on this node")
		wantContains(t, "replicas-on-sqlite-volume message", f.Message, service+".2 on this node")
	}
	var sr swarmReport
	if err := json.Unmarshal([]byte(rep.raw), &sr); err != nil {
		t.Fatal(err)
	}
	// One entry per data path asked about: the data directory and the
	// database.
	sw := sr.Docker.Swarm
	if sw == nil || sw.Role != "manager" || !sw.ServicesVisible || len(sw.Services) != 2 || sw.Services[1].Path != "/data/app.db" {
		t.Fatalf("docker.swarm = %+v, want a manager listing service %s for /data and /data/app.db\n%s", sw, service, rep.raw)
	}
	s := sw.Services[1]
	if s.Name != service || s.Mode != "replicated" || s.Replicas != 2 || s.UpdateOrder != "start-first" || s.Relation != "same volume" || len(s.Tasks) != 2 {
		t.Errorf("service = %+v, want %s, replicated 2, start-first, same volume, two tasks", s, service)
	}
	for _, tk := range s.Tasks {
		if tk.OtherNode || tk.State != "running" {
			t.Errorf("task %+v: want running on this node", tk)
		}
	}

	// convert, from the third container: refused, naming the tasks and
	// the command that stops them (docker stop only makes Swarm start
	// another task).
	r = dockerRun(t, append(sock, "-v", vol+":/data", "--entrypoint", "/preflight", image, "convert", "--dry-run", "/data/app.db")...)
	wantCode(t, r, 3)
	t.Logf("convert --dry-run:\n%s%s", r.stdout, r.stderr)
	wantContains(t, "convert output", r.stdout+r.stderr, "a task of swarm service "+service)
	wantContains(t, "convert output", r.stdout+r.stderr, "docker service scale "+service+"=0")

	// writers, on the host.
	pf := filepath.Join(binDir, "preflight")
	w := run(t, dockerTimeout, nil, pf, "writers", "--volume", vol)
	wantCode(t, w, 0)
	t.Logf("writers --volume %s:\n%s", vol, w.stdout)
	for _, name := range tasks {
		wantContains(t, "writers text", w.stdout, name)
	}
	wantContains(t, "writers text", w.stdout, "Swarm services that mount volume "+vol)
	wantContains(t, "writers text", w.stdout, service+".1")
	wantContains(t, "writers text", w.stdout, service+".2")
	wantContains(t, "writers text", w.stdout, "one writer: docker service scale "+service+"=1")
	wantContains(t, "writers text", w.stdout, "docker service update --update-order stop-first --rollback-order stop-first "+service)
	j := run(t, dockerTimeout, nil, pf, "writers", "--format", "json", "--volume", vol)
	wantCode(t, j, 0)
	wantContains(t, "writers json", j.stdout, `"swarm"`)
	wantContains(t, "writers json", j.stdout, `"update_order": "start-first"`)
}

// TestAuditSwarmServiceElsewhere: on a one-node swarm, a service with two
// replicas (start-first updates) on a named volume whose placement
// constraint no node satisfies has no task here: audit lists it from its
// spec, its /data not inspected (mount-not-inspected, naming where to
// run instead), with replicas-on-sqlite-volume and
// start-first-on-sqlite-volume from the spec alone, in the JSON, the text
// table and SARIF.
func TestAuditSwarmServiceElsewhere(t *testing.T) {
	requireDocker(t)
	service, vol := "swarm-"+runID+"-away", "swarm-"+runID+"-awayvol"
	swarmInit(t, service, vol)
	wantCode(t, docker(t, "volume", "create", "--label", label, vol), 0)
	wantCode(t, docker(t, "service", "create", "-d", "--name", service, "--label", label, "--replicas", "2",
		"--constraint", "node.labels.nonexistent==x", "--update-order", "start-first",
		"--mount", "type=volume,src="+vol+",dst=/data", "--entrypoint", "/demoapp", image), 0)
	// The orchestrator makes the two tasks, pending: no node matches.
	deadline := time.Now().Add(60 * time.Second)
	for {
		states := strings.Fields(docker(t, "service", "ps", "--format", "{{.CurrentState}}", service).stdout)
		if len(states) >= 2 && states[0] == "Pending" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("service %s: tasks not pending after 60s: %q", service, states)
		}
		time.Sleep(500 * time.Millisecond)
	}

	pf := filepath.Join(binDir, "preflight")
	r := run(t, dockerTimeout, nil, pf, "audit", "--format", "json")
	ar := decodeAudit(t, r)
	var doc struct {
		Services []struct {
			Service struct {
				Name     string `json:"name"`
				Mode     string `json:"mode"`
				Replicas int    `json:"replicas"`
				Mounts   []struct {
					Type, Name, Destination string
				} `json:"mounts"`
				Tasks []struct {
					Name, State string
					OtherNode   bool `json:"other_node"`
				} `json:"tasks"`
			} `json:"service"`
			Mounts []struct {
				Destination  string `json:"destination"`
				NotInspected string `json:"not_inspected"`
			} `json:"mounts"`
			Report  report `json:"report"`
			Verdict string `json:"verdict"`
		} `json:"services"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range doc.Services {
		if s.Service.Name != service {
			continue
		}
		found = true
		sv := s.Service
		if sv.Mode != "replicated" || sv.Replicas != 2 || len(sv.Mounts) != 1 || sv.Mounts[0].Name != vol || len(sv.Tasks) != 2 || sv.Tasks[0].State != "pending" {
			t.Errorf("audit: service %+v, want replicated 2 on volume %s with two pending tasks", sv, vol)
		}
		if len(s.Mounts) != 1 || s.Mounts[0].Destination != "/data" {
			t.Fatalf("audit: service mounts %+v, want /data", s.Mounts)
		}
		wantContains(t, "not_inspected", s.Mounts[0].NotInspected, "has no task on this node")
		fs := s.Report.findings()
		for _, id := range []string{"mount-not-inspected", "replicas-on-sqlite-volume", "start-first-on-sqlite-volume"} {
			if fs[id] != "warn" {
				t.Errorf("audit of service %s: findings %v, want %s warn", service, fs, id)
			}
		}
		if s.Verdict != "warn" {
			t.Errorf("audit of service %s: verdict %s, want warn", service, s.Verdict)
		}
	}
	if !found {
		t.Fatalf("audit does not list service %s (no task on this node)\n%s", service, r)
	}
	for _, c := range ar.Containers {
		if strings.HasPrefix(c.Container.Name, service+".") {
			t.Errorf("audit lists a container %s of a service with no task here", c.Container.Name)
		}
	}

	r = run(t, dockerTimeout, nil, pf, "audit")
	wantCode(t, r, exitOf(ar.Verdict))
	wantContains(t, "audit text", r.stdout, "swarm/"+service)
	wantContains(t, "audit text", r.stdout, "/data <- vol:"+vol)
	wantContains(t, "audit text", r.stdout, "service "+service+" (")
	wantContains(t, "audit text", r.stdout, ", no task on this node): warn")
	wantContains(t, "audit text", r.stdout, "docker service scale "+service+"=1")
	wantContains(t, "audit text", r.stdout, service+".1 on no node yet, pending")
	r = run(t, dockerTimeout, nil, pf, "audit", "--format", "sarif")
	wantCode(t, r, exitOf(ar.Verdict))
	wantContains(t, "audit sarif", r.stdout, "service "+service+": ")
}
