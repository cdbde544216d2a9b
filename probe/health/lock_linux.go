package health

import (
	"github.com/preflight-sqlite/preflight/internal/rawfile"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"

	"golang.org/x/sys/unix"
)

// reservedLock asks the kernel with F_GETLK whether another process holds a
// lock on the RESERVED byte of path. It takes no lock. F_GETLK never reports
// the calling process's own locks.
func reservedLock(path string) LockState {
	f, err := rawfile.Open(path, false)
	if err != nil {
		return LockUnknown
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: sqlitefile.ReservedByte, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil {
		return LockUnknown
	}
	if lk.Type == unix.F_UNLCK {
		return LockFree
	}
	return LockHeld
}
