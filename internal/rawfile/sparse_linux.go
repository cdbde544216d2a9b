package rawfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Allocated returns the bytes fi's file holds on disk (st_blocks), which
// a file extended into a hole (truncate -s 2G) keeps small; fi's length
// when fi carries no Unix stat.
func Allocated(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}

// NextData returns the first region [start, end) at or after off, before
// size, that holds data in f (lseek SEEK_DATA, then SEEK_HOLE), io.EOF
// when none does. A filesystem without them (EINVAL) has one region, the
// rest of the file.
func NextData(f *os.File, off, size int64) (int64, int64, error) {
	fd := int(f.Fd())
	start, err := unix.Seek(fd, off, unix.SEEK_DATA)
	switch {
	case errors.Is(err, unix.ENXIO):
		return 0, 0, io.EOF
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP):
		return off, size, nil
	case err != nil:
		return 0, 0, &fs.PathError{Op: "lseek SEEK_DATA", Path: f.Name(), Err: err}
	}
	if start >= size {
		return 0, 0, io.EOF
	}
	end, err := unix.Seek(fd, start, unix.SEEK_HOLE)
	if err != nil {
		return 0, 0, &fs.PathError{Op: "lseek SEEK_HOLE", Path: f.Name(), Err: err}
	}
	return start, min(end, size), nil
}
