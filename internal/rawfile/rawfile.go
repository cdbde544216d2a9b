// Package rawfile opens the files preflight reads without SQLite (a
// database's header, its -wal, -shm and -journal) so that whoever owns the
// directory cannot make the read hang or wander: the open never blocks (a
// FIFO or a device put in place of a file), and what was opened must be a
// regular file.
package rawfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrNotRegular is returned (wrapped in an *fs.PathError) when the path
// names something other than a regular file: a FIFO, a socket, a device or
// a directory.
var ErrNotRegular = errors.New("not a regular file")

// Open opens path read-only, non-blocking and close-on-exec (on Linux
// with O_NOATIME where the kernel allows it), and checks with fstat that
// it is a regular file; with nofollow set, a symlink at path's last
// component is refused (ELOOP) instead of followed. The descriptor is in
// blocking mode again when Open returns (regular files never block
// anyway).
func Open(path string, nofollow bool) (*os.File, error) {
	f, err := OpenAny(path, nofollow)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, TypeName(fi.Mode()))}
	}
	return f, nil
}

// OpenAny is Open without the check that path is a regular file, for a
// caller that says itself what else it found: the open still never
// blocks.
func OpenAny(path string, nofollow bool) (*os.File, error) { return open(path, nofollow) }

// TypeName names the file type of mode in a word: "regular", "directory",
// "symlink", "fifo", "socket", "device" or "irregular".
func TypeName(mode fs.FileMode) string {
	switch t := mode.Type(); {
	case t == 0:
		return "regular"
	case t&fs.ModeDir != 0:
		return "directory"
	case t&fs.ModeSymlink != 0:
		return "symlink"
	case t&fs.ModeNamedPipe != 0:
		return "fifo"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeDevice != 0:
		return "device"
	}
	return "irregular"
}

// OpenDir opens the directory path for listing, non-blocking and
// close-on-exec with O_DIRECTORY where the system has it: a FIFO or a
// device put in its place is an error (ENOTDIR), never a blocking open.
func OpenDir(path string) (*os.File, error) { return openDir(path) }
