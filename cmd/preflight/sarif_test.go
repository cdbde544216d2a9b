package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// sarifSchema is the OASIS SARIF 2.1.0 schema (testdata/sarif/SOURCE says
// where it comes from).
const sarifSchema = "testdata/sarif/sarif-schema-2.1.0.json"

// sarifLog is the part of a SARIF log the tests look at.
type sarifLog struct {
	Version string `json:"version"`
	Runs    []struct {
		Tool struct {
			Driver struct {
				Name  string `json:"name"`
				Rules []struct {
					ID   string `json:"id"`
					Help struct {
						Text string `json:"text"`
					} `json:"help"`
					DefaultConfiguration struct {
						Level string `json:"level"`
					} `json:"defaultConfiguration"`
				} `json:"rules"`
			} `json:"driver"`
		} `json:"tool"`
		OriginalURIBaseIDs map[string]struct {
			URI string `json:"uri"`
		} `json:"originalUriBaseIds"`
		Results []sarifResult `json:"results"`
	} `json:"runs"`
}

type sarifResult struct {
	RuleID     string                `json:"ruleId"`
	RuleIndex  int                   `json:"ruleIndex"`
	Level      string                `json:"level"`
	Message    struct{ Text string } `json:"message"`
	Properties map[string]any        `json:"properties"`
	Locations  []struct {
		PhysicalLocation struct {
			ArtifactLocation struct {
				URI       string `json:"uri"`
				URIBaseID string `json:"uriBaseId"`
			} `json:"artifactLocation"`
			Region struct {
				StartLine   int `json:"startLine"`
				StartColumn int `json:"startColumn"`
			} `json:"region"`
		} `json:"physicalLocation"`
	} `json:"locations"`
}

// loadSARIFSchema compiles the SARIF 2.1.0 JSON schema (before a test
// leaves the package directory).
func loadSARIFSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(sarifSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("read %s: %v", sarifSchema, err)
	}
	c := jsonschema.NewCompiler()
	const url = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatalf("compile %s: %v", sarifSchema, err)
	}
	return sch
}

// validateSARIF checks out against the SARIF 2.1.0 JSON schema.
func validateSARIF(t *testing.T, sch *jsonschema.Schema, out string) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		t.Fatalf("decode SARIF: %v\n%s", err, out)
	}
	return sch.Validate(inst)
}

// decodeSARIF validates out against the schema and decodes it.
func decodeSARIF(t *testing.T, sch *jsonschema.Schema, out string) sarifLog {
	t.Helper()
	if err := validateSARIF(t, sch, out); err != nil {
		t.Fatalf("SARIF output does not validate against the 2.1.0 schema: %v\n%s", err, out)
	}
	var l sarifLog
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatal(err)
	}
	if l.Version != "2.1.0" || len(l.Runs) != 1 || l.Runs[0].Tool.Driver.Name != "preflight" {
		t.Fatalf("SARIF log: version %q, %d runs; want 2.1.0 with one preflight run", l.Version, len(l.Runs))
	}
	checkSARIFRules(t, l)
	return l
}

// checkSARIFRules: one rule per finding ID of the rules table, in its
// order, with its meaning and mapped default level; every result's
// ruleIndex names its own rule.
func checkSARIFRules(t *testing.T, l sarifLog) {
	t.Helper()
	want := preflight.Rules()
	got := l.Runs[0].Tool.Driver.Rules
	if len(got) != len(want) {
		t.Fatalf("SARIF rules: %d, want %d (one per finding ID)", len(got), len(want))
	}
	for i, rl := range want {
		if got[i].ID != string(rl.ID) || got[i].Help.Text != rl.Doc || got[i].DefaultConfiguration.Level != sarifLevel(rl.Level) {
			t.Errorf("SARIF rule %d = %+v, want %s (%s) with help %q", i, got[i], rl.ID, sarifLevel(rl.Level), rl.Doc)
		}
	}
	for _, r := range l.Runs[0].Results {
		if r.RuleIndex < 0 || r.RuleIndex >= len(got) || got[r.RuleIndex].ID != r.RuleID {
			t.Errorf("result %s: ruleIndex %d does not name its rule", r.RuleID, r.RuleIndex)
		}
	}
}

// sarifFind returns the result for rule id, failing the test without one.
func sarifFind(t *testing.T, l sarifLog, id string) sarifResult {
	t.Helper()
	for _, r := range l.Runs[0].Results {
		if r.RuleID == id {
			if len(r.Locations) != 1 {
				t.Fatalf("result %s: %d locations, want 1", id, len(r.Locations))
			}
			return r
		}
	}
	t.Fatalf("no SARIF result for %s in %+v", id, l.Runs[0].Results)
	return sarifResult{}
}

// TestComposeSARIF: compose --format sarif puts each finding at the line
// and column that declare its mount, relative to the working directory.
func TestComposeSARIF(t *testing.T) {
	if !compose.Built {
		t.Skip("compose is not built in (-tags nocompose)")
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := "services:\n  app:\n    image: example/app\n    volumes:\n      - type: volume\n        source: cache\n        target: /cache\n      - ./data:/data\nvolumes:\n  cache:\n"
	if err := os.WriteFile(filepath.Join(dir, "compose.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	sch := loadSARIFSchema(t)
	t.Chdir(dir)
	out, stderr, code := runMain(t, "compose", "--docker", "off", "--migrate-image", "preflight", "--platform", "desktop", "--data-dir", "app:/data", "--format", "sarif")
	if code != exitUnsafe {
		t.Fatalf("compose --format sarif: exit %d, want %d\n%s\n%s", code, exitUnsafe, stderr, out)
	}
	l := decodeSARIF(t, sch, out)
	r := sarifFind(t, l, "bind-on-desktop")
	loc := r.Locations[0].PhysicalLocation
	if loc.ArtifactLocation.URI != "compose.yaml" || loc.ArtifactLocation.URIBaseID != srcRoot || loc.Region.StartLine != 8 || loc.Region.StartColumn != 9 {
		t.Errorf("bind-on-desktop at %+v, want compose.yaml (base %s) line 8 column 9", loc, srcRoot)
	}
	if r.Level != "error" || r.Properties["path"] != "app:/data" || !strings.Contains(r.Message.Text, "\nfix: ") {
		t.Errorf("bind-on-desktop result = %+v, want level error, path app:/data, the remedies in the message", r)
	}
	base := l.Runs[0].OriginalURIBaseIDs[srcRoot].URI
	if want := dirURI(dir); base != want {
		t.Errorf("originalUriBaseIds[%s] = %q, want %q", srcRoot, base, want)
	}

	// A mount written in an override file is located there.
	override := "services:\n  worker:\n    image: example/worker\n    volumes:\n      - ./data:/var/lib/worker\n"
	if err := os.WriteFile(filepath.Join(dir, "compose.override.yaml"), []byte(override), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = runMain(t, "compose", "--docker", "off", "--migrate-image", "preflight", "--platform", "desktop", "--data-dir", "app:/data", "--data-dir", "worker:/var/lib/worker", "--format", "sarif")
	if code != exitUnsafe {
		t.Fatalf("compose --format sarif with an override: exit %d, want %d\n%s\n%s", code, exitUnsafe, stderr, out)
	}
	found := 0
	for _, r := range decodeSARIF(t, sch, out).Runs[0].Results {
		loc := r.Locations[0].PhysicalLocation
		if r.Properties["path"] != "worker:/var/lib/worker" {
			continue
		}
		found++
		if loc.ArtifactLocation.URI != "compose.override.yaml" || loc.Region.StartLine != 5 {
			t.Errorf("%s about worker:/var/lib/worker at %+v, want compose.override.yaml line 5", r.RuleID, loc)
		}
	}
	if found == 0 {
		t.Errorf("no finding about worker:/var/lib/worker\n%s", out)
	}
}

// TestCheckSARIF: check --format sarif puts each finding at the database
// or data directory it is about, maps the levels, and marks an ignored
// finding.
func TestCheckSARIF(t *testing.T) {
	dir := t.TempDir()
	testdb.Make(t, filepath.Join(dir, "good.db"), "wal", 1)
	bad := filepath.Join(dir, "bad.db")
	if err := os.WriteFile(bad, bytes.Repeat([]byte{0xa5}, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nope")
	sch := loadSARIFSchema(t)
	out, stderr, code := runMain(t, "check", "--docker", "off", "--format", "sarif", dir, missing)
	if code != exitUnsafe {
		t.Fatalf("check --format sarif: exit %d, want %d\n%s\n%s", code, exitUnsafe, stderr, out)
	}
	l := decodeSARIF(t, sch, out)
	for _, tt := range []struct{ id, path, level string }{
		{"db-header-damaged", bad, "warning"},
		{"data-dir-missing", missing, "error"},
	} {
		r := sarifFind(t, l, tt.id)
		al := r.Locations[0].PhysicalLocation.ArtifactLocation
		if want := "file://" + tt.path; al.URI != want || al.URIBaseID != "" || r.Level != tt.level {
			t.Errorf("%s: level %s at %+v, want %s at %s", tt.id, r.Level, al, tt.level, want)
		}
	}

	out, _, code = runMain(t, "check", "--docker", "off", "--format", "sarif", "--ignore", "db-header-damaged", dir)
	if code != exitOK {
		t.Errorf("check --ignore db-header-damaged --format sarif: exit %d, want 0\n%s", code, out)
	}
	if r := sarifFind(t, decodeSARIF(t, sch, out), "db-header-damaged"); r.Level != "note" || r.Properties["ignored"] != true {
		t.Errorf("ignored db-header-damaged = %+v, want level note, ignored true", r)
	}
}

// TestSARIFSchemaRejects: the schema check itself fails a log that breaks
// the schema (preflight's own level names are not SARIF's).
func TestSARIFSchemaRejects(t *testing.T) {
	var b bytes.Buffer
	r := &preflight.Report{Verdict: "unsafe", Findings: []preflight.Finding{{ID: "data-dir-missing", Level: preflight.LevelError, Path: "/nope", Message: "m"}}}
	if err := renderSARIF(&b, r); err != nil {
		t.Fatal(err)
	}
	sch := loadSARIFSchema(t)
	if err := validateSARIF(t, sch, b.String()); err != nil {
		t.Fatalf("a valid log is rejected: %v", err)
	}
	broken := strings.Replace(b.String(), `"level": "error"`, `"level": "warn"`, 1)
	if broken == b.String() {
		t.Fatal("no level to break")
	}
	if err := validateSARIF(t, sch, broken); err == nil {
		t.Error("a result with level \"warn\" validates against the SARIF 2.1.0 schema")
	}
}
