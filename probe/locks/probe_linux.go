package locks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maxPerRange bounds the queries spent on one range. SQLite locks each
// range whole, so one or two queries are the rule; more mean foreign locks
// chopping the range up, and Probe then fails (not sure) rather than
// report the rest of the range free.
const maxPerRange = 64

// Probe reports the POSIX record locks that other owners hold on SQLite's
// lock bytes in dbPath and, if it exists, dbPath+"-shm".
//
// WARNING: Probe opens and closes its own read-only descriptors of those
// files, and closing any descriptor of a file drops every POSIX lock the
// calling process holds on it (fcntl(2); https://sqlite.org/howtocorrupt.html
// section 2.2). Call Probe before this process opens any SQLite connection
// to dbPath, or from another process; never while one is open. Probe itself
// acquires nothing: it only queries (F_OFD_GETLK or F_GETLK with a write
// lock request, which the kernel answers without locking).
//
// Locks held by the calling process: F_GETLK never reports them; F_OFD_GETLK
// reports them with PID == os.Getpid() (the querying open file description
// is a different owner from the process).
//
// Probe returns an error, and a Result with Sure false and Err set to the
// same text, when the database or an existing -shm cannot be opened
// read-only or queried, or when more than 64 locks chop one of SQLite's
// lock ranges up (maxPerRange); the error wraps fs.ErrNotExist when the database
// does not exist. Locks found before a failure are kept.
func Probe(dbPath string) (Result, error) {
	res := Result{Locks: []Lock{}, Sure: true}
	fail := func(err error) (Result, error) {
		res.Sure = false
		res.Err = err.Error()
		return res, err
	}
	var p prober
	db, err := openRead(dbPath)
	if err != nil {
		return fail(fmt.Errorf("open database: %w", err))
	}
	err = p.probe(db, dbRanges, &res.Locks)
	ids := map[string]unix.Stat_t{}
	var st unix.Stat_t
	if unix.Fstat(db, &st) == nil {
		ids["db"] = st
	}
	unix.Close(db)
	res.Method = p.method()
	if err != nil {
		return fail(fmt.Errorf("query locks on %s: %w", dbPath, err))
	}

	shmPath := dbPath + "-shm"
	shm, err := openRead(shmPath)
	if errors.Is(err, fs.ErrNotExist) {
		res.Locks = fromProcLocks(res.Locks, ids, "/proc")
		return res, nil
	}
	if err != nil {
		return fail(fmt.Errorf("open -shm: %w", err))
	}
	err = p.probe(shm, shmRanges, &res.Locks)
	if unix.Fstat(shm, &st) == nil {
		ids["shm"] = st
	}
	unix.Close(shm)
	res.Method = p.method()
	if err != nil {
		return fail(fmt.Errorf("query locks on %s: %w", shmPath, err))
	}
	res.Locks = fromProcLocks(res.Locks, ids, "/proc")
	return res, nil
}

// fromProcLocks completes ls from procRoot/locks, which lists every
// POSIX lock (F_OFD_GETLK reports one conflicting lock per query, so of
// several readers of one byte only one):
//
//   - when procRoot is our PID namespace's (procRoot/self is our PID):
//     the other holders of each range, with their PIDs; the kernel leaves
//     out the locks of other namespaces, whose holders stay invisible;
//   - when procRoot belongs to an ancestor namespace (the host's /proc
//     seen from a container, unshare --pid without --mount-proc): the
//     holders of the locks of another namespace (OtherNamespace), as
//     ProcPID, one lock per holder. A holder in our namespace that shares
//     a read lock's bytes with such a lock is then listed under both PIDs.
//
// Files are matched by device and inode (ids, by File). ls is returned as
// it is when procRoot/locks cannot be read.
func fromProcLocks(ls []Lock, ids map[string]unix.Stat_t, procRoot string) []Lock {
	self, err := os.Readlink(procRoot + "/self")
	if err != nil {
		return ls
	}
	ours := self == strconv.Itoa(os.Getpid())
	if !ours && !slices.ContainsFunc(ls, func(l Lock) bool { return l.OtherNamespace }) {
		return ls
	}
	f, err := os.Open(procRoot + "/locks")
	if err != nil {
		return ls
	}
	pls, _, _ := ParseProcLocks(f)
	f.Close()
	on := func(pl ProcLock, file string) bool {
		st, ok := ids[file]
		return ok && pl.Class == "POSIX" && pl.PID > 0 && pl.Inode == st.Ino && pl.Major == unix.Major(st.Dev) && pl.Minor == unix.Minor(st.Dev)
	}
	if ours {
		out := ls
		for _, r := range append(slices.Clone(dbRanges), shmRanges...) {
			for _, pl := range pls {
				if !on(pl, r.file) || !pl.overlaps(r.start, r.len) {
					continue
				}
				end := r.start + r.len
				if pl.End >= 0 {
					end = min(end, pl.End+1)
				}
				l := Lock{File: r.file, Name: r.name, Start: max(pl.Start, r.start), Type: strings.ToLower(pl.Type), PID: pl.PID}
				l.Len = end - l.Start
				if !slices.ContainsFunc(out, func(o Lock) bool { return o.File == l.File && o.Name == l.Name && o.PID == l.PID }) {
					out = append(out, l)
				}
			}
		}
		return sortLocks(out)
	}
	var out []Lock
	for _, l := range ls {
		if !l.OtherNamespace {
			out = append(out, l)
			continue
		}
		found := false
		for _, pl := range pls {
			if !on(pl, l.File) || !strings.EqualFold(pl.Type, l.Type) || !pl.overlaps(l.Start, l.Len) {
				continue
			}
			named := l
			named.ProcPID = pl.PID
			if !slices.Contains(out, named) {
				out = append(out, named)
			}
			found = true
		}
		if !found {
			out = append(out, l)
		}
	}
	return out
}

// sortLocks puts ls in Result.Locks's order: database ranges first, each
// file in byte order (stable: the kernel's answer before /proc/locks's).
func sortLocks(ls []Lock) []Lock {
	// sort.SliceStable, not slices.SortStableFunc: a generic sort of a
	// struct type is its own copy of the sort in the binary.
	sort.SliceStable(ls, func(i, j int) bool {
		a, b := ls[i], ls[j]
		if a.File != b.File {
			return a.File == "db"
		}
		return a.Start < b.Start
	})
	return ls
}

// openRead opens path read-only, without following a FIFO's blocking open
// and without updating its access time where allowed.
func openRead(path string) (int, error) {
	const flags = unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOCTTY
	fd, err := unix.Open(path, flags|unix.O_NOATIME, 0)
	if err == unix.EPERM {
		fd, err = unix.Open(path, flags, 0)
	}
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

// prober queries locks, remembering whether F_OFD_GETLK works.
type prober struct {
	noOFD bool // F_OFD_GETLK failed with EINVAL: use F_GETLK
}

func (p *prober) method() string {
	if p.noOFD {
		return "F_GETLK"
	}
	return "F_OFD_GETLK"
}

// getlk asks which lock, if any, conflicts with a write lock on
// [start, start+n). It returns the conflicting lock as the kernel reports
// it, with Type F_UNLCK when there is none.
func (p *prober) getlk(fd int, start, n int64) (unix.Flock_t, error) {
	for {
		// F_OFD_GETLK requires l_pid 0 on input (EINVAL otherwise).
		lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: start, Len: n}
		cmd := unix.F_OFD_GETLK
		if p.noOFD {
			cmd = unix.F_GETLK
		}
		err := unix.FcntlFlock(uintptr(fd), cmd, &lk)
		if err == unix.EINVAL && !p.noOFD {
			p.noOFD = true // kernel before 3.15
			continue
		}
		if err == unix.EINTR {
			continue
		}
		return lk, err
	}
}

// probe finds the locks in each of ranges and appends them to out.
func (p *prober) probe(fd int, ranges []lockRange, out *[]Lock) error {
	for _, r := range ranges {
		budget := maxPerRange
		if err := p.find(fd, r, r.start, r.start+r.len, &budget, out); err != nil {
			return err
		}
	}
	return nil
}

// find appends the locks in [from, to) of range r, in byte order. The
// kernel returns one conflicting lock, not necessarily the lowest, so the
// parts before and after it are searched in turn.
func (p *prober) find(fd int, r lockRange, from, to int64, budget *int, out *[]Lock) error {
	if from >= to {
		return nil
	}
	if *budget <= 0 {
		// Not sure of the rest of the range: say so rather than that it
		// is free.
		return fmt.Errorf("more than %d locks chop up the %s lock range; stopped looking at byte %d", maxPerRange, r.name, from)
	}
	*budget--
	lk, err := p.getlk(fd, from, to-from)
	if err != nil {
		return err
	}
	if lk.Type == unix.F_UNLCK {
		return nil
	}
	start, end := lk.Start, to
	if lk.Len > 0 {
		end = lk.Start + lk.Len
	}
	start, end = max(start, from), min(end, to)
	if start >= end { // cannot happen; do not loop on it
		return nil
	}
	if err := p.find(fd, r, from, start, budget, out); err != nil {
		return err
	}
	l := Lock{File: r.file, Name: r.name, Start: start, Len: end - start, Type: "read"}
	if lk.Type == unix.F_WRLCK {
		l.Type = "write"
	}
	switch {
	case lk.Pid > 0:
		l.PID = int(lk.Pid)
	case lk.Pid == 0:
		l.OtherNamespace = true
	default:
		l.OFD = true
	}
	*out = append(*out, l)
	return p.find(fd, r, end, to, budget, out)
}
