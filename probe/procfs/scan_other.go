//go:build !linux

package procfs

import (
	"context"
	"fmt"
	"runtime"
)

// Scan needs Linux's /proc: on this system it returns an error wrapping
// [ErrNotSupported].
func Scan(ctx context.Context, targets []Target, opts Options) (Result, error) {
	return Result{}, fmt.Errorf("scan processes on %s: %w", runtime.GOOS, ErrNotSupported)
}

// Describe needs Linux's /proc: on this system it returns an error
// wrapping [ErrNotSupported].
func Describe(ctx context.Context, root string, pid int) (Described, error) {
	return Described{}, fmt.Errorf("describe process on %s: %w", runtime.GOOS, ErrNotSupported)
}
