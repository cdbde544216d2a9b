package integration_test

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImageShipsEntrypoint: the released image (the top-level Dockerfile,
// built from a context laid out as the repository is, with its
// .dockerignore) holds /preflight and an executable /entrypoint.sh, the
// repository's, for images that copy it next to their own shell entrypoint.
func TestImageShipsEntrypoint(t *testing.T) {
	requireDocker(t)
	tag := "preflight-it-release:" + runID
	if err := buildImage(tag, "Dockerfile", map[string]string{
		".dockerignore":           filepath.Join(repoRoot, ".dockerignore"),
		"entrypoint.sh":           filepath.Join(repoRoot, "entrypoint.sh"),
		"bin/preflight-nocompose": filepath.Join(binDir, "preflight-nocompose"),
		"rootfs/tmp/.keep":        filepath.Join(repoRoot, "rootfs/tmp/.keep"),
	}); err != nil {
		t.Fatal(err)
	}
	r := docker(t, "create", "--label", label, tag)
	wantCode(t, r, 0)
	id := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { docker(t, "rm", "-f", id) })
	want, err := os.ReadFile(filepath.Join(repoRoot, "entrypoint.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/entrypoint.sh", "/preflight"} {
		r := docker(t, "cp", id+":"+path, "-")
		wantCode(t, r, 0)
		tr := tar.NewReader(strings.NewReader(r.stdout))
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("docker cp %s: %v", path, err)
		}
		if h.Typeflag != tar.TypeReg || h.Mode&0o111 != 0o111 {
			t.Errorf("image %s: type %c mode %o, want an executable file", path, h.Typeflag, h.Mode)
		}
		if path == "/entrypoint.sh" {
			got, _ := io.ReadAll(tr)
			if !bytes.Equal(got, want) {
				t.Errorf("image /entrypoint.sh (%d bytes) differs from the repository's entrypoint.sh (%d bytes)", len(got), len(want))
			}
		}
	}
}
