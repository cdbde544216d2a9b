package preflight_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflight-sqlite/preflight"
)

// TestComposeWindowsBind: on a native Linux engine, a database bound from
// a Windows drive-letter path is on a cross-vm share (error with a
// declared data directory), not on the working directory's local disk.
func TestComposeWindowsBind(t *testing.T) {
	file := filepath.Join(t.TempDir(), "compose.yaml")
	src := "services:\n  app:\n    image: example/app\n    labels:\n      io.preflight.data-dir: /data\n    volumes:\n      - C:\\Users\\me\\app\\data:/data\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := composeOpts(file, "linux")
	opts.NoDisk = false
	res, err := preflight.CheckCompose(context.Background(), opts)
	if err != nil {
		t.Fatalf("CheckCompose: %v", err)
	}
	r := res.Report
	if r.Verdict != preflight.VerdictUnsafe || !strings.Contains(ids(r), "bind-on-unsafe-fs:error") {
		t.Errorf("CheckCompose(bind of C:\\...) = verdict %s, findings %s; want unsafe with bind-on-unsafe-fs:error", r.Verdict, ids(r))
	}
}
