package health

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/preflight-sqlite/preflight/internal/dirfd"
)

// FSProbePrefix starts the name of every file ProbeFS creates:
// ".preflight-fsprobe-<pid>-<16 hex digits>".
const FSProbePrefix = ".preflight-fsprobe-"

// FSProbeSize is the size in bytes ProbeFS gives its file before mapping
// it: one wal-index hash table, the usual size of a -shm file
// (https://sqlite.org/walformat.html).
const FSProbeSize = 32 << 10

// fsProbeStale is the age after which CleanupFSProbes removes a probe file
// whatever its pid: a probe lives for milliseconds.
const fsProbeStale = time.Minute

var reFSProbe = lazyRegexp(`^\.preflight-fsprobe-(\d+)-[0-9a-f]{16}$`)

// FSResult is what ProbeFS learned about a directory's filesystem. Each
// *Err field is empty when that step worked and holds the error text
// otherwise; a step that did not run because an earlier one failed is
// empty too, so read them with Ran.
type FSResult struct {
	// Dir is the directory probed.
	Dir string `json:"dir"`
	// Ran reports that the probe file was created and the mmap and lock
	// steps were attempted. False when CreateErr or Err is set.
	Ran bool `json:"ran"`
	// CreateErr is why the probe file could not be created (read-only
	// filesystem, permissions). SQLite needs to create -wal, -shm and
	// -journal files there too.
	CreateErr string `json:"create_error,omitempty"`
	// MmapErr is why the shared-memory steps failed: ftruncate to
	// FSProbeSize, mmap(MAP_SHARED, PROT_READ|PROT_WRITE), a write through
	// the mapping, msync(MS_SYNC), reading the bytes back with pread, or
	// munmap. WAL mode maps the -shm file this way
	// (https://sqlite.org/wal.html#noshm); a failure means WAL cannot work
	// in this directory.
	MmapErr string `json:"mmap_error,omitempty"`
	// LockErr is why taking (F_SETLK, F_WRLCK on byte 0) or releasing a
	// POSIX record lock failed. SQLite's unix VFS locks with these in both
	// journal modes (https://sqlite.org/lockingv3.html).
	LockErr string `json:"lock_error,omitempty"`
	// RemoveErr is why the probe file could not be removed; it is then
	// left for CleanupFSProbes.
	RemoveErr string `json:"remove_error,omitempty"`
	// Err is set when the probe cannot run at all (unsupported GOOS).
	Err string `json:"error,omitempty"`
}

// newProbeName returns a fresh probe file name for this process.
func newProbeName() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s%d-%s", FSProbePrefix, os.Getpid(), hex.EncodeToString(b[:])), nil
}

// CleanupFSProbes removes probe files left in dir by a ProbeFS that was
// killed before its deferred removal ran; a kill leaves at most one file
// per run. It removes a regular file named like FSProbePrefix+"<pid>-<hex>"
// when it is older than one minute, or when its pid is not this process
// and no process with that pid is alive here (kill(pid, 0) fails with
// ESRCH; Unix only). The age rule handles pid reuse: a container's entry
// point is often pid 1 on every start. It does not follow symlinks or
// descend into subdirectories; each file is removed with unlinkat relative
// to a descriptor of dir (internal/dirfd).
//
// It returns the paths removed and the first error from reading dir or
// removing a file (other than the file having gone already).
func CleanupFSProbes(dir string) (removed []string, err error) {
	d, err := dirfd.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("clean up fs probes: %w", err)
	}
	defer d.Close()
	names, err := d.ReadDirNames()
	if err != nil {
		return nil, fmt.Errorf("clean up fs probes: %w", err)
	}
	sort.Strings(names)
	var first error
	for _, name := range names {
		m := reFSProbe().FindStringSubmatch(name)
		if m == nil {
			continue
		}
		fi, err := d.Lstat(name)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		pid, err := strconv.Atoi(m[1])
		if err != nil {
			continue
		}
		stale := time.Since(fi.ModTime()) > fsProbeStale
		if !stale && (pid == os.Getpid() || processAlive(pid)) {
			continue
		}
		if err := d.Remove(name); err != nil {
			if !errors.Is(err, fs.ErrNotExist) && first == nil {
				first = fmt.Errorf("clean up fs probes: %w", err)
			}
			continue
		}
		removed = append(removed, filepath.Join(dir, name))
	}
	return removed, first
}
