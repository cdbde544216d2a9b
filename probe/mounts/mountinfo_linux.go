package mounts

import (
	"bytes"

	"github.com/moby/sys/mountinfo"
)

// selfMountinfo is the mount table of the calling process (proc(5)).
const selfMountinfo = "/proc/self/mountinfo"

// ReadSelf reads and parses the mount table of the calling process from
// /proc/self/mountinfo (proc(5)), as seen from its mount namespace. It is
// Linux-only; on other systems it returns an error wrapping
// [ErrNotSupported].
func ReadSelf() (*Table, error) {
	return ReadFile(selfMountinfo)
}

// parseMountinfo parses mountinfo lines with the moby/sys/mountinfo
// parser, which exists only on Linux.
func parseMountinfo(lines []byte) ([]*mountinfo.Info, error) {
	return mountinfo.GetMountsFromReader(bytes.NewReader(lines), nil)
}
