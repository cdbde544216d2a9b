// Package procfs finds the processes on this kernel that have a SQLite
// database, its -wal or its -shm open, by reading /proc as described in
// proc(5):
//
//   - /proc/PID/fd/N: each open descriptor. Scan stats the link (which
//     follows to the open file; statx(2) with AT_STATX_DONT_SYNC, answered
//     from the kernel's inode, so a file on a stuck FUSE or NFS mount does
//     not block) and compares device and inode numbers with
//     the targets, never paths, so a process that reached the file through
//     another path (bind mount, hard link, symlink, another container's
//     mount namespace) is still matched.
//   - /proc/PID/maps: each mapped file, with its device (major:minor) and
//     inode. SQLite maps the -shm (and, with PRAGMA mmap_size, the
//     database); a mapping outlives the descriptor it was made from.
//
// Scan also reports sidecars that a process holds but that are no longer
// the file at the sidecar's path: deleted, or replaced by a rename (see
// [Unlinked]). Such a process writes into a file nobody else will read.
//
// What Scan cannot see: processes in other PID namespaces that this /proc
// does not list (other containers, the host from inside a container),
// processes on other kernels (the host of a VM, other NFS clients), and
// processes whose /proc entries this process may not read (counted in
// [Result.Denied]; run as root, or with CAP_SYS_PTRACE, to read them all).
//
// The package states facts; it does not decide whether a holder is a
// problem. Scan works on Linux only; elsewhere it returns an error wrapping
// [ErrNotSupported].
package procfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// ErrNotSupported means that the operation needs Linux's /proc.
var ErrNotSupported = errors.New("not supported on this operating system")

// FileID identifies a file by device and inode number, as stat(2) reports
// them (st_dev in the kernel's encoding, st_ino). The zero FileID means "no
// such file".
type FileID struct{ Dev, Ino uint64 }

// IsZero reports whether id is the zero FileID.
func (id FileID) IsZero() bool { return id == FileID{} }

// Target is a database to look for, with the identity of its files.
type Target struct {
	// Path is the database path as given to [TargetFor], made absolute. It
	// names the database in [Holder.Target] and [Unlinked.Target], and is
	// the base of the sidecar paths Path+"-wal" and Path+"-shm".
	Path string
	// DB, WAL and SHM identify the database, Path+"-wal" and Path+"-shm".
	// Each is the zero FileID when that file does not exist.
	DB, WAL, SHM FileID
}

// TargetFor stats dbPath, dbPath+"-wal" and dbPath+"-shm" (following
// symlinks, as SQLite does) and returns their identities. A missing file
// gives a zero FileID and no error; any other stat failure is returned.
// The path is made absolute with filepath.Abs.
func TargetFor(dbPath string) (Target, error) {
	abs, err := filepath.Abs(dbPath)
	if err != nil {
		return Target{}, fmt.Errorf("resolve %s: %w", dbPath, err)
	}
	t := Target{Path: abs}
	for _, f := range []struct {
		suffix string
		id     *FileID
	}{{"", &t.DB}, {"-wal", &t.WAL}, {"-shm", &t.SHM}} {
		fi, err := os.Stat(abs + f.suffix)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return Target{}, fmt.Errorf("stat %s: %w", abs+f.suffix, err)
		}
		*f.id = fileID(fi)
	}
	return t, nil
}

// Options tunes Scan. The zero value scans /proc and excludes only the
// calling process.
type Options struct {
	// ProcRoot is where procfs is mounted. Empty means "/proc".
	ProcRoot string
	// ExcludePIDs lists processes to leave out, as seen in ProcRoot, in
	// addition to the calling process (os.Getpid()), which is always left
	// out.
	ExcludePIDs []int
	// Timeout bounds how long the /proc entries of any one process may
	// take to read, and the stat of the targets' directories: a process
	// whose reads have not answered by then (a read that waits on a
	// filesystem that does not answer, a process stuck with its memory
	// map locked) is left behind and counted in [Result.Stalled]; the
	// scan goes on with the others. Zero means [DefaultTimeout].
	Timeout time.Duration
}

// DefaultTimeout is the Options.Timeout used when it is zero.
const DefaultTimeout = 5 * time.Second

// File kinds in [Holder.File] and [Unlinked.File].
const (
	FileDB  = "db"
	FileWAL = "wal"
	FileSHM = "shm"
)

// Holder is one way one process holds one of a target's files.
type Holder struct {
	// PID is the process id as seen in the scanned /proc.
	PID int `json:"pid"`
	// Comm is /proc/PID/comm: the command name, at most 15 bytes.
	Comm string `json:"comm"`
	// Cmdline is /proc/PID/cmdline with NULs turned into spaces, cut to
	// about 200 bytes (then ending in "..."). Empty for kernel threads and
	// zombies.
	Cmdline string `json:"cmdline"`
	// User is the name of the process's real uid (/proc/PID/status "Uid:"),
	// or the uid in decimal when it has no name here.
	User string `json:"user"`
	// Target is the database path ([Target.Path]).
	Target string `json:"target"`
	// File is which file: "db", "wal" or "shm".
	File string `json:"file"`
	// How is "fd N" for open descriptor N or "mmap" for a mapping (one
	// entry per file however many mappings). A process usually holds a
	// -shm both ways.
	How string `json:"how"`
}

// Unlinked is a sidecar (or database) file that a process holds but that is
// not the file now at its path: it was deleted, or another file was renamed
// over it, or the process reached the database through a hard link in
// another directory and so uses other sidecars. A process in this state
// writes to a WAL (or reads a wal-index) that other openers of the database
// never see.
//
// Scan reports a held file as Unlinked when its dev/ino differ from the
// target's (or the target file no longer exists) and its /proc link text,
// without any " (deleted)" suffix, is either
//   - the target's Path (+"-wal"/"-shm"), and the process is in the same
//     mount namespace as the caller, so paths compare; or
//   - the link text of the process's own descriptor of the target database
//     (matched by dev/ino) plus "-wal" or "-shm", in any mount namespace.
//
// The " (deleted)" suffix alone is never taken as evidence: some
// filesystems (ZFS) show live files that way.
type Unlinked struct {
	PID    int    `json:"pid"`
	Comm   string `json:"comm"`
	Target string `json:"target"` // database path ([Target.Path])
	File   string `json:"file"`   // "wal", "shm", or "db" for a replaced database
	Link   string `json:"link"`   // the /proc link or maps path text, as read
	How    string `json:"how"`    // "fd N" or "mmap"
}

// Result is what Scan found.
type Result struct {
	// Holders lists every (process, file, how) found, sorted by PID, target,
	// file and how. Never nil.
	Holders []Holder `json:"holders"`
	// Unlinked lists held sidecars that are not the file at their path,
	// sorted like Holders. Never nil.
	Unlinked []Unlinked `json:"unlinked_sidecars"`
	// Scanned counts the processes examined (including denied ones, not
	// counting those that exited during the scan or were excluded).
	Scanned int `json:"processes_scanned"`
	// Denied counts processes whose fd directory, a descriptor or maps could
	// not be read (EACCES, EPERM, or any error other than the process
	// exiting). Any such process might hold a target.
	Denied int `json:"processes_denied"`
	// DeniedNamed names processes counted in Denied, sorted by PID: at
	// most MaxDeniedNamed of them, so a host full of unreadable processes
	// does not grow it without bound. Empty when Denied is 0.
	DeniedNamed []Process `json:"processes_denied_named,omitempty"`
	// Stalled counts processes whose /proc entries did not answer within
	// Options.Timeout, and those left unread because MaxStalled had
	// already not answered (they are counted in Scanned too). Any such
	// process might hold a target. A read that never answers keeps its
	// goroutine and thread blocked until the calling process exits.
	Stalled int `json:"processes_stalled,omitempty"`
	// StalledNamed names the processes that did not answer, sorted by
	// PID (their comm when it could be read within 100 ms): at most
	// MaxStalled.
	StalledNamed []Process `json:"processes_stalled_named,omitempty"`
	// Sure is true when Denied and Stalled are 0: every listed process
	// was read in full. It does not cover processes this /proc does not
	// list.
	Sure bool `json:"sure"`
}

// MaxDeniedNamed bounds Result.DeniedNamed.
const MaxDeniedNamed = 8

// MaxStalled bounds the processes one Scan waits on past Options.Timeout:
// once that many have not answered, the processes not yet read are left
// unread (counted in Result.Stalled), so that a host where every read
// blocks costs a bounded number of threads and about one Timeout.
const MaxStalled = 8

// Process names a process: its PID in the scanned /proc and its comm
// (/proc/PID/comm, empty when that could not be read either).
type Process struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm,omitempty"`
}

// nameDenied records pid, a process counted in Denied, while fewer than
// MaxDeniedNamed are named.
func (r *Result) nameDenied(pid int, comm string) {
	if len(r.DeniedNamed) < MaxDeniedNamed {
		r.DeniedNamed = append(r.DeniedNamed, Process{PID: pid, Comm: comm})
	}
}

// Described is what /proc says about one process: for a lock holder
// that the scan did not reach through its descriptors (a PID that
// /proc/locks names in another PID namespace).
type Described struct {
	// PID, Comm, Cmdline and User are as in [Holder].
	PID     int    `json:"pid"`
	Comm    string `json:"comm"`
	Cmdline string `json:"cmdline"`
	User    string `json:"user"`
	// Cgroup is /proc/PID/cgroup (cgroups(7)), at most 4 KiB: the
	// container runtime's scope names the container.
	Cgroup string `json:"-"`
}
