package health

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// lockDir opens the directory p (not following a symlink) and takes an
// exclusive flock(2) on it: waiting for it when wait is set, else failing
// at once when another open file description holds it. The lock lasts
// until the returned file is closed (or its process ends, however it
// ends), and is seen by every process that opens the same directory,
// across PID namespaces.
func lockDir(p string, wait bool) (*os.File, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	how := unix.LOCK_EX
	if !wait {
		how |= unix.LOCK_NB
	}
	for {
		err = unix.Flock(fd, how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "flock", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}

// ownedByMe reports that fi's owner is this process's effective user.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// freeBytes is the space, in bytes, an unprivileged user may still write
// on the filesystem of dir (statfs(2) f_bavail * f_bsize).
func freeBytes(dir string) (int64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
