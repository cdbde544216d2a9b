//go:build !linux

package fuseloop

import (
	"fmt"
	"runtime"
)

// Mount is only implemented on Linux; elsewhere it returns an error.
func Mount(backingDir, mountpoint, name string) (unmount func() error, err error) {
	return nil, fmt.Errorf("mount fuse loopback: not supported on %s", runtime.GOOS)
}

// MountDirectIO is only implemented on Linux; elsewhere it returns an
// error.
func MountDirectIO(backingDir, mountpoint, name string) (unmount func() error, err error) {
	return nil, fmt.Errorf("mount fuse loopback: not supported on %s", runtime.GOOS)
}
