//go:build unix

package testdb

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// OwnerUID is the data directory's owner in the tests that run as root
// over a directory another user owns.
const OwnerUID = 65534

// OwnedDataDir returns a fresh directory DATA that uid OwnerUID owns,
// under a directory of root's that others can search, for a test that
// needs root (why says what for): skipped without root, failed under
// CI=true.
func OwnedDataDir(t testing.TB, why string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("needs root to %s (CI=true)", why)
		}
		t.Skipf("needs root to %s", why)
	}
	base, err := os.MkdirTemp("", "preflight-owned-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	data := filepath.Join(base, "data")
	for _, err := range []error{os.Chmod(base, 0o755), os.Mkdir(data, 0o755), os.Chown(data, OwnerUID, OwnerUID)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return data
}

// AsOwner runs argv as uid OwnerUID and fails the test if it fails.
func AsOwner(t testing.TB, argv ...string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: OwnerUID, Gid: OwnerUID}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v as uid %d: %v: %s", argv, OwnerUID, err, out)
	}
}
