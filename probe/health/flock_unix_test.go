//go:build unix

package health_test

import (
	"os"
	"syscall"
)

// flockEx takes an exclusive flock(2) on f.
func flockEx(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }
