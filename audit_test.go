package preflight_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/internal/fakeengine"
	"github.com/preflight-sqlite/preflight/internal/peak"
	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// fakeContainer is one entry of a fake engine's container list.
type fakeContainer struct {
	id, name, image, state string
	pid                    int
	mounts                 string // the Mounts JSON array's items
	labels                 string // the Labels JSON object's items
}

// auditEngine starts a fake engine of the given /info answer (rootDir as
// its DockerRootDir: "" leaves it out) serving cs and volumes (the
// Volumes JSON array's items).
func auditEngine(t testing.TB, info map[string]any, rootDir string, volumes string, cs ...fakeContainer) *fakeengine.Engine {
	t.Helper()
	if rootDir != "" {
		info["DockerRootDir"] = rootDir
	}
	ib, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string]string{
		"/v1.41/version": `{"Version":"27.3.1","ApiVersion":"1.41","Os":"linux"}`,
		"/v1.41/info":    string(ib),
		"/v1.41/volumes": `{"Volumes":[` + volumes + `],"Warnings":null}`,
	}
	var list []string
	for _, c := range cs {
		list = append(list, fmt.Sprintf(`{"Id":%q,"Names":["/%s"],"Image":%q,"State":%q,"Labels":{%s},"Mounts":[%s]}`, c.id, c.name, c.image, c.state, c.labels, c.mounts))
		answers["/v1.41/containers/"+c.id+"/json"] = fmt.Sprintf(`{"Id":%q,"Name":"/%s","State":{"Status":%q,"Pid":%d},"Config":{"Image":%q}}`, c.id, c.name, c.state, c.pid, c.image)
		if rootDir != "" {
			if err := os.MkdirAll(filepath.Join(rootDir, "containers", c.id), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	answers["/v1.41/containers/json"] = "[" + strings.Join(list, ",") + "]"
	return fakeengine.Start(t, answers)
}

// fakeProc makes proc/PID look like the host's view of container id's
// first process: its cgroup names the container, its root is root.
func fakeProc(t *testing.T, proc string, pid int, id, root string) {
	t.Helper()
	dir := filepath.Join(proc, fmt.Sprint(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte("0::/system.slice/docker-"+id+".scope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mountinfo"), []byte("30 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(dir, "root")); err != nil {
		t.Fatal(err)
	}
}

func hexID(n int) string { return fmt.Sprintf("%064x", n+0xabc000) }

func audit(t testing.TB, e *fakeengine.Engine, opts preflight.AuditOptions) *preflight.AuditReport {
	t.Helper()
	opts.Docker = docker.Options{Host: e.Host, Timeout: 20 * time.Second}
	if opts.FSTimeout == 0 {
		opts.FSTimeout = time.Second
	}
	ar, err := preflight.Audit(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if ar.Docker != docker.StatusRan {
		t.Fatalf("Audit: docker %s: %s", ar.Docker, ar.DockerError)
	}
	return ar
}

func auditIDs(ac preflight.AuditContainer) string {
	var s []string
	for _, f := range ac.Report.Findings {
		if f.Level != preflight.LevelInfo {
			s = append(s, string(f.ID)+":"+string(f.Level))
		}
	}
	return strings.Join(s, ",")
}

func containerNamed(t *testing.T, ar *preflight.AuditReport, name string) preflight.AuditContainer {
	t.Helper()
	for _, ac := range ar.Containers {
		if ac.Container.Name == name {
			return ac
		}
	}
	t.Fatalf("Audit: no container %s in %d", name, len(ar.Containers))
	return preflight.AuditContainer{}
}

// TestAuditEngineClasses: on the engine host, a bind of a local directory
// with a WAL database is read and ok; a volume whose driver_opts type is
// nfs is network whatever its directory here holds; a container with no
// database on its mounts is left out. On Docker Desktop (a different
// engine answer, the same files), the bind crosses the VM and the WAL
// database on it is an error.
func TestAuditEngineClasses(t *testing.T) {
	bind := t.TempDir()
	testdb.Make(t, filepath.Join(bind, "app.db"), "wal", 2)
	nfs := filepath.Join(t.TempDir(), "volumes", "nfsvol", "_data")
	if err := os.MkdirAll(nfs, 0o755); err != nil {
		t.Fatal(err)
	}
	testdb.Make(t, filepath.Join(nfs, "db.sqlite3"), "wal", 1)
	empty := t.TempDir()
	vols := `{"Name":"nfsvol","Driver":"local","Mountpoint":"` + nfs + `","Options":{"type":"nfs","o":"addr=10.0.0.5","device":":/export/app"}}`
	cs := []fakeContainer{
		{id: hexID(1), name: "app", image: "example/app:1", state: "running", mounts: `{"Type":"bind","Source":"` + bind + `","Destination":"/data","RW":true}`,
			labels: `"com.docker.compose.project":"home","com.docker.compose.service":"app","com.docker.compose.config-hash":"x"`},
		{id: hexID(2), name: "nfsapp", image: "example/nfs:1", state: "running", mounts: `{"Type":"volume","Name":"nfsvol","Source":"` + nfs + `","Destination":"/srv","Driver":"local","RW":true}`},
		{id: hexID(3), name: "web", image: "nginx", state: "running", pid: 300, mounts: `{"Type":"bind","Source":"` + empty + `","Destination":"/usr/share/nginx/html","RW":false}`},
	}
	// web has no writable mount: its root (here empty) is read too.
	webProc := t.TempDir()
	fakeProc(t, webProc, 300, cs[2].id, t.TempDir())
	linux := map[string]any{"OSType": "linux", "OperatingSystem": "Debian GNU/Linux 12", "Name": "host", "ServerVersion": "27.3.1"}
	ar := audit(t, auditEngine(t, linux, t.TempDir(), vols, cs...), preflight.AuditOptions{Proc: webProc})
	if !ar.OnEngineHost || len(ar.Containers) != 2 {
		t.Fatalf("Audit(linux host) on_engine_host %v, %d containers %+v; want true, 2 (web holds no database)", ar.OnEngineHost, len(ar.Containers), ar.Containers)
	}
	app := containerNamed(t, ar, "app")
	if m := app.Mounts[0]; m.ReadVia != preflight.ReadHostPath || m.Class != mounts.ClassLocal || app.Verdict != preflight.VerdictOK {
		t.Errorf("Audit(linux host) app: mount %+v verdict %s findings %s; want host-path, local, ok", m, app.Verdict, auditIDs(app))
	}
	if db := app.Report.DataDirs[0].Databases; len(db) != 1 || db[0].JournalMode != "wal" {
		t.Errorf("Audit(linux host) app databases = %+v, want app.db in wal", db)
	}
	na := containerNamed(t, ar, "nfsapp")
	if na.Mounts[0].Class != mounts.ClassNetwork || !strings.Contains(auditIDs(na), "wal-on-network-fs:error") {
		t.Errorf("Audit(linux host) nfsapp: class %s findings %s; want network, wal-on-network-fs", na.Mounts[0].Class, auditIDs(na))
	}
	if ar.Verdict != preflight.VerdictUnsafe {
		t.Errorf("Audit(linux host) verdict %s, want unsafe", ar.Verdict)
	}

	// Docker Desktop, seen from a container with --pid host: the bind
	// crosses the VM, and the database is read through the container's
	// root; without that root it is listed, not inspected.
	desktop := map[string]any{"OSType": "linux", "OperatingSystem": "Docker Desktop", "Name": "docker-desktop", "ServerVersion": "27.3.1"}
	cs[0].pid = 200
	rootDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(rootDir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	testdb.Make(t, filepath.Join(rootDir, "data", "app.db"), "wal", 2)
	proc := t.TempDir()
	fakeProc(t, proc, 200, cs[0].id, rootDir)
	ar = audit(t, auditEngine(t, desktop, "", vols, cs...), preflight.AuditOptions{Proc: proc})
	app = containerNamed(t, ar, "app")
	if m := app.Mounts[0]; m.Class != mounts.ClassCrossVM || m.ReadVia != preflight.ReadContainerRoot || !strings.Contains(auditIDs(app), "wal-on-cross-vm:error") {
		t.Errorf("Audit(Docker Desktop, --pid host) app: mount %+v findings %s; want cross-vm read through the root, wal-on-cross-vm", m, auditIDs(app))
	}
	ar = audit(t, auditEngine(t, desktop, "", vols, cs...), preflight.AuditOptions{Proc: t.TempDir()})
	app = containerNamed(t, ar, "app")
	if m := app.Mounts[0]; m.Class != mounts.ClassCrossVM || m.NotInspected == "" || !strings.Contains(auditIDs(app), "unsafe-fs-not-inspected:warn") {
		t.Errorf("Audit(Docker Desktop, PID not visible) app: mount %+v findings %s; want cross-vm not inspected, unsafe-fs-not-inspected", m, auditIDs(app))
	}
}

// TestAuditWritableLayer: a container of an image the catalogue does not
// know, with no writable mount, keeps what it writes in its writable
// layer: read through its root, each directory holding a database is
// listed on no mount (ephemeral-data-dir), a
// root that holds none is left out as a mount that holds none; a root
// that cannot be read is listed as "/", not inspected, never left out.
func TestAuditWritableLayer(t *testing.T) {
	proc := t.TempDir()
	withDB, empty := t.TempDir(), t.TempDir()
	for _, d := range []string{"app", "proc"} {
		if err := os.MkdirAll(filepath.Join(withDB, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testdb.Make(t, filepath.Join(withDB, "app", "data.db"), "wal", 1)
	cs := []fakeContainer{
		{id: hexID(1), name: "layer-db", image: "example/own:1", state: "running", pid: 101},
		{id: hexID(2), name: "layer-empty", image: "example/own:1", state: "running", pid: 102},
		{id: hexID(3), name: "layer-blind", image: "example/own:1", state: "running", pid: 103},
		{id: hexID(4), name: "layer-ro", image: "example/own:1", state: "running", pid: 104,
			mounts: `{"Type":"bind","Source":"/srv/conf","Destination":"/conf","RW":false}`},
	}
	fakeProc(t, proc, 101, hexID(1), withDB)
	fakeProc(t, proc, 102, hexID(2), empty)
	linux := map[string]any{"OSType": "linux", "OperatingSystem": "Debian GNU/Linux 12", "Name": "host"}
	ar := audit(t, auditEngine(t, linux, "", "", cs...), preflight.AuditOptions{Proc: proc})
	got := map[string]string{}
	for _, ac := range ar.Containers {
		for _, m := range ac.Mounts {
			got[ac.Container.Name] += fmt.Sprintf("%s %s %s read-via=%s not-inspected=%v; ", m.Destination, m.Class, auditIDs(ac), m.ReadVia, m.NotInspected != "")
		}
	}
	want := map[string]string{
		"layer-db":    "/app ephemeral ephemeral-data-dir:warn read-via=container-root not-inspected=false; ",
		"layer-blind": "/ ephemeral mount-not-inspected:warn read-via= not-inspected=true; ",
		"layer-ro":    "/ ephemeral mount-not-inspected:warn read-via= not-inspected=true; ",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Audit(containers with no writable mount) mismatch (-want +got):\n%s", diff)
	}
	db := containerNamed(t, ar, "layer-db")
	if dbs := db.Report.DataDirs[0].Databases; len(dbs) != 1 || dbs[0].Path != "/app/data.db" || dbs[0].JournalMode != "wal" {
		t.Errorf("Audit(layer-db) databases %+v, want /app/data.db in wal", dbs)
	}
	blind := containerNamed(t, ar, "layer-blind")
	if why := blind.Mounts[0].NotInspected; !strings.Contains(why, "--pid host") || !strings.Contains(why, "writable layer") {
		t.Errorf("Audit(layer-blind) not inspected %q, want why (--pid host) and the writable layer", why)
	}
}

// TestAuditNotInspected: a container whose files this process cannot read
// (not the engine host, its PID not visible) is said not inspected per
// mount, never ok without a word: a catalogue image keeps its data
// directory, judged from the engine's answer alone.
func TestAuditNotInspected(t *testing.T) {
	cs := []fakeContainer{
		{id: hexID(1), name: "vw", image: "vaultwarden/server:latest", state: "running", pid: 999999,
			mounts: `{"Type":"bind","Source":"/Users/me/vw","Destination":"/data","RW":true}`},
	}
	desktop := map[string]any{"OSType": "linux", "OperatingSystem": "Docker Desktop", "Name": "docker-desktop"}
	ar := audit(t, auditEngine(t, desktop, "", ""), preflight.AuditOptions{})
	if len(ar.Containers) != 0 {
		t.Fatalf("Audit(no containers) = %+v", ar.Containers)
	}
	ar = audit(t, auditEngine(t, desktop, "", "", cs...), preflight.AuditOptions{Proc: t.TempDir()})
	vw := containerNamed(t, ar, "vw")
	m := vw.Mounts[0]
	if m.NotInspected == "" || !strings.Contains(m.NotInspected, "--pid host") || !m.Catalogue || vw.App != "vaultwarden" {
		t.Errorf("Audit(unreadable vaultwarden) mount = %+v app %q, want not inspected (naming --pid host), from the catalogue", m, vw.App)
	}
	if !strings.Contains(auditIDs(vw), "unsafe-fs-not-inspected:warn") || vw.Verdict != preflight.VerdictWarn {
		t.Errorf("Audit(unreadable vaultwarden on Docker Desktop) findings %s verdict %s, want unsafe-fs-not-inspected, warn", auditIDs(vw), vw.Verdict)
	}

	// On a Linux engine the class is the host filesystem's, not visible
	// here either: the mount is mount-not-inspected, never ok.
	linux := map[string]any{"OSType": "linux", "OperatingSystem": "Ubuntu 24.04", "Name": "host"}
	ar = audit(t, auditEngine(t, linux, "", "", cs...), preflight.AuditOptions{Proc: t.TempDir()})
	vw = containerNamed(t, ar, "vw")
	if got := auditIDs(vw); got != "mount-not-inspected:warn" || vw.Mounts[0].Class != mounts.ClassUnknown {
		t.Errorf("Audit(unreadable bind on a Linux engine) findings %s class %s, want mount-not-inspected:warn alone, unknown", got, vw.Mounts[0].Class)
	}
}

// TestAuditContainerRoot: seen from the host's PID namespace (here a
// /proc whose PID directory names the container in its cgroup), the
// container's files are read through /proc/PID/root; a root that stops
// answering (a stuck FUSE daemon) is fs-unresponsive within the timeout,
// and the audit goes on to the next container.
func TestAuditContainerRoot(t *testing.T) {
	proc := t.TempDir()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	testdb.Make(t, filepath.Join(root, "config", "app.db"), "delete", 1)
	stuckBacking := t.TempDir()
	if err := os.MkdirAll(filepath.Join(stuckBacking, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	stuck := testdb.StoppedFUSE(t, stuckBacking)
	cs := []fakeContainer{
		{id: hexID(1), name: "a-stuck", image: "example/stuck", state: "running", pid: 101,
			mounts: `{"Type":"volume","Name":"v1","Source":"/var/lib/docker/volumes/v1/_data","Destination":"/data","Driver":"local","RW":true}`},
		{id: hexID(2), name: "b-ok", image: "example/ok", state: "running", pid: 102,
			mounts: `{"Type":"bind","Source":"/srv/ok","Destination":"/config","RW":true}`},
	}
	fakeProc(t, proc, 101, hexID(1), stuck)
	fakeProc(t, proc, 102, hexID(2), root)
	linux := map[string]any{"OSType": "linux", "OperatingSystem": "Unraid OS", "Name": "tower"}
	start := time.Now()
	ar := audit(t, auditEngine(t, linux, "", "", cs...), preflight.AuditOptions{Proc: proc})
	if el := time.Since(start); el > 6*time.Second {
		t.Errorf("Audit with a stuck container root took %s, want about 2s", el)
	}
	if !ar.HostPID {
		t.Errorf("Audit: host_pid false, want true")
	}
	st := containerNamed(t, ar, "a-stuck")
	if !strings.Contains(auditIDs(st), "fs-unresponsive:error") {
		t.Errorf("Audit(stuck root) findings %s, want fs-unresponsive", auditIDs(st))
	}
	ok := containerNamed(t, ar, "b-ok")
	if m := ok.Mounts[0]; m.ReadVia != preflight.ReadContainerRoot || m.Class != mounts.ClassLocal || ok.Verdict != preflight.VerdictOK {
		t.Errorf("Audit(readable root) mount %+v verdict %s findings %s; want container-root, local, ok", m, ok.Verdict, auditIDs(ok))
	}
	if db := ok.Report.DataDirs[0].Databases; len(db) != 1 || db[0].JournalMode != "rollback" {
		t.Errorf("Audit(readable root) databases %+v, want app.db in rollback", db)
	}
}

// TestAuditContainerRootEscape: a hostile container whose data directory
// holds a symlink to an absolute path (/srv/secret, a directory of the
// container's own root) must not make the audit read this machine's
// /srv/secret: seen through /proc/PID/root, the kernel resolves that link
// against the auditor's root. The database there is not reported; the
// container's own database beside the link is.
func TestAuditContainerRootEscape(t *testing.T) {
	host := t.TempDir() // stands for this machine's /srv/secret
	testdb.Make(t, filepath.Join(host, "secret.db"), "wal", 1)
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	testdb.Make(t, filepath.Join(root, "data", "own.db"), "delete", 1)
	if err := os.Symlink(host, filepath.Join(root, "data", "escape")); err != nil {
		t.Fatal(err)
	}
	// A bind nested in the volume, with a database of its own: that
	// database is the nested mount's, not the volume's.
	if err := os.MkdirAll(filepath.Join(root, "data", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	testdb.Make(t, filepath.Join(root, "data", "sub", "sub.db"), "wal", 1)
	proc := t.TempDir()
	fakeProc(t, proc, 300, hexID(7), root)
	cs := []fakeContainer{{id: hexID(7), name: "hostile", image: "example/hostile", state: "running", pid: 300,
		mounts: `{"Type":"volume","Name":"h","Source":"/var/lib/docker/volumes/h/_data","Destination":"/data","Driver":"local","RW":true},` +
			`{"Type":"bind","Source":"/srv/sub","Destination":"/data/sub","RW":true}`}}
	ar := audit(t, auditEngine(t, map[string]any{"OSType": "linux"}, "", "", cs...), preflight.AuditOptions{Proc: proc})
	hostile := containerNamed(t, ar, "hostile")
	got := map[string]string{}
	for i, d := range hostile.Report.DataDirs {
		var names []string
		for _, db := range d.Databases {
			names = append(names, filepath.Base(db.Path))
		}
		got[hostile.Mounts[i].Destination] = strings.Join(names, ",")
	}
	if got["/data"] != "own.db" || got["/data/sub"] != "sub.db" || len(got) != 2 {
		t.Errorf("Audit(symlink out of the container's root, a nested bind) databases by mount = %v, want /data: own.db (not secret.db), /data/sub: sub.db", got)
	}
}

// TestAuditSwarm: on a Swarm manager, the task container's volume is on
// a service with two replicas and start-first: those findings are the
// audit's too.
func TestAuditSwarm(t *testing.T) {
	rootDir := t.TempDir()
	mp := filepath.Join(rootDir, "volumes", "swarm-capture-vol", "_data")
	if err := os.MkdirAll(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	testdb.Make(t, filepath.Join(mp, "app.db"), "wal", 3)
	answers := fakeengine.SwarmAnswers(t, filepath.Join("probe", "docker", "testdata", "swarm"), mp,
		fakeengine.SwarmCase{Info: "info-manager.json", Services: "services.json", Tasks: "tasks-two-nodes.json", Nodes: "nodes-two-nodes.json"})
	var info map[string]any
	if err := json.Unmarshal([]byte(answers["/v1.41/info"]), &info); err != nil {
		t.Fatal(err)
	}
	info["DockerRootDir"] = rootDir
	ib, _ := json.Marshal(info)
	answers["/v1.41/info"] = string(ib)
	if err := os.MkdirAll(filepath.Join(rootDir, "containers", fakeengine.Task1Container), 0o755); err != nil {
		t.Fatal(err)
	}
	ar := audit(t, fakeengine.Start(t, answers), preflight.AuditOptions{})
	if len(ar.Containers) != 1 {
		t.Fatalf("Audit(swarm) containers = %+v, want the task container", ar.Containers)
	}
	ids := auditIDs(ar.Containers[0])
	for _, want := range []string{"replicas-on-sqlite-volume", "start-first-on-sqlite-volume"} {
		if !strings.Contains(ids, want) {
			t.Errorf("Audit(swarm manager) findings %s, want %s", ids, want)
		}
	}
}

// scaleEngine is a fake engine host with n running containers, each with
// a bind of its own directory holding a WAL database and a volume (the
// ninth of every ten shares the eighth's) holding a rollback one: 2n
// mounts, and a database on each.
func scaleEngine(tb testing.TB, n int) *fakeengine.Engine {
	tb.Helper()
	root := tb.TempDir()
	var cs []fakeContainer
	var vols []string
	for i := range n {
		dir := filepath.Join(root, "binds", fmt.Sprint(i))
		vol := fmt.Sprintf("vol%d", i-i%10/9) // containers 9, 19, ... share the volume of 8, 18, ...
		mp := filepath.Join(root, "volumes", vol, "_data")
		for _, d := range []string{dir, mp} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				tb.Fatal(err)
			}
		}
		testdb.Make(tb, filepath.Join(dir, "app.db"), "wal", 1)
		if _, err := os.Stat(filepath.Join(mp, "data.sqlite")); err != nil {
			testdb.Make(tb, filepath.Join(mp, "data.sqlite"), "delete", 1)
			vols = append(vols, `{"Name":"`+vol+`","Driver":"local","Mountpoint":"`+mp+`"}`)
		}
		cs = append(cs, fakeContainer{id: hexID(i), name: fmt.Sprintf("app-%03d", i), image: "example/app:1", state: "running", pid: 1 << 22,
			labels: `"com.docker.compose.project":"p` + fmt.Sprint(i/10) + `","com.docker.compose.service":"s","com.docker.compose.config-hash":"h"`,
			mounts: `{"Type":"bind","Source":"` + dir + `","Destination":"/config","RW":true},` +
				`{"Type":"volume","Name":"` + vol + `","Source":"` + mp + `","Destination":"/data","Driver":"local","RW":true}`})
	}
	return auditEngine(tb, map[string]any{"OSType": "linux", "OperatingSystem": "Debian GNU/Linux 12", "Name": "host"}, filepath.Join(root, "docker"), strings.Join(vols, ","), cs...)
}

// TestAuditScale: 200 containers with 400 mounts (and 400 databases) are
// audited in under 5 s, every mount read, holding under 64 MiB of heap.
func TestAuditScale(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 400 databases")
	}
	e := scaleEngine(t, 200)
	var ar *preflight.AuditReport
	took, heap := peak.Measure(func() { ar = audit(t, e, preflight.AuditOptions{}) })
	t.Logf("audit of 200 containers, 400 mounts: %s, peak heap %.1f MiB", took.Round(time.Millisecond), float64(heap)/(1<<20))
	if took > 5*time.Second || heap > 64<<20 {
		t.Errorf("audit of 200 containers took %s and %d MiB of heap, want under 5 s and 64 MiB", took, heap>>20)
	}
	mounts, shared := 0, 0
	for _, ac := range ar.Containers {
		mounts += len(ac.Mounts)
		for _, f := range ac.Report.Findings {
			if f.ID == "live-writer-container" {
				shared++
				break
			}
		}
	}
	if len(ar.Containers) != 200 || mounts != 400 || shared != 40 {
		t.Errorf("audit: %d containers, %d mounts, %d with another writing container; want 200, 400, 40", len(ar.Containers), mounts, shared)
	}
}

// BenchmarkAudit200: one audit of the 200 containers of TestAuditScale.
func BenchmarkAudit200(b *testing.B) {
	e := scaleEngine(b, 200)
	var most uint64
	for b.Loop() {
		_, heap := peak.Measure(func() { audit(b, e, preflight.AuditOptions{}) })
		most = max(most, heap)
	}
	b.ReportMetric(float64(most)/(1<<20), "peak-MiB")
}

// TestAuditHostPathRepointed: a bind whose source is a symlink the owner
// repointed after the container started (to /etc here: a decoy directory)
// is not what the container has at its destination. On the engine host
// with the host's PID namespace, the audit sees that the host path is
// another directory and reads the container's own root, where its WAL
// database is: the container is not dropped as holding nothing.
func TestAuditHostPathRepointed(t *testing.T) {
	decoy := t.TempDir() // stands for this machine's /etc
	link := filepath.Join(t.TempDir(), "appdata")
	if err := os.Symlink(decoy, link); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	testdb.Make(t, filepath.Join(root, "data", "app.db"), "wal", 1)
	proc := t.TempDir()
	fakeProc(t, proc, 400, hexID(8), root)
	cs := []fakeContainer{{id: hexID(8), name: "repointed", image: "example/app", state: "running", pid: 400,
		mounts: `{"Type":"bind","Source":"` + link + `","Destination":"/data","RW":true}`}}
	ar := audit(t, auditEngine(t, map[string]any{"OSType": "linux"}, t.TempDir(), "", cs...), preflight.AuditOptions{Proc: proc})
	if !ar.OnEngineHost || len(ar.Containers) != 1 {
		t.Fatalf("Audit(bind source repointed) on_engine_host %v, %d containers; want true, 1 (its database is in its root)", ar.OnEngineHost, len(ar.Containers))
	}
	c := ar.Containers[0]
	if m := c.Mounts[0]; m.ReadVia != preflight.ReadContainerRoot {
		t.Errorf("Audit(bind source repointed) mount %+v, want read via container-root", m)
	}
	if db := c.Report.DataDirs[0].Databases; len(db) != 1 || filepath.Base(db[0].Path) != "app.db" || db[0].JournalMode != "wal" {
		t.Errorf("Audit(bind source repointed) databases %+v, want app.db in wal", db)
	}
}

// TestAuditContainerRootPaths: a container read through /proc/PID/root
// (an uptime-kuma whose /app/data is in its writable layer) has its
// findings and remedies name the path as the container sees it, /app/data,
// never the /proc/PID/root path this process read it by.
func TestAuditContainerRootPaths(t *testing.T) {
	proc := t.TempDir()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "app", "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	testdb.Make(t, filepath.Join(root, "app", "data", "kuma.db"), "wal", 1)
	cs := []fakeContainer{{id: hexID(3), name: "kuma", image: "louislam/uptime-kuma:1", state: "running", pid: 103}}
	fakeProc(t, proc, 103, hexID(3), root)
	linux := map[string]any{"OSType": "linux", "OperatingSystem": "Debian GNU/Linux 12", "Name": "host"}
	ar := audit(t, auditEngine(t, linux, "", "", cs...), preflight.AuditOptions{Proc: proc})
	k := containerNamed(t, ar, "kuma")
	if !strings.Contains(auditIDs(k), "ephemeral-data-dir") {
		t.Errorf("Audit(kuma without a volume) findings %s, want ephemeral-data-dir", auditIDs(k))
	}
	procDir := filepath.Join(proc, "103")
	for _, f := range k.Report.Findings {
		for _, s := range append([]string{f.Path, f.Message}, f.Remedy...) {
			if strings.Contains(s, procDir) {
				t.Errorf("Audit finding %s names the /proc path: %q", f.ID, s)
			}
		}
		if f.ID == "ephemeral-data-dir" && f.Path != "/app/data" {
			t.Errorf("Audit finding ephemeral-data-dir path %q, want /app/data", f.Path)
		}
	}
	if d := k.Report.DataDirs[0]; d.Path != "/app/data" || len(d.Databases) != 1 || d.Databases[0].Path != "/app/data/kuma.db" {
		t.Errorf("Audit data dir %s databases %+v, want /app/data with /app/data/kuma.db", d.Path, d.Databases)
	}
}

// TestAuditContainerRootRemedyPaths: an audit that reads a container
// through /proc/PID/root (as a container with --pid host) prints remedies
// to run on the engine host: the database of a bind mount by its source
// there, quoted ("/srv/my data/app.db"), never by the path inside the
// container (/data/app.db), which is a different file, or none, on the
// host.
func TestAuditContainerRootRemedyPaths(t *testing.T) {
	testdb.NeedSQLite3(t)
	proc := t.TempDir()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The Debian sqlite3 (before 3.51.3) writes it: wal-reset-bug, whose
	// remedy is preflight convert PATH.
	db := filepath.Join(root, "data", "app.db")
	if out, err := exec.Command("sqlite3", db, "pragma journal_mode=wal; create table t(a);").CombinedOutput(); err != nil {
		t.Fatalf("sqlite3: %v\n%s", err, out)
	}
	const source = "/srv/my data"
	cs := []fakeContainer{{id: hexID(4), name: "app", image: "example/app:1", state: "running", pid: 104,
		mounts: `{"Type":"bind","Source":"` + source + `","Destination":"/data","RW":true}`}}
	fakeProc(t, proc, 104, hexID(4), root)
	linux := map[string]any{"OSType": "linux", "OperatingSystem": "Debian GNU/Linux 12", "Name": "host"}
	ar := audit(t, auditEngine(t, linux, "", "", cs...), preflight.AuditOptions{Proc: proc})
	var remedies []string
	for _, f := range containerNamed(t, ar, "app").Report.Findings {
		remedies = append(remedies, f.Remedy...)
	}
	if want := "preflight convert '" + source + "/app.db'"; !slices.Contains(remedies, want) {
		t.Errorf("Audit through /proc/PID/root: remedies %q, want %q", remedies, want)
	}
	for _, r := range remedies {
		if strings.Contains(r, " /data/app.db") || strings.Contains(r, filepath.Join(proc, "104")) {
			t.Errorf("Audit through /proc/PID/root: remedy %q names a path that is not the database on the engine host", r)
		}
	}
}
