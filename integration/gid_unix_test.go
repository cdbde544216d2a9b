//go:build unix

package integration_test

import (
	"strconv"
	"syscall"
)

// fileGID is the group id of path (stat(2), following symlinks), as a
// decimal string for docker run --group-add.
func fileGID(path string) (string, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return "", err
	}
	return strconv.FormatUint(uint64(st.Gid), 10), nil
}

// fileUID is the user id of path (stat(2)), as a decimal string.
func fileUID(path string) (string, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return "", err
	}
	return strconv.FormatUint(uint64(st.Uid), 10), nil
}
