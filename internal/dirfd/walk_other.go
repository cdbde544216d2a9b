//go:build unix && !linux

package dirfd

import "golang.org/x/sys/unix"

// walkFlag opens the directories on the way to the one Open returns.
const walkFlag = unix.O_RDONLY
