//go:build !linux || 386 || arm || mips || mipsle

package fuseloop

import (
	"fmt"
	"runtime"
)

// Mount is only implemented on 64-bit Linux (go-fuse v2.12 does not build
// for 32-bit Linux: its splice package assigns syscall.Splice's int to an
// int64); elsewhere it returns an error.
func Mount(backingDir, mountpoint, name string) (unmount func() error, err error) {
	return nil, fmt.Errorf("mount fuse loopback: not supported on %s/%s", runtime.GOOS, runtime.GOARCH)
}

// MountDirectIO is only implemented on 64-bit Linux; elsewhere it returns
// an error.
func MountDirectIO(backingDir, mountpoint, name string) (unmount func() error, err error) {
	return nil, fmt.Errorf("mount fuse loopback: not supported on %s/%s", runtime.GOOS, runtime.GOARCH)
}

// MountStuckLocks is only implemented on 64-bit Linux; elsewhere it
// returns an error.
func MountStuckLocks(backingDir, mountpoint, name string) (unmount func() error, err error) {
	return nil, fmt.Errorf("mount fuse loopback: not supported on %s/%s", runtime.GOOS, runtime.GOARCH)
}
