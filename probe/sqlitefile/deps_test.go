package sqlitefile_test

import (
	"errors"
	"go/build"
	"os/exec"
	"strings"
	"testing"
)

// forbidden are imports that would mean opening a SQLite connection. The
// package reads headers with plain file I/O; only its tests use the driver.
var forbidden = []string{
	"database/sql",
	"github.com/glebarez/go-sqlite",
	"modernc.org/sqlite",
	"github.com/mattn/go-sqlite3",
}

func isForbidden(pkg string) bool {
	for _, f := range forbidden {
		if pkg == f || strings.HasPrefix(pkg, f+"/") {
			return true
		}
	}
	return false
}

// TestNoDirectSQLiteImports parses the package's non-test files for every
// GOOS/GOARCH build-tag combination, so it needs no go command.
func TestNoDirectSQLiteImports(t *testing.T) {
	for _, goos := range []string{"linux", "darwin", "freebsd", "windows"} {
		ctx := build.Default
		ctx.GOOS = goos
		pkg, err := ctx.ImportDir(".", 0)
		if err != nil {
			t.Fatalf("ImportDir(., GOOS=%s): %v", goos, err)
		}
		for _, imp := range pkg.Imports {
			if isForbidden(imp) {
				t.Errorf("GOOS=%s: package sqlitefile imports %s; it must read headers without a SQLite connection", goos, imp)
			}
		}
	}
}

// TestNoTransitiveSQLiteImports runs go list -deps to catch a forbidden
// package pulled in through another import.
func TestNoTransitiveSQLiteImports(t *testing.T) {
	goTool := requireTool(t, "go")
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps .: %v; stderr: %s", err, stderrOf(err))
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 || deps[len(deps)-1] != "github.com/preflight-sqlite/preflight/probe/sqlitefile" {
		t.Fatalf("go list -deps . = %q, want the package itself last", deps)
	}
	for _, d := range deps {
		if isForbidden(d) {
			t.Errorf("go list -deps: package sqlitefile depends on %s", d)
		}
	}
}

// stderrOf is the stderr an *exec.ExitError carries, or "".
func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}
