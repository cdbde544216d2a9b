//go:build unix

package convert

import (
	"errors"
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

var errReadOnlyFS = syscall.EROFS

// freeBytes returns the bytes available to unprivileged users on the
// filesystem holding dir (statfs f_bavail * f_bsize).
func freeBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// accessW is access(2) with W_OK: EROFS on a read-only mount, EACCES
// without permission.
func accessW(path string) error {
	err := unix.Access(path, unix.W_OK)
	if errors.Is(err, syscall.EROFS) {
		return errReadOnlyFS
	}
	if err != nil {
		return &fs.PathError{Op: "access", Path: path, Err: err}
	}
	return nil
}

func devOf(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev) //nolint:unconvert // int32 on darwin
	}
	return 0
}
