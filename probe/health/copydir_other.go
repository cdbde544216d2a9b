//go:build !linux

package health

import (
	"errors"
	"io/fs"
	"os"
)

// lockDir is not implemented outside Linux: the copy directory is opened
// but not locked, and RemoveStaleCopies (which needs the lock to fail for
// a live owner) removes nothing.
func lockDir(p string, wait bool) (*os.File, error) {
	if !wait {
		return nil, errors.New("directory locks are not supported on this system")
	}
	return os.Open(p)
}

// ownedByMe is false outside Linux: nothing is taken for a leftover.
func ownedByMe(fs.FileInfo) bool { return false }

// freeBytes is unknown outside Linux.
func freeBytes(string) (int64, bool) { return 0, false }
