package rawfile

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// StatInRoot returns the device and inode of name (a path relative to
// root) resolved as if root were "/": its absolute symlinks and ".." stay
// inside root (openat2 RESOLVE_IN_ROOT, no magic links; Linux 5.6 and
// later), as the container whose root it is resolves them. The file is
// opened O_PATH only: its content is not read, so a FIFO cannot block.
func StatInRoot(root, name string) (dev, ino uint64, err error) {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0, fmt.Errorf("open root %s: %w", root, err)
	}
	defer unix.Close(rfd)
	fd, err := unix.Openat2(rfd, name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return 0, 0, fmt.Errorf("open %s in root %s: %w", name, root, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, 0, fmt.Errorf("stat %s in root %s: %w", name, root, err)
	}
	return uint64(st.Dev), st.Ino, nil //nolint:unconvert // Dev's type differs per GOARCH
}
