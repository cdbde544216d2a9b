package health

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"

	"github.com/preflight-sqlite/preflight/internal/dirfd"
)

// ProbeFS tests in dir what SQLite needs from a filesystem: it creates a
// file named FSProbePrefix+"<pid>-<random>" (O_EXCL|O_NOFOLLOW, mode 0600,
// relative to a descriptor of dir: internal/dirfd), truncates
// it to FSProbeSize bytes, maps it MAP_SHARED, writes a pattern through the
// mapping, msyncs, reads the pattern back with pread, unmaps, takes and
// releases a POSIX write lock (F_SETLK) on byte 0, and removes the file.
// The file is removed on every path (deferred); if the process is killed
// while probing, at most one file is left and CleanupFSProbes removes it
// later. ProbeFS writes nothing else.
//
// Linux only; see FSResult for what each field means. A fault while
// writing to the mapping (SIGBUS, e.g. no space to back the page) is
// caught and reported in MmapErr.
func ProbeFS(dir string) (res FSResult) {
	res.Dir = dir
	name, err := newProbeName()
	if err != nil {
		res.CreateErr = fmt.Sprintf("name probe file: %v", err)
		return res
	}
	d, err := dirfd.Open(dir)
	if err != nil {
		res.CreateErr = err.Error()
		return res
	}
	defer d.Close()
	f, err := d.Create(name, 0o600)
	if err != nil {
		res.CreateErr = err.Error()
		return res
	}
	defer func() {
		f.Close()
		if err := d.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			res.RemoveErr = err.Error()
		}
	}()
	res.Ran = true
	if err := probeMmap(f); err != nil {
		res.MmapErr = err.Error()
	}
	if err := probeLock(f); err != nil {
		res.LockErr = err.Error()
	}
	return res
}

func probeMmap(f *os.File) (err error) {
	if err := f.Truncate(FSProbeSize); err != nil {
		return fmt.Errorf("ftruncate to %d: %w", FSProbeSize, err)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, FSProbeSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mmap MAP_SHARED: %w", err)
	}
	defer func() {
		if uerr := unix.Munmap(data); uerr != nil && err == nil {
			err = fmt.Errorf("munmap: %w", uerr)
		}
	}()
	pattern := []byte("preflight fs probe: shared mapping works\x00")
	if err := writeMapped(data, pattern); err != nil {
		return err
	}
	if err := unix.Msync(data, unix.MS_SYNC); err != nil {
		return fmt.Errorf("msync: %w", err)
	}
	got := make([]byte, len(pattern))
	for _, off := range []int64{0, FSProbeSize - int64(len(pattern))} {
		if _, err := f.ReadAt(got, off); err != nil {
			return fmt.Errorf("read back at %d: %w", off, err)
		}
		if !bytes.Equal(got, pattern) {
			return fmt.Errorf("read back at %d: bytes written through the mapping not seen by read(2)", off)
		}
	}
	return nil
}

// writeMapped copies pattern to the start and end of data, turning a fault
// (SIGBUS) into an error instead of a crash.
func writeMapped(data, pattern []byte) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			err = fmt.Errorf("write through mapping: fault: %v", r)
		}
	}()
	copy(data, pattern)
	copy(data[len(data)-len(pattern):], pattern)
	return nil
}

func probeLock(f *os.File) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
		return fmt.Errorf("fcntl F_SETLK write lock: %w", err)
	}
	lk.Type = unix.F_UNLCK
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
		return fmt.Errorf("fcntl F_SETLK unlock: %w", err)
	}
	return nil
}

// processAlive reports whether a process with pid exists in this pid
// namespace (kill(pid, 0) does not fail with ESRCH).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
