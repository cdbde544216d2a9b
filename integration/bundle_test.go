package integration_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBundleDocumentedRun: the bundle line of docs/troubleshooting.md, run
// as printed by a user (uid 1000) whose $PWD is their own directory,
// writes the archive there, owned by them; without --user the image's
// user (65532) cannot, and the hint names the --user to add.
func TestBundleDocumentedRun(t *testing.T) {
	requireDocker(t)
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	const user = `--user "$(id -u):$(id -g)"`
	if !strings.Contains(string(doc), `docker run --rm `+user+` -v myapp-data:/data -v "$PWD:/out"`) {
		t.Fatalf("docs/troubleshooting.md: the bundle line does not run as the user (%s)", user)
	}
	v := volume(t)
	id := startApp(t, "-v", v+":/data", "-e", "DEMO_INTERVAL=1h", "--entrypoint", "/demoapp", image)
	waitLog(t, id, "demoapp: pid=")
	out := t.TempDir()
	if err := os.Chown(out, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(out, 0o755); err != nil {
		t.Fatal(err)
	}
	tag := toolImage(t, "preflight-it-bundle")
	args := []string{"-v", v + ":/data", "-v", out + ":/out", tag, "bundle", "/data", "-o", "/out/preflight-bundle.tar.gz", "--redact"}

	r := dockerRun(t, args...)
	if r.code == 0 {
		t.Errorf("bundle as the image's user into a directory of uid 1000: exit 0, want an error\n%s", r)
	}
	wantContains(t, "bundle stderr", r.stderr, "permission denied")
	wantContains(t, "bundle stderr", r.stderr, "preflight: hint: preflight runs as uid 65532")
	wantContains(t, "bundle stderr", r.stderr, user)

	r = dockerRun(t, append([]string{"--user", "1000:1000"}, args...)...)
	wantCode(t, r, 0)
	uid, err := fileUID(filepath.Join(out, "preflight-bundle.tar.gz"))
	if err != nil {
		t.Fatalf("bundle --user 1000:1000: %v\n%s", err, r)
	}
	if uid != "1000" {
		t.Errorf("bundle --user 1000:1000 wrote the archive owned by uid %s, want 1000", uid)
	}
}
