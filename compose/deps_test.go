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
