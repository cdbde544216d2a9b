//go:build linux && !nocompose

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// nobodyUID is the uid and gid of the other user in the privilege tests.
const nobodyUID = 65534

// runAsNobody runs name with args as uid and gid 65534: a real process of
// another user.
func runAsNobody(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyUID, Gid: nobodyUID}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s as uid %d: %v: %s", name, strings.Join(args, " "), nobodyUID, err, out)
	}
}

// rootProject makes dir/rootproj (mode 0700, root's) with a real SQLite
// database in data/ and a compose file whose bind --write would rewrite,
// and returns the project directory.
func rootProject(t *testing.T, dir string) string {
	t.Helper()
	proj := filepath.Join(dir, "rootproj")
	if err := os.MkdirAll(filepath.Join(proj, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	testdb.Make(t, filepath.Join(proj, "data", "app.db"), "delete", 1)
	yaml := "services:\n  app:\n    image: myapp\n    volumes:\n      - ./data:/data\n    labels:\n      io.preflight.data-dir: /data\n"
	if err := os.WriteFile(filepath.Join(proj, "compose.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return proj
}

// userDir makes dir/name owned by uid 65534 (mode 0755).
func userDir(t *testing.T, dir, name string) string {
	t.Helper()
	d := filepath.Join(dir, name)
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, nobodyUID, nobodyUID); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestComposeWriteRefusesOtherUsersLink: root's compose --write on a
// compose file that another user's symlink points into a root-only
// directory, or on one in a directory another user can replace, is
// refused with exit 2 and the hint to run as the owner; the root-only file
// stays byte for byte and nothing appears beside it.
func TestComposeWriteRefusesOtherUsersLink(t *testing.T) {
	if os.Geteuid() != 0 {
		skipOrFail(t, "TestComposeWriteRefusesOtherUsersLink runs a process as uid 65534: needs root")
	}
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} { // uid 65534 must reach attproj
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	proj := rootProject(t, base)
	att := userDir(t, base, "attproj")
	runAsNobody(t, "ln", "-s", filepath.Join(proj, "compose.yaml"), filepath.Join(att, "compose.yaml"))
	// A project inside a directory of uid 65534, who can rename it away
	// and put a symlink to a root-only directory in its place.
	owned := filepath.Join(userDir(t, base, "home"), "proj")
	if err := os.Mkdir(owned, 0o755); err != nil {
		t.Fatal(err)
	}
	yaml, err := os.ReadFile(filepath.Join(proj, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(owned, "compose.yaml"), yaml, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{filepath.Join(att, "compose.yaml"), filepath.Join(owned, "compose.yaml")} {
		before := snapshotNames(t, proj, filepath.Dir(file))
		_, errOut, code := runMain(t, "compose", "--migrate-image", "preflight", "-f", file, "--write", "--platform", "desktop", "--docker", "off")
		if code != exitUsage || !strings.Contains(errOut, "refused") || !strings.Contains(errOut, "sudo -u nobody preflight compose --write") {
			t.Errorf("compose -f %s --write = exit %d, stderr %q; want exit %d, a refusal and the sudo -u nobody hint", file, code, errOut, exitUsage)
		}
		if got, _ := os.ReadFile(filepath.Join(proj, "compose.yaml")); !bytes.Equal(got, yaml) {
			t.Errorf("compose -f %s --write changed the root-only %s:\n%s", file, filepath.Join(proj, "compose.yaml"), got)
		}
		if got, _ := os.ReadFile(filepath.Join(owned, "compose.yaml")); !bytes.Equal(got, yaml) {
			t.Errorf("compose -f %s --write changed %s:\n%s", file, filepath.Join(owned, "compose.yaml"), got)
		}
		if after := snapshotNames(t, proj, filepath.Dir(file)); !slices.Equal(after, before) {
			t.Errorf("compose -f %s --write: entries %v, want %v (nothing created)", file, after, before)
		}
	}
}

// snapshotNames lists the entries of dirs, as dir/name.
func snapshotNames(t *testing.T, dirs ...string) []string {
	t.Helper()
	var out []string
	for _, d := range dirs {
		es, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			out = append(out, filepath.Join(d, e.Name()))
		}
	}
	return out
}
