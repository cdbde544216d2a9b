//go:build !linux

package rawfile

import (
	"io"
	"io/fs"
	"os"
)

// Allocated is fi's length outside Linux.
func Allocated(fi fs.FileInfo) int64 { return fi.Size() }

// NextData outside Linux: the rest of the file is one region.
func NextData(_ *os.File, off, size int64) (int64, int64, error) {
	if off >= size {
		return 0, 0, io.EOF
	}
	return off, size, nil
}
