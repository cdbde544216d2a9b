package migrate

import (
	"syscall"

	"golang.org/x/sys/unix"
)

func accessTime(st *syscall.Stat_t) (unix.Timespec, bool) {
	return unix.Timespec{Sec: int64(st.Atim.Sec), Nsec: int64(st.Atim.Nsec)}, true
}
