package preflight_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/internal/fakeengine"
	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/docker"
)

// swarmCheck checks a real database in the mountpoint of the volume the
// captured Swarm service swarm-capture mounts, against a fake engine that
// answers with the captured Swarm answers of c (probe/docker/testdata/swarm).
func swarmCheck(t *testing.T, mode string, c fakeengine.SwarmCase) (*preflight.Report, string) {
	t.Helper()
	mp := filepath.Join(t.TempDir(), "volumes", "swarm-capture-vol", "_data")
	if err := os.MkdirAll(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(mp, "app.db")
	testdb.Make(t, db, mode, 3)
	e := fakeengine.Start(t, fakeengine.SwarmAnswers(t, filepath.Join("probe", "docker", "testdata", "swarm"), mp, c))
	r, err := preflight.Check(context.Background(), preflight.Options{
		Paths:   []string{mp},
		Writers: preflight.WriterOptions{Docker: docker.Options{Host: e.Host, HostPaths: true, Timeout: 10 * time.Second}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Docker == nil || r.Docker.Status != docker.StatusRan {
		t.Fatalf("docker = %+v, want ran", r.Docker)
	}
	return r, db
}

func findingsByID(r *preflight.Report) map[string]preflight.Finding {
	m := map[string]preflight.Finding{}
	for _, f := range r.Findings {
		m[string(f.ID)] = f
	}
	return m
}

func wantFindingText(t *testing.T, f preflight.Finding, subs ...string) {
	t.Helper()
	text := f.Message + " | " + strings.Join(f.Remedy, " | ")
	for _, s := range subs {
		if !strings.Contains(text, s) {
			t.Errorf("%s: %q does not contain %q", f.ID, text, s)
		}
	}
}

// TestSwarmTaskOnOtherNode: a task of a service on an NFS volume runs on
// another node: live-writer-task, error in WAL mode and warn in DELETE
// mode, naming the task, its node and the scale command; the task on this
// node is a container writer named by its service and task, to be stopped
// with docker service scale (docker stop only makes Swarm start another);
// replicas 2 and start-first are findings of their own.
func TestSwarmTaskOnOtherNode(t *testing.T) {
	c := fakeengine.SwarmCase{Info: "info-manager.json", Services: "services-nfs.json", Tasks: "tasks-two-nodes.json", Nodes: "nodes-two-nodes.json"}
	for _, tc := range []struct{ mode, level string }{{"wal", "error"}, {"delete", "warn"}} {
		r, db := swarmCheck(t, tc.mode, c)
		fs := findingsByID(r)
		f, ok := fs["live-writer-task"]
		if !ok || string(f.Level) != tc.level || f.Path != db {
			t.Errorf("%s: live-writer-task = %+v, want %s on %s; findings %+v", tc.mode, f, tc.level, db, r.Findings)
			continue
		}
		wantFindingText(t, f, "task swarm-capture.2 of service swarm-capture", "node node-2", "docker service scale swarm-capture=1")
		if strings.Contains(f.Message, "swarm-capture.1") {
			t.Errorf("%s: live-writer-task names the task on this node: %q", tc.mode, f.Message)
		}
		wantFindingText(t, fs["live-writer-container"], "swarm-capture.1.", "a task of swarm service swarm-capture", "docker service scale swarm-capture=0")
		wantFindingText(t, fs["replicas-on-sqlite-volume"], "service swarm-capture (2 replicas", "swarm-capture.2 on node node-2", "docker service scale swarm-capture=1")
		wantFindingText(t, fs["start-first-on-sqlite-volume"], "update_config order start-first", "docker service update --update-order stop-first --rollback-order stop-first swarm-capture")
		if r.Verdict != "unsafe" && tc.mode == "wal" {
			t.Errorf("wal: verdict %s, want unsafe", r.Verdict)
		}
	}
}

// TestSwarmLocalVolumeOtherNode: a local volume of the same name on
// another node is that node's own directory: its task is no writer of this
// database (no live-writer-task), but replicas 2 still is a finding. The
// exited container of a task an update replaced is not a future writer:
// Swarm never starts it again.
func TestSwarmLocalVolumeOtherNode(t *testing.T) {
	r, _ := swarmCheck(t, "wal", fakeengine.SwarmCase{Info: "info-manager.json", Services: "services.json", Tasks: "tasks-two-nodes.json", Nodes: "nodes-two-nodes.json", ExitedTask: true})
	fs := findingsByID(r)
	if len(r.Docker.Stopped) == 0 || r.Docker.Stopped[0].Container.SwarmService != "swarm-capture" {
		t.Errorf("docker.stopped = %+v, want the exited task container (a fact)", r.Docker.Stopped)
	}
	if f, ok := fs["stopped-container-writer"]; ok {
		t.Errorf("stopped-container-writer %+v for a finished Swarm task's container", f)
	}
	if f, ok := fs["live-writer-task"]; ok {
		t.Errorf("live-writer-task %+v on a local volume: another node's volume of that name is another directory", f)
	}
	if _, ok := fs["replicas-on-sqlite-volume"]; !ok {
		t.Errorf("no replicas-on-sqlite-volume; findings %+v", r.Findings)
	}
	if _, ok := fs["services-not-visible"]; ok {
		t.Errorf("services-not-visible on a manager that listed them")
	}
}

// TestSwarmServicesNotVisible: on a worker, no service is known, and the
// report says that it cannot be sure no task elsewhere writes the data.
func TestSwarmServicesNotVisible(t *testing.T) {
	r, _ := swarmCheck(t, "wal", fakeengine.SwarmCase{Info: "info-worker.json", Services: "services.json", Tasks: "tasks-two-nodes.json", Nodes: "nodes-two-nodes.json"})
	fs := findingsByID(r)
	f, ok := fs["services-not-visible"]
	if !ok || f.Level != preflight.LevelInfo {
		t.Fatalf("services-not-visible = %+v, want info on a local volume; findings %+v", f, r.Findings)
	}
	wantFindingText(t, f, "not sure", "worker", "manager", "SERVICES, TASKS and NODES")
	for _, id := range []string{"live-writer-task", "replicas-on-sqlite-volume", "start-first-on-sqlite-volume"} {
		if _, ok := fs[id]; ok {
			t.Errorf("%s on a worker, which lists no service", id)
		}
	}
}

// TestComposeDeployKeys: preflight compose judges the deploy: keys that
// docker stack deploy honours, on a compose file loaded as Compose does:
// replicas above 1 (or scale:), mode global and a start-first update or
// rollback order on a service that mounts a data directory read-write;
// error on a network volume; nothing for one replica, stop-first, a
// read-only mount, or a service that keeps no SQLite data.
func TestComposeDeployKeys(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "compose.yaml")
	src := `services:
  kuma:
    image: louislam/uptime-kuma:1
    volumes: [kuma:/app/data]
    deploy:
      replicas: 2
      update_config: {parallelism: 1, order: start-first}
  vw:
    image: vaultwarden/server:1.32.0
    volumes: [vw:/data]
    deploy: {mode: global}
  vw-rollback:
    image: vaultwarden/server
    volumes: [vw-rollback:/data]
    deploy:
      rollback_config: {order: start-first}
  vw-scale:
    image: vaultwarden/server
    volumes: [vw-scale:/data]
    scale: 3
  vw-nfs:
    image: vaultwarden/server
    volumes: [vw-nfs:/data]
    deploy: {replicas: 2}
  vw-one:
    image: vaultwarden/server
    volumes: [vw-one:/data]
    deploy: {replicas: 1, update_config: {order: stop-first}}
  vw-reader:
    image: vaultwarden/server
    volumes: [vw-one:/data:ro]
    deploy: {replicas: 3}
  web:
    image: nginx:1.27
    volumes: [static:/usr/share/nginx/html]
    deploy: {replicas: 3, update_config: {order: start-first}}
volumes:
  kuma: {}
  vw: {}
  vw-rollback: {}
  vw-scale: {}
  vw-nfs:
    driver_opts: {type: nfs, o: "addr=10.0.0.5,nfsvers=4", device: ":/export/vw"}
  vw-one: {}
  static: {}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := preflight.CheckCompose(context.Background(), composeOpts(file, "linux"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range res.Report.Findings {
		if f.ID == "replicas-on-sqlite-volume" || f.ID == "start-first-on-sqlite-volume" {
			got[string(f.ID)+" "+f.Path] = string(f.Level)
			if f.Path == "vw-scale:/data" && !strings.Contains(f.Message, "scale is 3") {
				t.Errorf("%s %s: message %q does not name scale: 3", f.ID, f.Path, f.Message)
			}
			if f.Path == "kuma:/app/data" && f.ID == "replicas-on-sqlite-volume" && !strings.Contains(f.Message, "deploy.replicas is 2") {
				t.Errorf("%s %s: message %q does not name deploy.replicas: 2", f.ID, f.Path, f.Message)
			}
			if !strings.Contains(strings.Join(f.Remedy, " "), "docker service") {
				t.Errorf("%s %s: remedy %q names no docker service command", f.ID, f.Path, f.Remedy)
			}
		}
	}
	want := map[string]string{
		"replicas-on-sqlite-volume kuma:/app/data":       "warn",
		"start-first-on-sqlite-volume kuma:/app/data":    "warn",
		"replicas-on-sqlite-volume vw:/data":             "warn",
		"start-first-on-sqlite-volume vw-rollback:/data": "warn",
		"replicas-on-sqlite-volume vw-scale:/data":       "warn",
		"replicas-on-sqlite-volume vw-nfs:/data":         "error",
	}
	for k, lvl := range want {
		if got[k] != lvl {
			t.Errorf("%s: level %q, want %q", k, got[k], lvl)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected finding %s (%s)", k, got[k])
		}
	}
	for _, m := range res.Report.Compose.Mounts {
		if m.Service == "kuma" && (m.Deploy == nil || m.Deploy.Replicas != 2 || m.Deploy.UpdateOrder != "start-first") {
			t.Errorf("kuma mount deploy = %+v, want replicas 2, update order start-first", m.Deploy)
		}
	}
}
