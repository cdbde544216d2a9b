package locks

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ProcLock is one line of /proc/locks (proc(5), fs/locks.c
// lock_get_status): a lock held, not a waiter ("->" lines are skipped).
type ProcLock struct {
	// Class is "POSIX", "OFDLCK", "FLOCK", "LEASE", ...
	Class string
	// Type is "READ" or "WRITE" (or another word for leases).
	Type string
	// PID is the owner as the PID namespace of this /proc mount sees it;
	// -1 for an OFD lock. The kernel leaves out locks whose owner that
	// namespace cannot name.
	PID int
	// Major, Minor and Inode identify the locked file (the device of its
	// superblock, as stat(2) st_dev, and st_ino).
	Major, Minor uint32
	Inode        uint64
	// Start is the first locked byte; End the last, -1 for EOF (to the end
	// of the file, however it grows).
	Start, End int64
}

// maxProcLocks bounds the lines ParseProcLocks reads: a host with more
// locks than this is not read further (the result says so).
const maxProcLocks = 1 << 16

// ParseProcLocks parses /proc/locks content from r. It returns the locks
// held (not the blocked waiters), whether every line was read (false when
// more than 65,536 lines were there), and the first read error. Lines of
// no known shape are skipped.
func ParseProcLocks(r io.Reader) (ls []ProcLock, complete bool, err error) {
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		if n++; n > maxProcLocks {
			return ls, false, nil
		}
		if l, ok := parseProcLock(sc.Text()); ok {
			ls = append(ls, l)
		}
	}
	if err := sc.Err(); err != nil {
		return ls, false, fmt.Errorf("read /proc/locks: %w", err)
	}
	return ls, true, nil
}

// parseProcLock parses "1: POSIX  ADVISORY  READ 21906 fe:00:9986383 128 128".
func parseProcLock(line string) (ProcLock, bool) {
	f := strings.Fields(line)
	if len(f) < 8 || !strings.HasSuffix(f[0], ":") || f[1] == "->" {
		return ProcLock{}, false
	}
	l := ProcLock{Class: f[1], Type: f[3]}
	pid, err := strconv.Atoi(f[4])
	if err != nil {
		return ProcLock{}, false
	}
	l.PID = pid
	dev := strings.Split(f[5], ":")
	if len(dev) != 3 {
		return ProcLock{}, false
	}
	maj, err1 := strconv.ParseUint(dev[0], 16, 32)
	min, err2 := strconv.ParseUint(dev[1], 16, 32)
	ino, err3 := strconv.ParseUint(dev[2], 10, 64)
	start, err4 := strconv.ParseInt(f[6], 10, 64)
	end, err5 := int64(-1), error(nil)
	if f[7] != "EOF" {
		end, err5 = strconv.ParseInt(f[7], 10, 64)
	}
	for _, e := range []error{err1, err2, err3, err4, err5} {
		if e != nil {
			return ProcLock{}, false
		}
	}
	if start < 0 || end != -1 && end < start {
		return ProcLock{}, false
	}
	l.Major, l.Minor, l.Inode, l.Start, l.End = uint32(maj), uint32(min), ino, start, end
	return l, true
}

// overlaps reports whether l covers any byte of [start, start+n).
func (l ProcLock) overlaps(start, n int64) bool {
	return l.Start < start+n && (l.End < 0 || l.End >= start)
}
