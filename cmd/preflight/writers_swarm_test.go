package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/fakeengine"
)

// TestWritersSwarm: writers --volume on a Swarm manager (a fake engine
// with the captured Swarm answers, task 2 moved to node-2) lists the
// service's tasks with their nodes after the containers, and the commands
// that leave one writer; on a worker it warns that services cannot be seen.
func TestWritersSwarm(t *testing.T) {
	for _, tc := range []struct {
		info      string
		stdout    []string
		stderr    string
		notStdout string
	}{
		{"info-manager.json", []string{"Swarm services that mount volume swarm-capture-vol", "swarm-capture.1", "swarm-capture.2", "node-2 (other node)",
			"replicated 2", "one writer: docker service scale swarm-capture=1", "one writer: docker service update --update-order stop-first --rollback-order stop-first swarm-capture"}, "", ""},
		{"info-worker.json", []string{"swarm-capture.1.qkzyfu9cwomdgterqyoezvhhk"}, "preflight: warning: writers: Swarm services and their tasks on other nodes cannot be seen: this engine is a Swarm worker node", "Swarm services that mount"},
	} {
		mp := filepath.Join(t.TempDir(), "volumes", "swarm-capture-vol", "_data")
		if err := os.MkdirAll(mp, 0o755); err != nil {
			t.Fatal(err)
		}
		e := fakeengine.Start(t, fakeengine.SwarmAnswers(t, filepath.Join("..", "..", "probe", "docker", "testdata", "swarm"), mp,
			fakeengine.SwarmCase{Info: tc.info, Services: "services.json", Tasks: "tasks-two-nodes.json", Nodes: "nodes-two-nodes.json"}))
		t.Setenv("DOCKER_HOST", e.Host)
		stdout, stderr, code := runMain(t, "writers", "--volume", "swarm-capture-vol")
		if code != 0 {
			t.Fatalf("%s: writers exit %d\n%s%s", tc.info, code, stdout, stderr)
		}
		for _, s := range tc.stdout {
			if !strings.Contains(stdout, s) {
				t.Errorf("%s: writers stdout does not contain %q:\n%s", tc.info, s, stdout)
			}
		}
		if tc.stderr != "" && !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%s: writers stderr does not contain %q:\n%s", tc.info, tc.stderr, stderr)
		}
		if tc.notStdout != "" && strings.Contains(stdout, tc.notStdout) {
			t.Errorf("%s: writers stdout contains %q:\n%s", tc.info, tc.notStdout, stdout)
		}
	}
}
