package sqlitefile

import (
	"errors"
	"os"
	"syscall"
)

// openRead opens path read-only without blocking on a FIFO and, where the
// kernel allows it (the caller owns the file or has CAP_FOWNER), without
// updating its access time (open(2) O_NOATIME).
func openRead(path string) (*os.File, error) {
	const flags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	f, err := os.OpenFile(path, flags|syscall.O_NOATIME, 0)
	if errors.Is(err, syscall.EPERM) {
		f, err = os.OpenFile(path, flags, 0)
	}
	return f, err
}
