//go:build unix

package migrate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// keepMeta gives dst the owner, mode and access and modification times of
// the source's fi. Changing the owner needs root (or the same owner).
func keepMeta(dst string, fi fs.FileInfo, symlink bool) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok {
		if err := os.Lchown(dst, int(st.Uid), int(st.Gid)); err != nil {
			if errors.Is(err, fs.ErrPermission) {
				return fmt.Errorf("keep the owner %d:%d of %s: %w (run the migration as root: docker run --user 0:0)", st.Uid, st.Gid, dst, err)
			}
			return fmt.Errorf("keep the owner of %s: %w", dst, err)
		}
	}
	if !symlink {
		if err := os.Chmod(dst, fi.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
			return fmt.Errorf("keep the mode of %s: %w", dst, err)
		}
	}
	mtime := unix.NsecToTimespec(fi.ModTime().UnixNano())
	atime := mtime
	if ok {
		if a, known := accessTime(st); known {
			atime = a
		}
	}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, dst, []unix.Timespec{atime, mtime}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("keep the times of %s: %w", dst, err)
	}
	return nil
}
