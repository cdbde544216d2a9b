//go:build !linux

package testdb

import (
	"runtime"
	"testing"
)

// StoppedFUSE needs Linux (a FUSE mount and SIGSTOP); elsewhere it skips
// the test.
func StoppedFUSE(t testing.TB, backing string) (mnt string) {
	t.Helper()
	t.Skipf("a stopped FUSE mount needs Linux, not %s", runtime.GOOS)
	return ""
}

// StartFUSE needs Linux; elsewhere it skips the test.
func StartFUSE(t testing.TB, backing string) (mnt string, stop, resume func()) {
	t.Helper()
	t.Skipf("a FUSE mount needs Linux, not %s", runtime.GOOS)
	return "", nil, nil
}

// HoldOnStoppedFUSE needs Linux; elsewhere it skips the test.
func HoldOnStoppedFUSE(t testing.TB) (pid int, mnt string) {
	t.Helper()
	t.Skipf("a FUSE mount needs Linux, not %s", runtime.GOOS)
	return 0, ""
}

// StuckLocksFUSE needs Linux; elsewhere it skips the test.
func StuckLocksFUSE(t testing.TB, backing string) (mnt string) {
	t.Helper()
	t.Skipf("a FUSE mount needs Linux, not %s", runtime.GOOS)
	return ""
}
