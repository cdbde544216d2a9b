//go:build unix && !linux

package sqlitefile

import (
	"os"
	"syscall"
)

// openRead opens path read-only without blocking on a FIFO.
func openRead(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
}
