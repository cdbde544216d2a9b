//go:build unix

package salvage_test

import (
	"os"
	"syscall"
)

// maxRSSKiB is the peak resident set of the ended process p in KiB
// (getrusage's ru_maxrss; KiB on Linux).
func maxRSSKiB(p *os.ProcessState) (int64, bool) {
	ru, ok := p.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, false
	}
	return int64(ru.Maxrss), true
}
