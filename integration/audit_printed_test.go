package integration_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// releaseImage is the image the audit's printed docker run line names.
const releaseImage = "ghcr.io/preflight-sqlite/preflight"

// TestAuditPrintedCommands runs every command preflight audit prints for
// the audit containers, exactly as printed (sh -c, the built preflight
// first on PATH), on the real engine:
//   - as a container without the host's PID namespace, each writable
//     mount is mount-not-inspected, whose remedy (and the hint of an audit
//     that cannot reach the engine) is a docker run of the release image
//     with --pid host: run as printed (the image built here, tagged as the
//     release's when no such image is here), it reads the containers
//     through their roots, and counts the two sharing a volume as two
//     writers (each process once, with its container);
//   - on the host, the two containers sharing a volume are multiple
//     writers, each listed once with its container and stopped with
//     docker stop NAME, never kill PID: run as printed, both stop.
//
// Only commands that name this test's containers or paths are run: the
// engine is shared, and the audit lists every container on it.
func TestAuditPrintedCommands(t *testing.T) {
	requireDocker(t)
	bind, vol1, vol2 := auditContainers(t)
	names := map[string]string{}
	for _, id := range []string{bind, vol1, vol2} {
		names[id] = strings.TrimPrefix(strings.TrimSpace(docker(t, "inspect", "--format", "{{.Name}}", id).stdout), "/")
	}
	pf := filepath.Join(binDir, "preflight")

	// The docker run line, from a blind audit and from one that cannot
	// reach the engine.
	tag := toolImage(t, "preflight-it-printed")
	blind := dockerRun(t, "--user", "0", "-v", "/var/run/docker.sock:/var/run/docker.sock:ro", tag, "audit")
	var dockerRunLine string
	for _, c := range testdb.PrintedCommands(blind.stdout) {
		if strings.HasPrefix(c, "docker run ") {
			dockerRunLine = c
		}
	}
	if !strings.Contains(dockerRunLine, "--pid host") || !strings.HasSuffix(dockerRunLine, " "+releaseImage+" audit") {
		t.Fatalf("audit without --pid host printed no docker run line of %s with --pid host:\n%s", releaseImage, blind)
	}
	down := run(t, dockerTimeout, []string{"DOCKER_HOST=unix://" + filepath.Join(t.TempDir(), "none.sock")}, pf, "audit")
	wantCode(t, down, 1)
	wantContains(t, "audit without an engine: stderr", down.stderr, "as a container with the socket: "+dockerRunLine+"\n")
	if docker(t, "image", "inspect", releaseImage).code == 0 {
		t.Logf("%s exists on this engine: the docker run line is not run (it would run that image, not this build)", releaseImage)
	} else {
		wantCode(t, docker(t, "tag", tag, releaseImage), 0)
		t.Cleanup(func() { docker(t, "rmi", releaseImage) })
		out, code := testdb.RunPrinted(t, dockerRunLine, pf)
		if code != 0 && code != 3 && code != 4 {
			t.Errorf("%s, as printed: exit %d\n%s", dockerRunLine, code, out)
		}
		// Each container's process is seen (--pid host) and counted
		// once, with its container: two writers, not three.
		for _, want := range []string{"seen from: the host's PID namespace", names[vol1], names[vol2], "multiple-writers: app.db has 2 writers"} {
			wantContains(t, dockerRunLine+", as printed", out, want)
		}
	}

	// The stop commands, from the audit on the host.
	r := run(t, dockerTimeout, nil, pf, "audit")
	var ours []string
	for _, c := range testdb.PrintedCommands(r.stdout) {
		for _, n := range names {
			if strings.Contains(c, n) && !slices.Contains(ours, c) {
				ours = append(ours, c)
			}
		}
	}
	for _, id := range []string{vol1, vol2} {
		if want := "docker stop " + names[id]; !slices.Contains(ours, want) {
			t.Errorf("audit on the host printed %q for the containers sharing a volume, want %q\n%s", ours, want, r)
		}
	}
	if strings.Contains(r.stdout, "kill ") {
		t.Errorf("audit on the host prints kill for a container's process:\n%s", r)
	}
	for _, c := range ours {
		if out, code := testdb.RunPrinted(t, c, pf); code != 0 {
			t.Errorf("%s, as printed: exit %d\n%s", c, code, out)
		}
	}
	for _, id := range []string{vol1, vol2} {
		if st := strings.TrimSpace(docker(t, "inspect", "--format", "{{.State.Status}}", id).stdout); st != "exited" {
			t.Errorf("container %s after the printed commands: %s, want exited", names[id], st)
		}
	}
}
