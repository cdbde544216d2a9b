//go:build !linux

package rawfile

import (
	"errors"
	"runtime"
)

// StatInRoot needs openat2(2): Linux only.
func StatInRoot(root, name string) (dev, ino uint64, err error) {
	return 0, 0, errors.New("resolve a path inside a root: not supported on " + runtime.GOOS)
}
