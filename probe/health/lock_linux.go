package health

import (
	"github.com/preflight-sqlite/preflight/internal/rawfile"

	"golang.org/x/sys/unix"
)

// reservedByte is RESERVED_BYTE of SQLite's unix VFS: PENDING_BYTE
// (0x40000000) + 1 (os_unix.c, https://sqlite.org/lockingv3.html).
const reservedByte = 0x40000001

// reservedLock asks the kernel with F_GETLK whether another process holds a
// lock on the RESERVED byte of path. It takes no lock. F_GETLK never reports
// the calling process's own locks.
func reservedLock(path string) LockState {
	f, err := rawfile.Open(path, false)
	if err != nil {
		return LockUnknown
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: reservedByte, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil {
		return LockUnknown
	}
	if lk.Type == unix.F_UNLCK {
		return LockFree
	}
	return LockHeld
}
