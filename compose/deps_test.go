package compose_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoDatabaseImports keeps the compose package free of SQLite
// connections: it reads compose files and database headers only.
func TestNoDatabaseImports(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go command not found: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps .: %v", err)
	}
	for _, d := range strings.Fields(string(out)) {
		for _, f := range []string{"database/sql", "github.com/glebarez/go-sqlite", "modernc.org/sqlite", "github.com/mattn/go-sqlite3"} {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("go list -deps: package compose depends on %s", d)
			}
		}
	}
}

// TestNoComposeDeps: built with the nocompose tag (the image's binary),
// the package keeps its model and links no compose-go, no YAML library,
// no logrus, mapstructure or diff library; and the full build links one
// YAML library, the one compose-go uses.
func TestNoComposeDeps(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go command not found: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-tags", "nocompose", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -tags nocompose -deps .: %v", err)
	}
	for _, d := range strings.Fields(string(out)) {
		for _, f := range []string{"github.com/compose-spec/compose-go", "go.yaml.in/yaml", "gopkg.in/yaml", "github.com/sirupsen/logrus",
			"github.com/go-viper/mapstructure", "github.com/pmezard/go-difflib"} {
			if strings.HasPrefix(d, f) {
				t.Errorf("go list -tags nocompose -deps: package compose depends on %s", d)
			}
		}
	}
	out, err = exec.Command(goTool, "list", "-deps", "../cmd/preflight").Output()
	if err != nil {
		t.Fatalf("go list -deps ../cmd/preflight: %v", err)
	}
	var yamls []string
	for _, d := range strings.Fields(string(out)) {
		if (strings.HasPrefix(d, "go.yaml.in/yaml/") || strings.HasPrefix(d, "gopkg.in/yaml.")) && !strings.Contains(d, "/internal/") {
			yamls = append(yamls, d)
		}
	}
	if len(yamls) != 1 || yamls[0] != "go.yaml.in/yaml/v4" {
		t.Errorf("go list -deps ../cmd/preflight: YAML libraries %v, want go.yaml.in/yaml/v4 alone (compose-go's)", yamls)
	}
}
