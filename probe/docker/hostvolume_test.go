package docker_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/probe/docker"
)

// TestProbeHostPathInVolume: from the engine's host, a path under a
// volume's mountpoint (/var/lib/docker/volumes/NAME/_data) is that volume:
// a running and a created container that mount it are reported as "same
// volume", for the mountpoint and for a database below it, not as a bind
// that contains ours. The run is on the engine's host (its data root is
// visible here), so a /.dockerenv file, if this machine has one, leaves the
// answer sure and unremarked.
func TestProbeHostPathInVolume(t *testing.T) {
	img := testImage(t)
	vol := runID + "-hostvol"
	mustDocker(t, "volume", "create", "--label", "preflight.test="+runID, vol)
	mp := mustDocker(t, "volume", "inspect", "--format", "{{.Mountpoint}}", vol)
	if _, err := os.Stat(mp); err != nil {
		t.Skipf("skipping: volume mountpoint %s is not visible here (the engine runs elsewhere): %v", mp, err)
	}
	running := runSleeper(t, "-v", vol+":/data")
	created := mustDocker(t, "create", "--label", "preflight.test="+runID, "-v", vol+":/data", img, "sleep")

	paths := []string{mp, mp + "/app.db"}
	r := docker.Probe(context.Background(), paths, docker.Options{Host: docker.DefaultHost, Timeout: 10 * time.Second})
	t.Logf("Probe(%v) = %s", paths, dumpJSON(r))
	if r.Status != docker.StatusRan || !r.Sure || r.InContainer {
		t.Fatalf("Probe(%v): status %q sure %v in_container %v err %q, want ran, sure, on the host", paths, r.Status, r.Sure, r.InContainer, r.Err)
	}
	if strings.Contains(r.Err, ".dockerenv") || strings.Contains(r.Err, ".containerenv") {
		t.Errorf("Probe(%v).Err = %q, want no marker-file note on the engine's host", paths, r.Err)
	}
	for _, c := range []struct {
		what string
		id   string
		ws   []docker.Writer
	}{{"Writers", running, r.Writers}, {"Stopped", created, r.Stopped}} {
		for _, p := range paths {
			found := false
			for _, w := range c.ws {
				if w.Container.ID == c.id && w.Path == p {
					found = true
					if w.Relation != docker.SameVolume || w.Mount.Name != vol {
						t.Errorf("Probe(%v).%s for %s: relation %q mount %+v, want %q on volume %s", paths, c.what, p, w.Relation, w.Mount, docker.SameVolume, vol)
					}
				}
			}
			if !found {
				t.Errorf("Probe(%v).%s: no entry for container %s at %s", paths, c.what, c.id, p)
			}
		}
	}

	// WritersOf a host path below the mountpoint names the volume too.
	w := docker.WritersOf(context.Background(), "", mp, docker.Options{Host: docker.DefaultHost, Timeout: 10 * time.Second})
	if got := writerNames(w.Writers)[running]; got.Relation != docker.SameVolume {
		t.Errorf("WritersOf(host path %s).Writers[%s] = %+v, want %q", mp, running, got, docker.SameVolume)
	}
	if got := writerNames(w.Stopped)[created]; got.Relation != docker.SameVolume {
		t.Errorf("WritersOf(host path %s).Stopped[%s] = %+v, want %q", mp, created, got, docker.SameVolume)
	}
}

// TestWritersOfMissingVolume: a volume the engine does not have is said
// to be missing, not answered with "no writers".
func TestWritersOfMissingVolume(t *testing.T) {
	needDocker(t)
	name := runID + "-no-such-volume"
	r := docker.WritersOf(context.Background(), name, "", docker.Options{Host: docker.DefaultHost, Timeout: 10 * time.Second})
	if r.Status != docker.StatusRan || !r.NoSuchVolume {
		t.Errorf("WritersOf(volume %q) = %s, want ran and no_such_volume", name, dumpJSON(r))
	}
	vol := runID + "-present"
	mustDocker(t, "volume", "create", "--label", "preflight.test="+runID, vol)
	if r := docker.WritersOf(context.Background(), vol, "", docker.Options{Host: docker.DefaultHost, Timeout: 10 * time.Second}); r.Status != docker.StatusRan || r.NoSuchVolume {
		t.Errorf("WritersOf(volume %q) = %s, want ran and the volume found", vol, dumpJSON(r))
	}
}
