//go:build !linux

package locks

import (
	"fmt"
	"runtime"
)

// Probe needs Linux's fcntl(2) lock queries: on this system it returns an
// error wrapping [ErrNotSupported]. See the Linux documentation of Probe
// for the contract.
func Probe(dbPath string) (Result, error) {
	err := fmt.Errorf("probe locks on %s: %w", runtime.GOOS, ErrNotSupported)
	return Result{Locks: []Lock{}, Err: err.Error()}, err
}
