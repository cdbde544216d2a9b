package locks_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/preflight-sqlite/preflight/probe/locks"
)

// procLocksSample is /proc/locks as Linux 6.18 wrote it with sqlite3
// holding BEGIN IMMEDIATE on a WAL database, a blocked waiter, an OFD
// lock and a flock.
const procLocksSample = `1: POSIX  ADVISORY  WRITE 5726 fe:00:9986384 120 120
2: POSIX  ADVISORY  READ 5726 fe:00:9986384 123 123
3: POSIX  ADVISORY  READ 5726 fe:00:9986384 128 128
4: POSIX  ADVISORY  READ 5726 fe:00:9986383 1073741826 1073742335
4: -> POSIX  ADVISORY  WRITE 5730 fe:00:9986384 120 120
5: OFDLCK ADVISORY  READ -1 00:2f:12 0 EOF
6: FLOCK  ADVISORY  WRITE 812 00:19:1520 0 EOF
garbage line
`

func TestParseProcLocks(t *testing.T) {
	got, complete, err := locks.ParseProcLocks(strings.NewReader(procLocksSample))
	if err != nil || !complete {
		t.Fatalf("ParseProcLocks: complete %v, %v", complete, err)
	}
	want := []locks.ProcLock{
		{Class: "POSIX", Type: "WRITE", PID: 5726, Major: 0xfe, Minor: 0, Inode: 9986384, Start: 120, End: 120},
		{Class: "POSIX", Type: "READ", PID: 5726, Major: 0xfe, Minor: 0, Inode: 9986384, Start: 123, End: 123},
		{Class: "POSIX", Type: "READ", PID: 5726, Major: 0xfe, Minor: 0, Inode: 9986384, Start: 128, End: 128},
		{Class: "POSIX", Type: "READ", PID: 5726, Major: 0xfe, Minor: 0, Inode: 9986383, Start: 1073741826, End: 1073742335},
		{Class: "OFDLCK", Type: "READ", PID: -1, Major: 0, Minor: 0x2f, Inode: 12, Start: 0, End: -1},
		{Class: "FLOCK", Type: "WRITE", PID: 812, Major: 0, Minor: 0x19, Inode: 1520, Start: 0, End: -1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseProcLocks (-want +got):\n%s", diff)
	}
}

func FuzzParseProcLocks(f *testing.F) {
	f.Add(procLocksSample)
	f.Add("1: POSIX ADVISORY READ 1 zz:00:1 0 EOF\n")
	f.Add("1: POSIX ADVISORY READ 1 00:00:1 10 -5\n")
	f.Fuzz(func(t *testing.T, s string) {
		ls, _, err := locks.ParseProcLocks(strings.NewReader(s))
		if err != nil && len(s) < 60000 {
			t.Fatalf("ParseProcLocks(%q): %v", s, err)
		}
		for _, l := range ls {
			if l.Start < 0 || l.End != -1 && l.End < l.Start || l.Class == "" {
				t.Errorf("ParseProcLocks(%q) = %+v: a range that ends before it starts, or no class", s, l)
			}
		}
	})
}
