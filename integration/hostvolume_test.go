package integration_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostCheck is the part of a check report these tests read: each
// database's container writers and stopped containers, and what the
// probes could not see.
type hostCheck struct {
	DataDirs []struct {
		Databases []struct {
			Path    string         `json:"path"`
			Writers []hostWriter   `json:"writers"`
			Stopped []hostWriter   `json:"stopped_containers"`
			Probes  map[string]any `json:"writer_probes"`
		} `json:"databases"`
	} `json:"data_dirs"`
}

type hostWriter struct {
	Kind      string      `json:"kind"`
	Container *wContainer `json:"container"`
	Relation  string      `json:"relation"`
}

// TestHostCheckOnVolume: containers A (stopped after seeding) and B
// (created, never started) mount volume V and nothing else. From the host,
// `check <V's mountpoint>` and `check --container A /data` report B as a
// stopped writer on the same volume (not a bind that contains ours), and
// neither run says anything of /.dockerenv: this runs on the engine's host.
func TestHostCheckOnVolume(t *testing.T) {
	requireDocker(t)
	vol := volume(t)
	nameA, nameB := containerName(t, "a"), containerName(t, "b")
	r := docker(t, "run", "--label", label, "--name", nameA, "-v", vol+":/data", "--entrypoint", "/demoapp", "-e", "DEMO_ROWS=5", image)
	wantCode(t, r, 0)
	t.Cleanup(func() { docker(t, "rm", "-f", nameA) })
	wantCode(t, docker(t, "create", "--label", label, "--name", nameB, "-v", vol+":/data", "--entrypoint", "/demoapp", image), 0)
	t.Cleanup(func() { docker(t, "rm", "-f", nameB) })
	mp := strings.TrimSpace(docker(t, "volume", "inspect", "--format", "{{.Mountpoint}}", vol).stdout)
	if _, err := os.Stat(filepath.Join(mp, "app.db")); err != nil {
		t.Skipf("skipping: the volume's mountpoint is not visible here (the engine runs elsewhere): %v", err)
	}
	pf := filepath.Join(binDir, "preflight")
	for _, args := range [][]string{{mp}, {"--container", nameA, "/data"}} {
		c := run(t, dockerTimeout, nil, pf, append([]string{"check", "--format", "json"}, args...)...)
		if strings.Contains(c.stdout+c.stderr, "dockerenv") {
			t.Errorf("check %v mentions /.dockerenv on the engine's host:\n%s", args, c)
		}
		var rep hostCheck
		if err := json.Unmarshal([]byte(c.stdout), &rep); err != nil {
			t.Fatalf("check %v: decode: %v\n%s", args, err, c)
		}
		found := false
		for _, d := range rep.DataDirs {
			for _, db := range d.Databases {
				for _, w := range append(db.Writers, db.Stopped...) {
					if w.Kind != "container" || w.Container == nil {
						continue
					}
					if w.Container.Name == nameA && args[0] == "--container" {
						t.Errorf("check %v: %s reports the container checked as a writer", args, db.Path)
					}
					if w.Relation != "same volume" {
						t.Errorf("check %v: %s: container %s relation %q, want \"same volume\"", args, db.Path, w.Container.Name, w.Relation)
					}
					found = found || w.Container.Name == nameB
				}
			}
		}
		if !found {
			t.Errorf("check %v: no database names stopped container %s:\n%s", args, nameB, c)
		}
		text := run(t, dockerTimeout, nil, pf, append([]string{"check"}, args...)...)
		wantContains(t, "check text", text.stdout, nameB)
		wantNotContains(t, "check text", text.stdout+text.stderr, "bind contains ours")
		wantNotContains(t, "check text", text.stdout+text.stderr, "dockerenv")
	}
}

// TestWritersListsStopped: `writers` text lists the stopped containers its
// JSON lists, for --host-path and --volume, and a volume the engine does
// not have is an error (exit 2), not "no writers".
func TestWritersListsStopped(t *testing.T) {
	requireDocker(t)
	dir := hostDir(t)
	vol := volume(t)
	name := containerName(t, "created")
	wantCode(t, docker(t, "create", "--label", label, "--name", name, "-v", dir+":/data", "-v", vol+":/srv", "--entrypoint", "/demoapp", image), 0)
	t.Cleanup(func() { docker(t, "rm", "-f", name) })
	pf := filepath.Join(binDir, "preflight")

	for _, args := range [][]string{{"--host-path", dir}, {"--volume", vol}} {
		r := run(t, dockerTimeout, nil, pf, append([]string{"writers"}, args...)...)
		wantCode(t, r, 0)
		wantContains(t, "writers text", r.stdout, "no running container writes")
		wantContains(t, "writers text", r.stdout, "stopped ones write it once started")
		wantContains(t, "writers text", r.stdout, name)
		wantContains(t, "writers text", r.stdout, "created")
		j := run(t, dockerTimeout, nil, pf, append([]string{"writers", "--format", "json"}, args...)...)
		wantCode(t, j, 0)
		wantContains(t, "writers json", j.stdout, `"stopped"`)
		wantContains(t, "writers json", j.stdout, name)
	}

	missing := vol + "-typo"
	r := run(t, dockerTimeout, nil, pf, "writers", "--volume", missing)
	wantCode(t, r, 2)
	wantContains(t, "writers --volume typo stderr", r.stderr, "preflight: error: writers: no volume named "+missing)
	wantNotContains(t, "writers --volume typo stdout", r.stdout, "no running container")
}
