package manifest_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoKubernetesModules keeps the manifest reader on its own minimal
// structs (internal/kubeapi): k8s.io/api, apimachinery and client-go
// would add megabytes to the binary. Nor does it open SQLite.
func TestNoKubernetesModules(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go command not found: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps .: %v", err)
	}
	for _, d := range strings.Fields(string(out)) {
		for _, f := range []string{"k8s.io", "sigs.k8s.io", "database/sql", "modernc.org/sqlite"} {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("go list -deps: package manifest depends on %s", d)
			}
		}
	}
}
