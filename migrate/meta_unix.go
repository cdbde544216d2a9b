//go:build unix

package migrate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// keepMeta gives rel in root the owner, mode and access and modification
// times of the source's fi. Each change is made relative to a descriptor
// of rel's directory (opened through root) without following a symlink
// at rel: the owner and times with AT_SYMLINK_NOFOLLOW, the mode with
// fchmod on rel opened O_NOFOLLOW. Changing the owner needs root (or the
// same owner).
func keepMeta(root *os.Root, rel string, fi fs.FileInfo, symlink bool) error {
	dst := filepath.Join(root.Name(), rel)
	parent, err := root.Open(filepath.Dir(rel))
	if err != nil {
		return fmt.Errorf("keep the metadata of %s: %w", dst, err)
	}
	defer parent.Close()
	pfd, base := int(parent.Fd()), filepath.Base(rel) // "." for root itself
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok {
		if err := unix.Fchownat(pfd, base, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, fs.ErrPermission) {
				return fmt.Errorf("keep the owner %d:%d of %s: %w (run the migration as root: docker run --user 0:0)", st.Uid, st.Gid, dst, err)
			}
			return fmt.Errorf("keep the owner of %s: %w", dst, err)
		}
	}
	if !symlink {
		if err := fchmodAt(pfd, base, fi.Mode()); err != nil {
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
	if err := unix.UtimesNanoAt(pfd, base, []unix.Timespec{atime, mtime}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("keep the times of %s: %w", dst, err)
	}
	return nil
}

// fchmodAt sets the permission, setuid, setgid and sticky bits of mode on
// the entry name of dirfd, opened O_NOFOLLOW (a symlink is an error, its
// target never changed).
func fchmodAt(dirfd int, name string, mode fs.FileMode) error {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	m := uint32(mode.Perm())
	if mode&fs.ModeSetuid != 0 {
		m |= unix.S_ISUID
	}
	if mode&fs.ModeSetgid != 0 {
		m |= unix.S_ISGID
	}
	if mode&fs.ModeSticky != 0 {
		m |= unix.S_ISVTX
	}
	return unix.Fchmod(fd, m)
}
