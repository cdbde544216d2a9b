//go:build !linux

package mounts

import (
	"fmt"
	"runtime"

	"github.com/moby/sys/mountinfo"
)

// ReadSelf reads the mount table of the calling process. /proc/self/mountinfo
// exists only on Linux: on this system ReadSelf returns an error wrapping
// [ErrNotSupported].
func ReadSelf() (*Table, error) {
	return nil, fmt.Errorf("read own mounts on %s: %w", runtime.GOOS, ErrNotSupported)
}

// parseMountinfo parses mountinfo lines with parseMountinfoPortable:
// mountinfo.GetMountsFromReader exists only on Linux.
func parseMountinfo(lines []byte) ([]*mountinfo.Info, error) {
	return parseMountinfoPortable(lines)
}

// ReadSelfFor returns an error wrapping [ErrNotSupported]: there is no
// /proc/self/mountinfo on this system.
func ReadSelfFor(_, _ []string) (*Table, error) { return ReadSelf() }
