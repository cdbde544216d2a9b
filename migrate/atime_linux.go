package migrate

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// accessTime returns st's access time. Through nanoseconds, as the fields'
// width differs between 32- and 64-bit Linux (int32 on arm and 386).
func accessTime(st *syscall.Stat_t) (unix.Timespec, bool) {
	return unix.NsecToTimespec(st.Atim.Nano()), true
}
