package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/preflight-sqlite/preflight/internal/fakeengine"
	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/rules"
)

// auditFakeEngine serves a Linux engine host (its data root a real
// directory) with two running containers: "ok" binds a directory with a
// WAL database, "nfs" mounts a volume whose driver_opts type is nfs with a
// WAL database in its directory.
func auditFakeEngine(t *testing.T) *fakeengine.Engine {
	t.Helper()
	root := t.TempDir()
	bind := filepath.Join(root, "bind")
	nfs := filepath.Join(root, "volumes", "share", "_data")
	ids := []string{strings.Repeat("a1", 32), strings.Repeat("b2", 32)}
	for _, d := range []string{bind, nfs, filepath.Join(root, "containers", ids[0]), filepath.Join(root, "containers", ids[1])} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testdb.Make(t, filepath.Join(bind, "app.db"), "wal", 1)
	testdb.Make(t, filepath.Join(nfs, "kuma.db"), "wal", 1)
	ctr := func(id, name, mount string) string {
		return fmt.Sprintf(`{"Id":%q,"Names":["/%s"],"Image":"example/%s:1","State":"running","Labels":{"com.docker.compose.project":"home","com.docker.compose.service":%q,"com.docker.compose.config-hash":"h"},"Mounts":[%s]}`, id, name, name, name, mount)
	}
	return fakeengine.Start(t, map[string]string{
		"/v1.41/version": `{"Version":"27.3.1","ApiVersion":"1.41","Os":"linux"}`,
		"/v1.41/info":    `{"OSType":"linux","OperatingSystem":"Debian GNU/Linux 12","Name":"host","DockerRootDir":"` + root + `"}`,
		"/v1.41/volumes": `{"Volumes":[{"Name":"share","Driver":"local","Mountpoint":"` + nfs + `","Options":{"type":"nfs","o":"addr=10.0.0.5","device":":/export"}}]}`,
		"/v1.41/containers/json": "[" + ctr(ids[0], "ok", `{"Type":"bind","Source":"`+bind+`","Destination":"/data","RW":true}`) + "," +
			ctr(ids[1], "nfs", `{"Type":"volume","Name":"share","Source":"`+nfs+`","Destination":"/app/data","Driver":"local","RW":true}`) + "]",
		"/v1.41/containers/" + ids[0] + "/json": `{"Id":"` + ids[0] + `","State":{"Status":"running","Pid":0}}`,
		"/v1.41/containers/" + ids[1] + "/json": `{"Id":"` + ids[1] + `","State":{"Status":"running","Pid":0}}`,
	})
}

// TestAuditCommand: audit's table names each container, its compose
// service, mount, class, databases and verdict; its findings follow with
// their remedies, grouped by container; the exit code is the worst
// verdict's (3), 0 with --fail-on never; the JSON validates against the
// published schema and SARIF against SARIF 2.1.0.
func TestAuditCommand(t *testing.T) {
	e := auditFakeEngine(t)
	t.Setenv("DOCKER_HOST", e.Host)
	sarifSch := loadSARIFSchema(t)
	auditSch := loadAuditSchema(t)

	out, stderr, code := runMain(t, "audit")
	if code != exitUnsafe {
		t.Fatalf("audit: exit %d, want %d\n%s%s", code, exitUnsafe, out, stderr)
	}
	lines := strings.Split(out, "\n")
	var okRow, nfsRow string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "ok ") && okRow == "":
			okRow = l
		case strings.HasPrefix(l, "nfs ") && nfsRow == "":
			nfsRow = l
		}
	}
	for _, want := range []struct{ row, name string }{
		{okRow, "home/ok example/ok:1 /data <- " + "local app.db wal ok -"},
		{nfsRow, "home/nfs example/nfs:1 /app/data <- vol:share network kuma.db wal unsafe wal-on-network-fs"},
	} {
		got := strings.Join(strings.Fields(want.row), " ")
		head, tail, _ := strings.Cut(want.name, " <- ")
		if !strings.Contains(got, head) || !strings.Contains(got, strings.TrimPrefix(tail, "local ")) {
			t.Errorf("audit table row %q, want %q", got, want.name)
		}
	}
	wantIn(t, "audit text", out, "CONTAINER  PROJECT/SERVICE")
	wantIn(t, "audit text", out, "\nnfs (example/nfs:1): unsafe\nERROR wal-on-network-fs: ")
	wantIn(t, "audit text", out, "  fix: ")
	wantIn(t, "audit text", out, "2 mounts with SQLite data in 2 containers; verdict: unsafe")

	if _, _, code := runMain(t, "audit", "--fail-on", "never"); code != exitOK {
		t.Errorf("audit --fail-on never: exit %d, want 0", code)
	}

	out, _, code = runMain(t, "audit", "--format", "json")
	if code != exitUnsafe {
		t.Errorf("audit --format json: exit %d, want %d", code, exitUnsafe)
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		t.Fatalf("decode audit JSON: %v\n%s", err, out)
	}
	if err := auditSch.Validate(inst); err != nil {
		t.Errorf("audit --format json does not validate against %s: %v\n%s", auditSchemaPath, err, out)
	}

	out, _, _ = runMain(t, "audit", "--format", "sarif")
	l := decodeSARIF(t, sarifSch, out)
	found := false
	for _, r := range l.Runs[0].Results {
		if r.RuleID == "wal-on-network-fs" && strings.HasPrefix(r.Message.Text, "container nfs: ") {
			found = true
		}
	}
	if !found {
		t.Errorf("audit --format sarif: no wal-on-network-fs result for container nfs\n%s", out)
	}
}

// TestAuditNoEngine: an engine that does not answer is exit 1 with a
// hint, never an empty ok table.
func TestAuditNoEngine(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "none.sock"))
	out, stderr, code := runMain(t, "audit")
	if code != exitInternal || out != "" || !strings.Contains(stderr, "preflight: hint: ") {
		t.Errorf("audit without an engine: exit %d stdout %q stderr %q; want 1, nothing, a hint", code, out, stderr)
	}
}

func wantIn(t *testing.T, what, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%s does not contain %q:\n%s", what, sub, s)
	}
}

// loadAuditSchema compiles docs' audit.json with the report.json it refers to.
func loadAuditSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	for _, p := range []string{reportSchemaPath, auditSchemaPath} {
		f, err := os.Open(filepath.Join(docsDir, p))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		if err := c.AddResource(rules.DocsURL+p, doc); err != nil {
			t.Fatal(err)
		}
	}
	sch, err := c.Compile(rules.DocsURL + auditSchemaPath)
	if err != nil {
		t.Fatalf("compile %s: %v", auditSchemaPath, err)
	}
	return sch
}

// oneBindEngine serves one running container (its name, image and compose
// project and service given as JSON string contents) that binds a
// directory with a WAL database at /data; it returns the engine's host.
func oneBindEngine(t *testing.T, id, name, image, project, service, dest string) string {
	t.Helper()
	root := t.TempDir()
	bind := filepath.Join(root, "bind")
	for _, d := range []string{bind, filepath.Join(root, "containers", id)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testdb.Make(t, filepath.Join(bind, "app.db"), "wal", 1)
	e := fakeengine.Start(t, map[string]string{
		"/v1.41/version": `{"Version":"27.3.1","ApiVersion":"1.41","Os":"linux"}`,
		"/v1.41/info":    `{"OSType":"linux","Name":"host","DockerRootDir":"` + root + `"}`,
		"/v1.41/volumes": `{"Volumes":[]}`,
		"/v1.41/containers/json": `[{"Id":"` + id + `","Names":["/` + name + `"],"Image":"` + image + `","State":"running",` +
			`"Labels":{"com.docker.compose.project":"` + project + `","com.docker.compose.service":"` + service + `","com.docker.compose.config-hash":"h"},` +
			`"Mounts":[{"Type":"bind","Source":"` + bind + `","Destination":"` + dest + `","RW":true}]}]`,
		"/v1.41/containers/" + id + "/json": `{"Id":"` + id + `","State":{"Status":"running","Pid":0}}`,
	})
	return e.Host
}

// TestAuditHostileNames: a container whose name, image and compose labels
// carry newlines, tabs and terminal escapes cannot add a row, shift a
// column or colour the terminal, and a mount destination with a bidi
// override or a C1 CSI (printable ASCII otherwise) cannot reorder or
// colour a line: every cell is one escaped line.
func TestAuditHostileNames(t *testing.T) {
	evil := `evil\nok  -  x  /data  local  app.db wal  ok  -\t\u001b[32m`
	t.Setenv("DOCKER_HOST", oneBindEngine(t, strings.Repeat("c3", 32), evil, evil, evil, `s\t`, `/data\u202eko \u009b32m`))
	out, stderr, code := runMain(t, "audit")
	if code != exitOK {
		t.Fatalf("audit: exit %d\n%s%s", code, out, stderr)
	}
	if strings.ContainsAny(out, "\t\x1b\u009b\u202e") {
		t.Errorf("audit output holds a raw tab, escape, C1 CSI or bidi override:\n%q", out)
	}
	var rows []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "evil") || strings.HasPrefix(l, "ok ") {
			rows = append(rows, l)
		}
	}
	if len(rows) != 1 || !strings.Contains(rows[0], `evil\nok`) {
		t.Errorf("audit table rows for the hostile container = %q, want one row with the name escaped", rows)
	}
}

// TestAuditEngineHangs: an engine (or proxy) that accepts and never
// answers costs --docker-timeout, then exit 1, not a hung audit.
func TestAuditEngineHangs(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "hang.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	t.Setenv("DOCKER_HOST", "unix://"+sock)
	start := time.Now()
	_, stderr, code := runMain(t, "audit", "--docker-timeout", "1s")
	if el := time.Since(start); code != exitInternal || el > 4*time.Second {
		t.Errorf("audit against a silent engine: exit %d after %s, want 1 within about 1s\n%s", code, el, stderr)
	}
}

// TestAuditLongLabel: a 100 KB compose label does not widen the table:
// every row stays short, the cell ends in an ellipsis, and the JSON keeps
// the full value.
func TestAuditLongLabel(t *testing.T) {
	long := strings.Repeat("p", 100_000)
	t.Setenv("DOCKER_HOST", oneBindEngine(t, strings.Repeat("d4", 32), "long", "example/long:1", long, "s", "/data"))
	out, stderr, code := runMain(t, "audit")
	if code != exitOK {
		t.Fatalf("audit: exit %d\n%s%s", code, out, stderr)
	}
	for _, l := range strings.Split(out, "\n") {
		if n := len([]rune(l)); n > 400 {
			t.Errorf("audit output line of %d characters, want at most 400: %.120q...", n, l)
		}
	}
	wantIn(t, "audit table", out, "pppp…")
	js, _, _ := runMain(t, "audit", "--format", "json")
	wantIn(t, "audit --format json", js, long)
}

// TestAuditSwarmElsewhere: on a Swarm manager whose service (the captured
// swarm-capture, two replicas, start-first) has no container on this
// engine, audit lists it from its spec: the JSON validates against the
// schema, the text and SARIF name the service.
func TestAuditSwarmElsewhere(t *testing.T) {
	mp := filepath.Join(t.TempDir(), "volumes", "swarm-capture-vol", "_data")
	if err := os.MkdirAll(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	answers := fakeengine.SwarmAnswers(t, filepath.Join("..", "..", "probe", "docker", "testdata", "swarm"), mp,
		fakeengine.SwarmCase{Info: "info-manager.json", Services: "services.json", Tasks: "tasks-two-nodes.json", Nodes: "nodes-two-nodes.json"})
	answers["/v1.41/containers/json"] = "[]"
	t.Setenv("DOCKER_HOST", fakeengine.Start(t, answers).Host)
	out, stderr, code := runMain(t, "audit", "--format", "json")
	if code != exitWarn {
		t.Fatalf("audit --format json: exit %d, want %d\n%s%s", code, exitWarn, out, stderr)
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		t.Fatalf("decode audit JSON: %v\n%s", err, out)
	}
	if err := loadAuditSchema(t).Validate(inst); err != nil {
		t.Errorf("audit --format json does not validate against %s: %v\n%s", auditSchemaPath, err, out)
	}
	wantIn(t, "audit JSON", out, `"name": "swarm-capture"`)
	out, _, _ = runMain(t, "audit")
	wantIn(t, "audit text", out, "swarm/swarm-capture")
	wantIn(t, "audit text", out, "\nservice swarm-capture (")
	wantIn(t, "audit text", out, ", no task on this node): warn\n")
	wantIn(t, "audit text", out, "WARN replicas-on-sqlite-volume: /data (not inspected): service swarm-capture (2 replicas;")
	wantIn(t, "audit text", out, "in 0 containers and 1 Swarm service with no task here; verdict: warn")
	out, _, _ = runMain(t, "audit", "--format", "sarif")
	wantIn(t, "audit sarif", out, "service swarm-capture: ")
}

// TestWritersHostileNames: writers --host-path lists a container whose
// compose labels and mount destination carry newlines, tabs and terminal
// escapes on one row of escaped cells, as audit does.
func TestWritersHostileNames(t *testing.T) {
	evil := `evil\nok  -  x\t\u001b[32m`
	host := oneBindEngine(t, strings.Repeat("c4", 32), "app", "img", evil, evil, `/data\nrow2 \u202eko`)
	t.Setenv("DOCKER_HOST", host)
	ar := decodeAuditReport(t, host)
	out, stderr, code := runMain(t, "writers", "--host-path", ar)
	if code != exitOK {
		t.Fatalf("writers: exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(out, `evil\nok`) || strings.ContainsAny(out, "\t\x1b\u202e") || strings.Contains(out, "\nrow2") || strings.Contains(out, "\nok  -") {
		t.Errorf("writers output holds a raw tab, escape, bidi override or a line from a label:\n%q", out)
	}
}

// decodeAuditReport is the bind source of the one container that
// oneBindEngine at host serves.
func decodeAuditReport(t *testing.T, host string) string {
	t.Helper()
	out, _, _ := runMain(t, "audit", "--format", "json")
	var ar struct {
		Containers []struct {
			Mounts []struct {
				Mount struct {
					Source string `json:"source"`
				} `json:"mount"`
			} `json:"mounts"`
		} `json:"containers"`
	}
	if err := json.Unmarshal([]byte(out), &ar); err != nil || len(ar.Containers) != 1 || len(ar.Containers[0].Mounts) != 1 {
		t.Fatalf("audit --format json at %s: %v\n%s", host, err, out)
	}
	return ar.Containers[0].Mounts[0].Mount.Source
}
