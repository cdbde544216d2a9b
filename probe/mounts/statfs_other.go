//go:build !linux

package mounts

import (
	"fmt"
	"runtime"
)

// StatfsType returns an error wrapping [ErrNotSupported]: the magic
// numbers it compares are Linux's.
func StatfsType(path string) (uint32, error) {
	return 0, fmt.Errorf("statfs %s on %s: %w", path, runtime.GOOS, ErrNotSupported)
}
