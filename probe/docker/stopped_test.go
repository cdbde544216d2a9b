package docker_test

import (
	"context"
	"testing"

	"github.com/preflight-sqlite/preflight/probe/docker"
)

// TestStoppedContainers: containers that mount the data read-write but do
// not run (created, exited) are future writers, reported in Stopped, not
// in Writers; a read-only one is in neither.
func TestStoppedContainers(t *testing.T) {
	img := testImage(t)
	vol := runID + "-stopped"
	mustDocker(t, "volume", "create", "--label", "preflight.test="+runID, vol)
	running := runSleeper(t, "-v", vol+":/data")
	created := mustDocker(t, "create", "--label", "preflight.test="+runID, "-v", vol+":/data", img, "sleep")
	exited := runSleeper(t, "-v", vol+":/srv")
	mustDocker(t, "kill", exited)
	mustDocker(t, "wait", exited)
	readOnly := mustDocker(t, "create", "--label", "preflight.test="+runID, "-v", vol+":/data:ro", img, "sleep")

	r := docker.WritersOf(context.Background(), vol, "", docker.Options{Host: docker.DefaultHost})
	if r.Status != docker.StatusRan || !r.Sure {
		t.Fatalf("WritersOf(%q) = %s, want ran and sure", vol, dumpJSON(r))
	}
	if ws := writerNames(r.Writers); len(r.Writers) != 1 || ws[running].Relation != docker.SameVolume {
		t.Errorf("WritersOf(%q).Writers = %s, want the running container %s alone", vol, dumpJSON(r.Writers), running)
	}
	st := writerNames(r.Stopped)
	for id, state := range map[string]string{created: "created", exited: "exited"} {
		w, ok := st[id]
		if !ok || w.Container.State != state || w.Relation != docker.SameVolume || !w.Mount.RW {
			t.Errorf("WritersOf(%q).Stopped[%s] = %+v (found %v), want state %s, same volume, rw", vol, id, w, ok, state)
		}
	}
	if _, ok := st[readOnly]; ok || len(r.Stopped) != 2 {
		t.Errorf("WritersOf(%q).Stopped = %s, want the created and the exited container, not the read-only one", vol, dumpJSON(r.Stopped))
	}
}
