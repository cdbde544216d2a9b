package rawfile

import (
	"errors"
	"os"
	"syscall"
)

func open(path string, nofollow bool) (*os.File, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	if nofollow {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flags|syscall.O_NOATIME, 0)
	if errors.Is(err, syscall.EPERM) { // O_NOATIME on a file we do not own
		f, err = os.OpenFile(path, flags, 0)
	}
	return f, err
}

func openDir(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
}
