package convert_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/convert"
	"github.com/preflight-sqlite/preflight/internal/fakeengine"
	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/docker"
)

// TestGuardSwarmTasks: convert refuses a database that the Swarm service
// swarm-capture writes (a fake engine with the captured Swarm answers, its
// task 2 moved to another node, on an NFS volume): the task on this node as
// a writer and the one on node-2 as writer-task, both naming the service
// and the docker service scale command; replicas 2 and start-first are
// notes. Nothing is changed.
func TestGuardSwarmTasks(t *testing.T) {
	mp := filepath.Join(t.TempDir(), "volumes", "swarm-capture-vol", "_data")
	if err := os.MkdirAll(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(mp, "app.db")
	testdb.Make(t, db, "wal", 3)
	before := files(t, db)
	e := fakeengine.Start(t, fakeengine.SwarmAnswers(t, filepath.Join("..", "probe", "docker", "testdata", "swarm"), mp,
		fakeengine.SwarmCase{Info: "info-manager.json", Services: "services-nfs.json", Tasks: "tasks-two-nodes.json", Nodes: "nodes-two-nodes.json"}))
	o := opts(db)
	o.Check.Writers.Docker = docker.Options{Host: e.Host, HostPaths: true, Timeout: 10 * time.Second}
	d := one(t, run(t, o), convert.StatusRefused)
	reasons := map[string]convert.Refusal{}
	for _, r := range d.Refusals {
		reasons[r.Reason] = r
	}
	w, ok := reasons["writer"]
	if !ok || !strings.Contains(w.Message, "a task of swarm service swarm-capture") || !strings.Contains(strings.Join(w.Remedy, " "), "docker service scale swarm-capture=0") {
		t.Errorf("writer refusal = %+v, want task swarm-capture.1's container stopped with docker service scale; refusals %+v", w, d.Refusals)
	}
	wt, ok := reasons["writer-task"]
	if !ok || !strings.Contains(wt.Message, "task swarm-capture.2 of service swarm-capture") || !strings.Contains(wt.Message, "node-2") ||
		!strings.Contains(strings.Join(wt.Remedy, " "), "docker service scale swarm-capture=1") {
		t.Errorf("writer-task refusal = %+v, want task swarm-capture.2 on node-2 and docker service scale; refusals %+v", wt, d.Refusals)
	}
	notes := strings.Join(d.Notes, "\n")
	for _, s := range []string{"2 replicas", "update_config order start-first", "docker service update --update-order stop-first"} {
		if !strings.Contains(notes, s) {
			t.Errorf("notes %q do not contain %q", d.Notes, s)
		}
	}
	wantUntouched(t, db, before)
}
