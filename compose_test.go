package preflight_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

func composeOpts(file, platform string) preflight.ComposeOptions {
	return preflight.ComposeOptions{
		Load:     compose.LoadOptions{Files: []string{file}, Env: []string{}},
		Platform: platform,
		Docker:   docker.Options{Mode: docker.ModeOff},
		NoDisk:   true,
		Plan:     compose.PlanOptions{MigrateImage: "preflight"},
	}
}

// TestComposeCorpus runs every compose file in testdata/compose/corpus on
// every platform: it must load and be judged without error; a file named
// safe-* must have no finding above info and no edit; every edit must
// leave the other bytes alone and make a file a second run does not edit.
func TestComposeCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/compose/corpus/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("%d corpus files, want at least 30", len(files))
	}
	for _, f := range files {
		for _, platform := range []string{"desktop", "linux", ""} {
			t.Run(filepath.Base(f)+"/"+platform, func(t *testing.T) {
				res, err := preflight.CheckCompose(context.Background(), composeOpts(f, platform))
				if err != nil {
					t.Fatalf("CheckCompose(%s): %v", f, err)
				}
				r := res.Report
				if strings.HasPrefix(filepath.Base(f), "safe-") {
					if r.Verdict != preflight.VerdictOK || len(res.Edits) > 0 {
						t.Errorf("CheckCompose(%s) = verdict %s, %d edits; want ok and no edit: %+v", f, r.Verdict, len(res.Edits), r.Findings)
					}
				}
				if len(r.Compose.Mounts) == 0 {
					t.Errorf("CheckCompose(%s): no mounts reported", f)
				}
				for _, e := range res.Edits {
					tmp := filepath.Join(t.TempDir(), filepath.Base(e.File))
					if err := os.WriteFile(tmp, e.After, 0o644); err != nil {
						t.Fatal(err)
					}
					again, err := preflight.CheckCompose(context.Background(), composeOpts(tmp, platform))
					if err != nil {
						t.Fatalf("CheckCompose(rewritten %s): %v\n%s", f, err, e.After)
					}
					if len(again.Edits) > 0 {
						t.Errorf("rewritten %s is rewritten again", f)
					}
				}
			})
		}
	}
}

// TestComposeFindings checks one finding per rule, with its level, over a
// project written here, on a native Linux engine whose bind source sits on
// a network filesystem (a saved mount table).
func TestComposeFindings(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "found"), 0o755); err != nil {
		t.Fatal(err)
	}
	testdb.Make(t, filepath.Join(dir, "found", "app.db"), "wal", 3)
	text := `services:
  found:
    image: example/found
    volumes: ["./found:/srv/state"]
  nfs:
    image: example/nfs
    labels: {io.preflight.data-dir: /data}
    volumes: [nfsvol:/data]
  hidden:
    image: louislam/uptime-kuma:1
    volumes: [obind:/app/data]
  nomount:
    image: vaultwarden/server
  sidecar:
    image: example/sidecar
    volumes: ["./found:/mnt"]
  other:
    image: n8nio/n8n
    environment: {DB_TYPE: postgresdb}
    volumes: ["./n8n:/home/node/.n8n"]
volumes:
  nfsvol:
    driver_opts: {type: nfs, o: "addr=nas", device: ":/x"}
  obind:
    driver_opts: {type: none, o: bind, device: ./kuma}
`
	file := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	table, err := mounts.Parse(strings.NewReader(fmt.Sprintf("1 0 254:1 / / rw - ext4 /dev/vda1 rw\n2 1 0:50 / %s rw - nfs4 nas:/export rw,addr=10.0.0.2\n", dir)))
	if err != nil {
		t.Fatal(err)
	}
	opts := composeOpts(file, "linux")
	opts.NoDisk = false
	opts.HostMounts = table
	res, err := preflight.CheckCompose(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]preflight.Level{}
	for _, f := range res.Report.Findings {
		got[string(f.ID)+" "+f.Path] = f.Level
	}
	want := map[string]preflight.Level{
		"bind-on-unsafe-fs found:/srv/state": preflight.LevelError,
		"shared-writer found:/srv/state":     preflight.LevelWarn,
		"volume-on-network nfs:/data":        preflight.LevelError,
		"volume-is-bind hidden:/app/data":    preflight.LevelError,
		"no-volume nomount:/data":            preflight.LevelWarn,
	}
	for k, l := range want {
		if got[k] != l {
			t.Errorf("finding %s: level %q, want %q (all: %v)", k, got[k], l, got)
		}
	}
	for k := range got {
		if strings.Contains(k, "other:") {
			t.Errorf("finding %s about n8n on PostgreSQL", k)
		}
	}
	if res.Report.Verdict != preflight.VerdictUnsafe || len(res.Edits) != 1 {
		t.Errorf("verdict %s with %d edits, want unsafe with 1", res.Report.Verdict, len(res.Edits))
	}
	// The same project on a VM engine: the bind is bind-on-desktop.
	opts.Platform = "desktop"
	res, err = preflight.CheckCompose(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range res.Report.Findings {
		if f.ID == "bind-on-desktop" && f.Path == "found:/srv/state" && f.Level == preflight.LevelError {
			n++
		}
	}
	if n != 1 {
		t.Errorf("desktop: want one bind-on-desktop error for found:/srv/state, got %+v", res.Report.Findings)
	}
}

// bigCompose writes a compose file with n services, a third of them on
// binds of catalogued images, a third on named volumes, a third on tmpfs.
func bigCompose(tb testing.TB, n int) string {
	var b strings.Builder
	images := []string{"vaultwarden/server", "louislam/uptime-kuma:1", "lscr.io/linuxserver/sonarr", "grafana/grafana", "example/app"}
	targets := []string{"/data", "/app/data", "/config", "/var/lib/grafana", "/srv"}
	b.WriteString("x-common: &common\n  restart: unless-stopped\nservices:\n")
	for i := 0; i < n; i++ {
		k := i % len(images)
		fmt.Fprintf(&b, "  svc%d:\n    <<: *common\n    image: %s\n    volumes:\n", i, images[k])
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, "      - ./data/svc%d:%s\n      - ./logs/svc%d:%s/logs\n", i, targets[k], i, targets[k])
		case 1:
			fmt.Fprintf(&b, "      - vol%d:%s\n", i, targets[k])
		default:
			fmt.Fprintf(&b, "      - type: tmpfs\n        target: %s\n", targets[k])
		}
	}
	b.WriteString("volumes:\n")
	for i := 1; i < n; i += 3 {
		fmt.Fprintf(&b, "  vol%d: {}\n", i)
	}
	file := filepath.Join(tb.TempDir(), "compose.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	return file
}

// TestCompose200Services analyses a 200-service project end to end: load,
// analyse, judge and plan the rewrite. Its speed is measured by
// BenchmarkCheckCompose200 (figure in docs/performance.md), not here.
func TestCompose200Services(t *testing.T) {
	file := bigCompose(t, 200)
	res, err := preflight.CheckCompose(context.Background(), composeOpts(file, "desktop"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Report.Compose.Rewrites) < 50 {
		t.Fatalf("%d rewrites, want at least 50", len(res.Report.Compose.Rewrites))
	}
}

func BenchmarkCheckCompose200(b *testing.B) {
	file := bigCompose(b, 200)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := preflight.CheckCompose(context.Background(), composeOpts(file, "desktop")); err != nil {
			b.Fatal(err)
		}
	}
}

// TestComposeBindSourceUnresponsive: a bind source on a filesystem that
// stops answering is left unread after --fs-timeout and said to be
// unchecked, not passed as safe.
func TestComposeBindSourceUnresponsive(t *testing.T) {
	backing := t.TempDir()
	testdb.Make(t, filepath.Join(backing, "app.db"), "wal", 1)
	mnt := testdb.StoppedFUSE(t, backing)
	dir := t.TempDir()
	file := filepath.Join(dir, "compose.yaml")
	yaml := fmt.Sprintf("services:\n  app:\n    image: example/app\n    labels:\n      io.preflight.data-dir: /data\n    volumes:\n      - %s:/data\n", mnt)
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := composeOpts(file, "linux")
	opts.NoDisk, opts.FSTimeout = false, time.Second
	start := time.Now()
	res, err := preflight.CheckCompose(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("CheckCompose with a stopped bind source took %s, want about the 1s timeout", el)
	}
	if got := ids(res.Report); !strings.Contains(got, "bind-source-unchecked:warn") || res.Report.Verdict == preflight.VerdictOK {
		t.Errorf("CheckCompose with a stopped bind source: findings %q, verdict %s; want bind-source-unchecked, not ok", got, res.Report.Verdict)
	}
	if r := res.Report; r.FSClass != mounts.ClassUnknown || r.JournalMode != "delete" {
		t.Errorf("CheckCompose with a stopped bind source: fs_class %s, recommended journal mode %s; want unknown, delete (as Check says of an unread path)", r.FSClass, r.JournalMode)
	}
}

// TestComposeBindHostFSNotRead: on a native engine, a data directory's
// bind source whose host filesystem was not read is of an unknown class,
// never local, so the recommended journal mode is delete.
func TestComposeBindHostFSNotRead(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "compose.yaml")
	yaml := "services:\n  app:\n    image: example/app\n    labels:\n      io.preflight.data-dir: /data\n    volumes:\n      - ./data:/data\n"
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := preflight.CheckCompose(context.Background(), composeOpts(file, "linux")) // NoDisk
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Report; r.FSClass != mounts.ClassUnknown || r.JournalMode != "delete" {
		t.Errorf("CheckCompose(--no-disk, native engine, bind data directory): fs_class %s, recommended journal mode %s; want unknown, delete", r.FSClass, r.JournalMode)
	}
}

// TestComposeHermesDesktop: Hermes Agent's own compose file (corpus) on a
// VM engine: gateway and dashboard bind the same host directory over
// Hermes's state.db, both are errors, and the rewrite gives both one
// volume; the read-only file bind inside the directory is named as left
// behind.
func TestComposeHermesDesktop(t *testing.T) {
	res, err := preflight.CheckCompose(context.Background(), composeOpts("testdata/compose/corpus/hermes-agent.yaml", "desktop"))
	if err != nil {
		t.Fatal(err)
	}
	r := res.Report
	if r.Verdict != preflight.VerdictUnsafe {
		t.Fatalf("verdict %s, want unsafe: %+v", r.Verdict, r.Findings)
	}
	for _, key := range []string{"gateway:/opt/data", "dashboard:/opt/data"} {
		found := false
		for _, f := range r.Findings {
			found = found || f.ID == "bind-on-desktop" && f.Path == key && f.Level == preflight.LevelError
		}
		if !found {
			t.Errorf("no bind-on-desktop error for %s: %+v", key, r.Findings)
		}
	}
	vols := map[string]bool{}
	var left []string
	for _, rw := range r.Compose.Rewrites {
		vols[rw.Volume] = true
		left = append(left, rw.LeftBehind...)
	}
	if len(vols) != 1 || len(r.Compose.Rewrites) != 2 {
		t.Errorf("rewrites %+v, want gateway and dashboard on one volume", r.Compose.Rewrites)
	}
	if len(left) != 1 || !strings.Contains(left[0], "dashboard:/opt/hermes/hermes_cli/container_boot.py") {
		t.Errorf("left behind %q, want the dashboard's container_boot.py bind", left)
	}
}

// TestComposeNotJudged: a read-write bind of an unknown image whose source
// does not exist is never summarised as ok; once the source exists (and
// holds no SQLite), it is judged and the verdict is ok.
func TestComposeNotJudged(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "compose.yaml")
	text := "services:\n  agent:\n    image: example/agent\n    volumes:\n      - ./state:/opt/state\n      - ./conf:/etc/agent:ro\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := composeOpts(file, "linux")
	opts.NoDisk = false
	res, err := preflight.CheckCompose(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	a := res.Report.Compose
	if res.Report.Verdict == preflight.VerdictOK || len(a.NotJudged) != 1 || a.NotJudged[0].Mount != "agent:/opt/state" {
		t.Fatalf("absent source: verdict %s, not judged %+v; want warn and agent:/opt/state", res.Report.Verdict, a.NotJudged)
	}
	if err := os.Mkdir(filepath.Join(dir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err = preflight.CheckCompose(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Verdict != preflight.VerdictOK || len(res.Report.Compose.NotJudged) != 0 {
		t.Errorf("empty source read: verdict %s, not judged %+v; want ok and none (%+v)", res.Report.Verdict, res.Report.Compose.NotJudged, res.Report.Findings)
	}
}

// TestComposeImageByName: another publisher's PocketBase image is matched
// by the application's name in its repository path, at its known data
// path; a data path it does not mount is not claimed to be on no volume.
func TestComposeImageByName(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "compose.yaml")
	text := "services:\n  pb:\n    image: argonptg/pocketbase:0.25.9\n    volumes:\n      - ./pb_data:/pb_data\n  other:\n    image: argonptg/pocketbase:0.25.9\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := preflight.CheckCompose(context.Background(), composeOpts(file, "desktop"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range res.Report.Findings {
		ids = append(ids, string(f.ID)+" "+f.Path)
	}
	if len(ids) != 1 || ids[0] != "bind-on-desktop pb:/pb_data" {
		t.Errorf("findings %q, want only bind-on-desktop pb:/pb_data", ids)
	}
	for _, m := range res.Report.Compose.Mounts {
		if m.Key() == "pb:/pb_data" && (m.App == nil || m.App.Name != "pocketbase" || m.App.Match != compose.MatchName) {
			t.Errorf("pb:/pb_data app %+v, want pocketbase matched by name", m.App)
		}
	}
}
