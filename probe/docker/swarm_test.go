package docker_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/fakeengine"
	"github.com/preflight-sqlite/preflight/probe/docker"
)

// swarmEngine is a fake engine (internal/fakeengine) answering as the
// Swarm node of the captured answers in testdata/swarm (see its README).
type swarmEngine struct {
	*fakeengine.Engine
	mountpoint string
}

const (
	two   = "tasks-two-nodes.json"
	nodes = "nodes-two-nodes.json"
)

func startSwarmEngine(t *testing.T, info, services, tasks, nodes string, bothLocal bool, denied ...string) *swarmEngine {
	t.Helper()
	mp := filepath.Join(t.TempDir(), "volumes", "swarm-capture-vol", "_data")
	if err := os.MkdirAll(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	answers := fakeengine.SwarmAnswers(t, filepath.Join("testdata", "swarm"), mp,
		fakeengine.SwarmCase{Info: info, Services: services, Tasks: tasks, Nodes: nodes, BothLocal: bothLocal})
	return &swarmEngine{Engine: fakeengine.Start(t, answers, denied...), mountpoint: mp}
}

func (e *swarmEngine) asked(path string) bool { return e.Asked("GET", path) }

func (e *swarmEngine) probe(t *testing.T) docker.Result {
	t.Helper()
	r := docker.Probe(context.Background(), []string{e.mountpoint}, docker.Options{Host: e.Host, HostPaths: true, Timeout: 10 * time.Second})
	if r.Status != docker.StatusRan {
		t.Fatalf("Probe(%s) = status %s: %s", e.mountpoint, r.Status, r.Err)
	}
	return r
}

// TestSwarmTasksOnTwoNodes: on a manager, the service whose tasks mount the
// volume is found with both tasks, the one on the other node (another
// kernel) marked, its node's hostname, replicas 2 and start-first; the
// task on this node is also a container writer, named by its swarm labels.
func TestSwarmTasksOnTwoNodes(t *testing.T) {
	e := startSwarmEngine(t, "info-manager.json", "services.json", two, nodes, false)
	r := e.probe(t)
	if !r.Sure || r.Swarm == nil || r.Swarm.Role != docker.SwarmManager || !r.Swarm.ServicesVisible {
		t.Fatalf("Probe: sure %v, swarm %s, want sure, a manager that lists services (err %q)", r.Sure, dumpJSON(r.Swarm), r.Err)
	}
	if len(r.Swarm.Services) != 1 {
		t.Fatalf("swarm services = %s, want swarm-capture only", dumpJSON(r.Swarm.Services))
	}
	s := r.Swarm.Services[0]
	if s.Name != "swarm-capture" || s.Mode != docker.ModeReplicated || s.Replicas != 2 || s.UpdateOrder != docker.OrderStartFirst ||
		s.RollbackOrder != docker.OrderStopFirst || s.Relation != docker.SameVolume || s.Shared || s.Path != e.mountpoint {
		t.Errorf("service = %s, want swarm-capture replicated 2, start-first update, stop-first rollback, same volume, not shared, path %s", dumpJSON(s), e.mountpoint)
	}
	if len(s.Tasks) != 2 {
		t.Fatalf("tasks = %s, want swarm-capture.1 and .2", dumpJSON(s.Tasks))
	}
	t1, t2 := s.Tasks[0], s.Tasks[1]
	if t1.Name != "swarm-capture.1" || t1.OtherNode || t1.Node != "vm" || t1.ContainerID != fakeengine.Task1Container || t1.State != "running" {
		t.Errorf("task 1 = %s, want swarm-capture.1 on this node (vm), running, its container", dumpJSON(t1))
	}
	if t2.Name != "swarm-capture.2" || !t2.OtherNode || t2.Node != "node-2" || t2.NodeID != "x2mq7d0c8z4kv1h5n3r6t9w0e" {
		t.Errorf("task 2 = %s, want swarm-capture.2 on node-2, another node", dumpJSON(t2))
	}
	if len(r.Writers) != 1 || r.Writers[0].Container.SwarmService != "swarm-capture" || !strings.HasPrefix(r.Writers[0].Container.SwarmTask, "swarm-capture.1.") {
		t.Errorf("container writers = %s, want task swarm-capture.1's container with its swarm labels", dumpJSON(r.Writers))
	}
	for _, p := range []string{"/v1.41/services", "/v1.41/tasks", "/v1.41/nodes"} {
		if !e.asked(p) {
			t.Errorf("the probe did not GET %s", p)
		}
	}
}

// TestSwarmSharedVolume: a service mount of a local volume of type nfs
// names storage every node reaches.
func TestSwarmSharedVolume(t *testing.T) {
	e := startSwarmEngine(t, "info-manager.json", "services-nfs.json", two, nodes, false)
	r := e.probe(t)
	if r.Swarm == nil || len(r.Swarm.Services) != 1 || !r.Swarm.Services[0].Shared {
		t.Fatalf("swarm = %s, want one service whose mount is shared (nfs volume options)", dumpJSON(r.Swarm))
	}
}

// TestSwarmWorker: a worker has no manager API: the probe says services
// cannot be seen and never asks for them.
func TestSwarmWorker(t *testing.T) {
	e := startSwarmEngine(t, "info-worker.json", "services.json", two, nodes, false)
	r := e.probe(t)
	if r.Swarm == nil || r.Swarm.Role != docker.SwarmWorker || r.Swarm.ServicesVisible || len(r.Swarm.Services) != 0 {
		t.Fatalf("swarm = %s, want role worker, services not visible, none listed", dumpJSON(r.Swarm))
	}
	if r.Swarm.NodeID != "x2mq7d0c8z4kv1h5n3r6t9w0e" {
		t.Errorf("swarm node = %q, want the worker's own node id", r.Swarm.NodeID)
	}
	if e.asked("/v1.41/services") || e.asked("/v1.41/tasks") {
		t.Errorf("the probe asked a worker for services or tasks: %q", e.Seen())
	}
}

// TestSwarmDenied: a manager behind a socket proxy that denies /services
// (or /tasks) gives an answer that is not sure and says why; /nodes denied
// only loses the hostnames.
func TestSwarmDenied(t *testing.T) {
	for _, p := range []string{"/v1.41/services", "/v1.41/tasks"} {
		e := startSwarmEngine(t, "info-manager.json", "services.json", two, nodes, false, p)
		r := e.probe(t)
		if r.Sure || r.Swarm == nil || r.Swarm.ServicesVisible || !strings.Contains(r.Err, "list swarm "+strings.TrimPrefix(p, "/v1.41/")) {
			t.Errorf("%s denied: sure %v, swarm %s, err %q; want not sure, services not visible, the error naming the list", p, r.Sure, dumpJSON(r.Swarm), r.Err)
		}
	}
	e := startSwarmEngine(t, "info-manager.json", "services.json", two, nodes, false, "/v1.41/nodes")
	r := e.probe(t)
	if !r.Sure || r.Swarm == nil || len(r.Swarm.Services) != 1 || r.Swarm.Services[0].Tasks[1].Node != "" || !r.Swarm.Services[0].Tasks[1].OtherNode {
		t.Errorf("/nodes denied: sure %v, swarm %s; want sure, the tasks by node id only", r.Sure, dumpJSON(r.Swarm))
	}
}

// TestSwarmEndlessServices: a manager whose service list never ends costs
// at most MaxBody of it: the answer is not sure and names the bound, and
// the containers found still stand.
func TestSwarmEndlessServices(t *testing.T) {
	mp := filepath.Join(t.TempDir(), "volumes", "swarm-capture-vol", "_data")
	if err := os.MkdirAll(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	answers := fakeengine.SwarmAnswers(t, filepath.Join("testdata", "swarm"), mp,
		fakeengine.SwarmCase{Info: "info-manager.json", Services: "services.json", Tasks: two, Nodes: nodes})
	answers["/v1.41/services"] = fakeengine.Endless
	e := fakeengine.Start(t, answers)
	r := docker.Probe(context.Background(), []string{mp}, docker.Options{Host: e.Host, HostPaths: true, Timeout: 20 * time.Second})
	if r.Status != docker.StatusRan || r.Sure || !strings.Contains(r.Err, "list swarm services") || !bounded(r.Err) {
		t.Fatalf("Probe(endless /services) = status %s, sure %v, err %q; want ran, not sure, naming the list and the bound", r.Status, r.Sure, r.Err)
	}
	if len(r.Writers) != 1 || r.Swarm == nil || r.Swarm.ServicesVisible {
		t.Errorf("writers %d, swarm %s; want task 1's container, services not visible", len(r.Writers), dumpJSON(r.Swarm))
	}
}

// TestSwarmTasksOneNode: the answers as captured (both tasks on this
// node): both tasks on this node, and both their containers writers.
func TestSwarmTasksOneNode(t *testing.T) {
	e := startSwarmEngine(t, "info-manager.json", "services.json", "tasks-one-node.json", nodes, true)
	r := e.probe(t)
	if r.Swarm == nil || len(r.Swarm.Services) != 1 || len(r.Swarm.Services[0].Tasks) != 2 {
		t.Fatalf("swarm = %s, want swarm-capture with two tasks", dumpJSON(r.Swarm))
	}
	for _, tk := range r.Swarm.Services[0].Tasks {
		if tk.OtherNode || tk.Node != "vm" {
			t.Errorf("task %s: want on this node (vm)", dumpJSON(tk))
		}
	}
	if len(r.Writers) != 2 {
		t.Errorf("container writers = %s, want both task containers", dumpJSON(r.Writers))
	}
}
