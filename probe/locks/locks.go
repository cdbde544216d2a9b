// Package locks reports the POSIX advisory record locks that other
// processes hold on a SQLite database and its -shm, without acquiring any.
//
// SQLite's unix VFS locks bytes of the database file (rollback-mode
// locking, https://sqlite.org/lockingv3.html and os_unix.c) and of the -shm
// (WAL mode, https://sqlite.org/walformat.html and os_unix.c). A lock on
// those bytes is a live connection on this kernel, whatever its mount or
// PID namespace. [Probe] asks the kernel which locks conflict with a write
// lock on each byte range (fcntl(2) F_OFD_GETLK, or F_GETLK on kernels
// before 3.15); it never sets a lock. /proc/locks (proc(5)), matched by
// device and inode, completes that answer: the kernel names one
// conflicting lock per query, /proc/locks every holder of a range (each
// WAL reader), and the holders in another PID namespace when this /proc
// is an ancestor namespace's. [Roles] says what a holder's locks mean
// ("holds the write lock (WAL)"), [Watch] how long they were held.
//
// What a probe cannot see: an idle rollback-mode (DELETE, TRUNCATE,
// PERSIST) connection holds no lock between transactions; connections
// opened with nolock=1, unix-dotfile or another locking VFS; locks taken on
// another kernel (the host of a VM through virtiofs or 9p, another NFS
// client, unless the filesystem forwards them). No lock is not proof of no
// opener.
//
// The package states facts; it does not decide what they mean.
package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// ErrNotSupported means that the operation needs Linux's fcntl(2) lock
// queries.
var ErrNotSupported = errors.New("not supported on this operating system")

// ErrNoAnswer means that a lock query was not answered in time: the
// filesystem forwards locks to a server that does not answer (an NFS
// mount whose lock daemon is gone, a FUSE daemon that handles locks and
// is stuck).
var ErrNoAnswer = errors.New("did not answer")

// DefaultTimeout is ProbeWithin's and Watch's bound when theirs is 0.
const DefaultTimeout = 5 * time.Second

// ProbeWithin is Probe bounded by ctx and by timeout (DefaultTimeout when
// 0). When Probe has not returned by then, it returns an error wrapping
// ErrNoAnswer (or ctx's error) and a Result with Sure false; the query
// left behind keeps one thread blocked until the filesystem answers, and
// must not be followed by an SQLite connection to dbPath in this process
// (its closing descriptors would drop that connection's locks).
func ProbeWithin(ctx context.Context, dbPath string, timeout time.Duration) (Result, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	type answer struct {
		res Result
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		res, err := Probe(dbPath)
		ch <- answer{res, err}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	var err error
	select {
	case a := <-ch:
		return a.res, a.err
	case <-t.C:
		err = fmt.Errorf("query locks on %s: %w within %s (the filesystem forwards lock queries to a server that is stuck)", dbPath, ErrNoAnswer, timeout)
	case <-ctx.Done():
		err = fmt.Errorf("query locks on %s: %w", dbPath, context.Cause(ctx))
	}
	return Result{Locks: []Lock{}, Err: err.Error()}, err
}

// Lock is one lock held by another owner on one of SQLite's lock ranges.
type Lock struct {
	// File is "db" (the database file) or "shm" (its -shm).
	File string `json:"file"`
	// Name is the SQLite lock the range belongs to. On the database
	// (lockingv3.html, os_unix.c): "pending" (byte 0x40000000),
	// "reserved" (0x40000001), "shared" (0x40000002, 510 bytes). On the
	// -shm (walformat.html, os_unix.c): "write" (byte 120), "checkpoint"
	// (121), "recover" (122), "read-0".."read-4" (123..127) and "dms"
	// (128, the dead-man switch every open WAL connection holds a read
	// lock on).
	Name string `json:"name"`
	// Start and Len are the held bytes, in bytes from the start of the
	// file, clipped to the named range: the kernel merges adjacent locks of
	// one owner (an EXCLUSIVE rollback lock shows as one write lock over
	// 0x40000000..0x400001FF) and Probe reports the part in each range.
	Start int64 `json:"start"`
	Len   int64 `json:"len"`
	// Type is "read" (shared) or "write" (exclusive).
	Type string `json:"type"`
	// PID is the holder's process id in the caller's PID namespace, as the
	// kernel reports it in l_pid; 0 when unknown. Measured on Linux 6.18
	// with both F_OFD_GETLK and F_GETLK: a classic POSIX lock (what SQLite
	// takes) gives the owner's pid, or 0 when the owner is outside the
	// caller's PID namespace (OtherNamespace); an open file description
	// lock gives -1 (OFD).
	PID int `json:"pid,omitempty"`
	// OtherNamespace is true when the kernel reported l_pid 0 for a POSIX
	// lock: the holder is a process the caller's PID namespace cannot name
	// (another container, or the host seen from a container).
	OtherNamespace bool `json:"other_pid_namespace,omitempty"`
	// OFD is true when the lock is an open file description lock (kernel
	// l_pid -1), which has no owning process. SQLite does not take such
	// locks; something else holds this range.
	OFD bool `json:"ofd,omitempty"`
	// ProcPID is, for a lock of another PID namespace (OtherNamespace),
	// the holder's PID as /proc/locks lists it when this process's /proc
	// belongs to an ancestor namespace (the host's /proc seen from a
	// container, unshare --pid without --mount-proc): the holder is
	// /proc/ProcPID. 0 when /proc cannot name it: then the holder is
	// invisible from here.
	ProcPID int `json:"proc_pid,omitempty"`
}

// HolderPID is the PID under which the holder of l can be read in /proc
// (PID, else ProcPID); 0 when the holder cannot be named.
func (l Lock) HolderPID() int {
	if l.PID > 0 {
		return l.PID
	}
	return l.ProcPID
}

// Result is what Probe found.
type Result struct {
	// Locks lists the locks found, database ranges first, each file in
	// byte order. Never nil. Several readers holding the same bytes show
	// as one lock: the kernel reports one conflicting lock per query.
	Locks []Lock `json:"locks"`
	// Method is the fcntl(2) command used: "F_OFD_GETLK" (Linux 3.15 and
	// later) or "F_GETLK". Empty when nothing could be probed.
	Method string `json:"method"`
	// Sure is false when the database or an existing -shm could not be
	// opened read-only or queried; Err says why. A missing -shm is not a
	// failure: no WAL connection can be open without one.
	Sure bool `json:"sure"`
	// Err is the error text when Sure is false.
	Err string `json:"error,omitempty"`
}

// lockRange is one named range SQLite locks.
type lockRange struct {
	file, name string
	start, len int64
}

// Lock byte offsets of the -shm file (os_unix.c: UNIX_SHM_BASE = 120,
// UNIX_SHM_DMS = 128); the database's are sqlitefile.PendingByte and the
// rest.
const (
	shmBase = 120
	shmDMS  = shmBase + 8
)

// dbRanges and shmRanges are probed in this order.
var (
	dbRanges = []lockRange{
		{"db", "pending", sqlitefile.PendingByte, 1},
		{"db", "reserved", sqlitefile.ReservedByte, 1},
		{"db", "shared", sqlitefile.SharedFirst, sqlitefile.SharedSize},
	}
	shmRanges = []lockRange{
		{"shm", "write", shmBase, 1},
		{"shm", "checkpoint", shmBase + 1, 1},
		{"shm", "recover", shmBase + 2, 1},
		{"shm", "read-0", shmBase + 3, 1},
		{"shm", "read-1", shmBase + 4, 1},
		{"shm", "read-2", shmBase + 5, 1},
		{"shm", "read-3", shmBase + 6, 1},
		{"shm", "read-4", shmBase + 7, 1},
		{"shm", "dms", shmDMS, 1},
	}
)
