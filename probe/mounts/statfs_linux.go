package mounts

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// StatfsType returns statfs(2)'s f_type for path: the magic number of the
// filesystem that serves it. Errors are statfs's, wrapped.
func StatfsType(path string) (uint32, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", path, err)
	}
	return uint32(st.Type), nil // every magic is 32 bits; Type is signed on some GOARCHes
}
