package integration_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// composeRewrite is the part of the compose report this test reads.
// composeRewrite is the JSON of compose --write: the project as written,
// with the rewrites made in compose.written.
type composeRewrite struct {
	Compose struct {
		Written []struct {
			Service string   `json:"service"`
			Volume  string   `json:"volume"`
			Migrate []string `json:"migrate"`
			Refused string   `json:"refused"`
		} `json:"written"`
	} `json:"compose"`
	Verdict string `json:"verdict"`
}

// requireCompose skips without the docker compose plugin (fails when
// Docker is required).
func requireCompose(t *testing.T) {
	t.Helper()
	requireDocker(t)
	if out, err := exec.Command("docker", "compose", "version").CombinedOutput(); err != nil {
		if required {
			t.Fatalf("docker compose plugin missing (PREFLIGHT_REQUIRE_DOCKER=1 or CI=true): %v: %s", err, out)
		}
		t.Skipf("docker compose plugin missing: %v", err)
	}
}

// TestComposeRewriteAndMigrate is the whole journey on a real engine: the
// demo app writes rows into bind mounts; preflight compose --write turns
// them into named volumes (Compose validates the file); the printed
// migration commands run as printed (one through docker compose run with
// the app's own preflight, one through docker run with a preflight image);
// the app comes back up on the volumes and sees every old row.
func TestComposeRewriteAndMigrate(t *testing.T) {
	requireCompose(t)
	dir := t.TempDir()
	project := "pfit" + runID
	for _, d := range []string{"data", "data2"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, d), 0o777); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "compose.yaml")
	text := fmt.Sprintf(`# The demo app, its data in bind mounts.
name: %s
services:
  app:
    image: %s   # built from examples/Dockerfile
    pull_policy: never
    entrypoint: ["/preflight", "run", "--data-dir", "/data", "--"]
    command: ["/demoapp"]
    environment:
      DEMO_INTERVAL: 200ms
    volumes:
      - ./data:/data   # the app's database
  app2:
    image: %s
    pull_policy: never
    labels:
      io.preflight.data-dir: /data
    environment:
      DEMO_INTERVAL: 200ms
    volumes:
      - type: bind
        source: ${APP2_DATA:-./data2}
        target: /data
`, project, image, image)
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	dc := []string{"compose", "-f", file, "-p", project}
	t.Cleanup(func() {
		docker(t, append(dc, "down", "-v", "--remove-orphans")...)
	})

	// Old rows, written through the binds.
	for _, svc := range []string{"app", "app2"} {
		r := docker(t, append(dc, "run", "--rm", "-e", "DEMO_ROWS=5", svc)...)
		wantCode(t, r, 0)
	}

	pf := filepath.Join(binDir, "preflight")
	r := run(t, dockerTimeout, nil, pf, "compose", "-f", file, "-p", project, "--docker", "off", "--platform", "desktop", "--migrate-image", image, "--check")
	wantCode(t, r, 3)
	if !strings.Contains(r.stdout, "bind-on-desktop") {
		t.Fatalf("no bind-on-desktop finding:\n%s", r)
	}
	r = run(t, dockerTimeout, nil, pf, "compose", "-f", file, "-p", project, "--docker", "off", "--platform", "desktop",
		"--migrate-image", image, "--write", "--format", "json")
	wantCode(t, r, 0)
	var rep composeRewrite
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("compose --write --format json: %v\n%s", err, r)
	}
	if len(rep.Compose.Written) != 2 || rep.Verdict == "unsafe" {
		t.Fatalf("%d rewrites made, verdict %s; want 2 and the project as written not unsafe:\n%s", len(rep.Compose.Written), rep.Verdict, r.stdout)
	}
	after, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(after), "- app-data:/data   # the app's database") || !strings.Contains(string(after), "# built from examples/Dockerfile") {
		t.Errorf("rewritten file lost its comments or was not rewritten:\n%s", after)
	}
	wantCode(t, docker(t, append(dc, "config", "-q")...), 0)

	// The one-time migrations, exactly as printed.
	for _, rw := range rep.Compose.Written {
		if rw.Refused != "" {
			t.Fatalf("rewrite of %s refused: %s", rw.Service, rw.Refused)
		}
		for _, cmd := range rw.Migrate {
			res := run(t, dockerTimeout, nil, "sh", "-c", cmd)
			wantCode(t, res, 0)
			if strings.Contains(cmd, " migrate ") && !strings.Contains(res.stdout, "verified true") {
				t.Errorf("%s: nothing verified:\n%s", cmd, res)
			}
		}
	}

	// The app on its volume sees the old rows: its next insert is id 6.
	for _, svc := range []string{"app", "app2"} {
		deadline := time.Now().Add(60 * time.Second)
		for {
			logs := docker(t, append(dc, "logs", svc)...)
			if strings.Contains(logs.stdout, "insert id=6") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not continue after row 5 on its volume:\n%s", svc, logs)
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	chk := docker(t, append(dc, "exec", "-T", "app", "/preflight", "check", "--format", "json", "/data")...)
	wantCode(t, chk, 0)
	var cr struct {
		Verdict  string `json:"verdict"`
		DataDirs []struct {
			Databases []struct {
				Path        string `json:"path"`
				JournalMode string `json:"journal_mode"`
			} `json:"databases"`
		} `json:"data_dirs"`
	}
	if err := json.Unmarshal([]byte(chk.stdout), &cr); err != nil {
		t.Fatalf("check json: %v\n%s", err, chk)
	}
	if cr.Verdict != "ok" || len(cr.DataDirs) != 1 || len(cr.DataDirs[0].Databases) != 1 {
		t.Errorf("preflight check in the app after the migration: %s", chk.stdout)
	}

	// --live: the running containers' actual sources.
	live := run(t, dockerTimeout, nil, pf, "compose", "-f", file, "-p", project, "--live", "--format", "json")
	wantCode(t, live, 0)
	if !strings.Contains(live.stdout, project+"_app-data") {
		t.Errorf("--live does not show volume %s_app-data:\n%s", project, live)
	}
}

// TestComposeMigrateRefusesLiveWriter: preflight migrate refuses while the
// app still has the database open.
func TestComposeMigrateRefusesLiveWriter(t *testing.T) {
	requireDocker(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	name := "pf-live-" + runID
	wantCode(t, docker(t, "run", "-d", "--name", name, "--label", label, "-e", "DEMO_INTERVAL=100ms", "-v", dir+":/data", image), 0)
	t.Cleanup(func() { docker(t, "rm", "-f", name) })
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "app.db-wal")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the app did not open its database")
		}
		time.Sleep(100 * time.Millisecond)
	}
	to := t.TempDir()
	r := run(t, dockerTimeout, nil, filepath.Join(binDir, "preflight"), "migrate", "--from", dir, "--to", to)
	wantCode(t, r, 3)
	if !strings.Contains(r.stderr, "migration refused") {
		t.Errorf("migrate with a live writer:\n%s", r)
	}
}
