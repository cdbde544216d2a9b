package migrate

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// accessTime is st's access time. The fields of syscall.Timespec and
// unix.Timespec have the width of the platform's time_t (int32 on
// linux/arm, int64 on 64-bit Linux): convert through nanoseconds.
func accessTime(st *syscall.Stat_t) (unix.Timespec, bool) {
	return unix.NsecToTimespec(syscall.TimespecToNsec(st.Atim)), true
}
