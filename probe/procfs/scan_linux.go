package procfs

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/preflight-sqlite/preflight/internal/fsbound"
)

// maxCmdline is the length Holder.Cmdline is cut to.
const maxCmdline = 200

// Scan lists the processes in opts.ProcRoot (default /proc) that hold any
// file of targets open (/proc/PID/fd) or mapped (/proc/PID/maps), matched by
// device and inode, and the sidecars they hold that are no longer the file
// at their path ([Unlinked]). Targets with all-zero FileIDs match nothing by
// inode but can still yield Unlinked entries.
//
// Scan acquires nothing and changes nothing; it only reads /proc. It reads
// each process's fd directory; its maps only when it has a descriptor on a
// target's filesystem (SQLite maps -shm through a descriptor it keeps open
// while mapped, so a process with no file open there maps no target); comm,
// cmdline and status only for processes that hold something. Processes that exit during the scan
// (ENOENT, ESRCH) are skipped. Processes whose fd directory, a descriptor
// or maps fails for any other reason (EACCES and EPERM in practice: a
// non-dumpable process, no CAP_SYS_PTRACE, another user's process) are
// counted in Result.Denied and make Result.Sure false. Threads
// are not scanned separately: a thread with a private descriptor table
// (clone(2) without CLONE_FILES) is not seen.
//
// A descriptor is stat'ed with statx(2) AT_STATX_DONT_SYNC, which the
// kernel answers from its inode cache without asking the file's
// filesystem (FUSE, NFS), so a file held open on a mount whose daemon or
// server is stuck does not block the scan. Any other read that blocks
// (the targets' directories, a process's maps or cmdline) is bounded by
// opts.Timeout per process: past it the process is counted in
// Result.Stalled, and Result.Sure is false.
//
// Compute targets with TargetFor just before calling Scan: Scan re-stats a
// sidecar path before calling a held file Unlinked, but a database replaced
// in between would not match by inode.
//
// Cost: one open of /proc/PID and its fd directory per process (and maps,
// as above), one statx per descriptor, and a readlink only for regular files on a target's
// device that did not match by inode (about 70 us of CPU per process on a
// 2-core Linux 6.18 VM; see BenchmarkScan).
//
// Scan returns an error when ProcRoot cannot be listed or the targets'
// directories do not answer within opts.Timeout, or ctx's error when ctx
// is done before the scan finishes; the Result is then empty.
func Scan(ctx context.Context, targets []Target, opts Options) (Result, error) {
	root := opts.ProcRoot
	if root == "" {
		root = "/proc"
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	pids, err := listPIDs(root, opts.ExcludePIDs)
	if err != nil {
		return Result{}, err
	}
	s, ok := fsbound.Within(ctx, timeout, func() *scanner { return newScanner(root, targets) })
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if !ok {
		return Result{}, fmt.Errorf("scan processes: the databases' directories %w a stat within %s", fsbound.ErrNoAnswer, timeout)
	}
	p := s.scanAll(ctx, pids, timeout)
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	res := s.collect(p)
	s.nameStalled(ctx, &res, p.stalled)
	sortResult(&res)
	return res, nil
}

// listPIDs returns the process IDs listed in root, without this process
// and exclude, in directory order.
func listPIDs(root string, exclude []int) ([]int, error) {
	d, err := os.Open(root)
	if err != nil {
		return nil, fmt.Errorf("read process list: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("read process list: %w", err)
	}
	skip := map[int]bool{os.Getpid(): true}
	for _, p := range exclude {
		skip[p] = true
	}
	pids := make([]int, 0, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid <= 0 || skip[pid] {
			continue
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// pool is the state of one scanAll: which pids were handed out, what
// came back, and the workers. Every field but s and pids is guarded by mu.
type pool struct {
	s    *scanner
	pids []int

	mu      sync.Mutex
	next    int          // index of the next pid to hand out
	stop    bool         // hand out no more
	results []procResult // by index into pids, valid where done
	done    []bool
	workers []*worker
	running int   // workers not finished and not abandoned
	stalled []int // pids abandoned past the timeout, in that order
	wake    chan struct{}
}

// worker is one scanning goroutine: i is the index of the pid it is
// reading (-1 between pids) since when; abandoned once that took longer
// than the timeout (its result, if it ever comes, is dropped).
type worker struct {
	i         int
	since     time.Time
	abandoned bool
}

// scanAll runs scanPID on every pid, on up to 8 workers (one per 64
// processes, at most GOMAXPROCS), and returns the pool with the results
// in pids' order. A worker whose pid has not answered within timeout is
// abandoned (its pid counted stalled) and replaced, up to MaxStalled
// times; past that, or when ctx ends, the pids not yet handed out are left
// unread.
func (s *scanner) scanAll(ctx context.Context, pids []int, timeout time.Duration) *pool {
	p := &pool{s: s, pids: pids, results: make([]procResult, len(pids)), done: make([]bool, len(pids)), wake: make(chan struct{}, 1)}
	p.mu.Lock()
	for range min(runtime.GOMAXPROCS(0), 8, max(1, len(pids)/64)) {
		p.startWorker()
	}
	p.mu.Unlock()
	tick := time.NewTicker(max(timeout/8, 10*time.Millisecond))
	defer tick.Stop()
	for {
		p.mu.Lock()
		running := p.running
		p.mu.Unlock()
		if running == 0 {
			return p
		}
		select {
		case <-p.wake:
		case now := <-tick.C:
			p.abandonStalled(now, timeout)
		case <-ctx.Done():
			p.mu.Lock()
			p.stop = true
			for _, w := range p.workers {
				w.abandoned = true
			}
			p.mu.Unlock()
			return p
		}
	}
}

// startWorker starts one more worker; p.mu must be held.
func (p *pool) startWorker() {
	w := &worker{i: -1}
	p.workers = append(p.workers, w)
	p.running++
	go p.work(w)
}

// work scans pids until none is left, p.stop is set, or w is abandoned.
func (p *pool) work(w *worker) {
	var b buffers
	for {
		p.mu.Lock()
		if w.abandoned {
			p.mu.Unlock()
			return
		}
		if p.stop || p.next >= len(p.pids) {
			p.running--
			p.mu.Unlock()
			select {
			case p.wake <- struct{}{}:
			default:
			}
			return
		}
		i := p.next
		p.next++
		w.i, w.since = i, time.Now()
		p.mu.Unlock()
		r := p.s.scanPID(p.pids[i], &b)
		p.mu.Lock()
		if w.abandoned {
			p.mu.Unlock()
			return
		}
		p.results[i], p.done[i], w.i = r, true, -1
		p.mu.Unlock()
	}
}

// abandonStalled gives up on every worker whose pid has taken longer than
// timeout at now, and starts a worker in its place while fewer than
// MaxStalled pids have stalled (else stops handing out pids).
func (p *pool) abandonStalled(now time.Time, timeout time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.workers {
		if w.abandoned || w.i < 0 || now.Sub(w.since) < timeout {
			continue
		}
		w.abandoned = true
		p.running--
		p.stalled = append(p.stalled, p.pids[w.i])
		if len(p.stalled) < MaxStalled {
			p.startWorker()
		} else {
			p.stop = true
		}
	}
}

// collect counts the processes of p and names the holders and unlinked
// files they hold (comm, cmdline, user), leaving out a process that exited
// before it could be named. Processes stalled or left unread count in
// Scanned and Stalled.
func (s *scanner) collect(p *pool) Result {
	res := Result{Holders: []Holder{}, Unlinked: []Unlinked{}}
	users := map[string]string{}
	p.mu.Lock()
	defer p.mu.Unlock()
	res.Stalled = len(p.pids) - p.next + len(p.stalled)
	res.Scanned = res.Stalled
	for i, r := range p.results {
		if !p.done[i] || r.gone {
			continue
		}
		res.Scanned++
		if r.denied {
			res.Denied++
		}
		if len(r.holders) == 0 && len(r.unlinked) == 0 {
			if r.denied {
				res.nameDenied(r.pid, r.comm)
			}
			continue
		}
		if r.denied {
			res.nameDenied(r.pid, r.comm)
		}
		name := userName(users, r.uid)
		for _, h := range r.holders {
			h.Comm, h.Cmdline, h.User = r.comm, r.cmdline, name
			res.Holders = append(res.Holders, h)
		}
		for _, u := range r.unlinked {
			u.Comm = r.comm
			res.Unlinked = append(res.Unlinked, u)
		}
	}
	res.Sure = res.Denied == 0 && res.Stalled == 0
	return res
}

// nameStalled names the stalled pids in res.StalledNamed, each with its
// comm when that answers within 100 ms.
func (s *scanner) nameStalled(ctx context.Context, res *Result, pids []int) {
	for _, pid := range pids {
		comm, _ := fsbound.Within(ctx, 100*time.Millisecond, func() string { return s.comm(pid) })
		res.StalledNamed = append(res.StalledNamed, Process{PID: pid, Comm: comm})
	}
}

// userName returns the user name of uid (the uid itself when it has
// none), looked up once per uid through cache.
func userName(cache map[string]string, uid string) string {
	if name, ok := cache[uid]; ok {
		return name
	}
	name := uid
	if u, err := user.LookupId(uid); err == nil {
		name = u.Username
	}
	cache[uid] = name
	return name
}

// sortResult puts res's lists in a stable order: by PID, then target,
// file and how.
func sortResult(res *Result) {
	// sort.Slice, not slices.SortFunc: an instance of the generic sort
	// for each of these structs costs 8 to 18 KB of binary.
	sort.Slice(res.DeniedNamed, func(i, j int) bool { return res.DeniedNamed[i].PID < res.DeniedNamed[j].PID })
	sort.Slice(res.StalledNamed, func(i, j int) bool { return res.StalledNamed[i].PID < res.StalledNamed[j].PID })
	sort.Slice(res.Holders, func(i, j int) bool {
		a, b := &res.Holders[i], &res.Holders[j]
		return compareKey(a.PID, a.Target, a.File, a.How, b.PID, b.Target, b.File, b.How) < 0
	})
	sort.Slice(res.Unlinked, func(i, j int) bool {
		a, b := &res.Unlinked[i], &res.Unlinked[j]
		return compareKey(a.PID, a.Target, a.File, a.How, b.PID, b.Target, b.File, b.How) < 0
	})
}

// compareKey orders holders and unlinked files by PID, target, file and
// how.
func compareKey(pa int, ta, fa, ha string, pb int, tb, fb, hb string) int {
	return cmp.Or(cmp.Compare(pa, pb), cmp.Compare(ta, tb), cmp.Compare(fa, fb), compareHow(ha, hb))
}

// compareHow orders "fd 3" before "fd 10" before "mmap".
func compareHow(a, b string) int {
	na, ea := strconv.Atoi(strings.TrimPrefix(a, "fd "))
	nb, eb := strconv.Atoi(strings.TrimPrefix(b, "fd "))
	if ea == nil && eb == nil {
		return cmp.Compare(na, nb)
	}
	return cmp.Compare(a, b)
}

// ref names one file of one target.
type ref struct {
	target int // index into scanner.targets
	file   string
}

// scanner holds what Scan matches against; it is read-only during the scan
// and shared by the workers.
type scanner struct {
	root    string
	targets []Target
	byID    map[FileID]ref
	// byPath maps the caller's view of each target file's path (Path and
	// its symlink-resolved form, each with "", "-wal", "-shm") to the file.
	byPath map[string]ref
	// devs holds the devices of the targets' files and directories: only
	// descriptors on these devices are read-linked in search of Unlinked.
	devs  map[uint64]bool
	mntNS string // our mount namespace link, "" when unreadable
}

func newScanner(root string, targets []Target) *scanner {
	s := &scanner{
		root:    root,
		targets: targets,
		byID:    map[FileID]ref{},
		byPath:  map[string]ref{},
		devs:    map[uint64]bool{},
	}
	s.mntNS, _ = os.Readlink(filepath.Join(root, "self/ns/mnt"))
	for i, t := range targets {
		files := []struct {
			name string
			id   FileID
		}{{FileDB, t.DB}, {FileWAL, t.WAL}, {FileSHM, t.SHM}}
		for _, f := range files {
			if !f.id.IsZero() {
				s.byID[f.id] = ref{i, f.name}
				s.devs[f.id.Dev] = true
			}
		}
		if t.Path == "" {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(filepath.Dir(t.Path), &st) == nil {
			s.devs[st.Dev] = true
		}
		paths := []string{t.Path}
		if r, err := filepath.EvalSymlinks(t.Path); err == nil && r != t.Path {
			paths = append(paths, r)
		}
		for _, p := range paths {
			s.byPath[p] = ref{i, FileDB}
			s.byPath[p+"-wal"] = ref{i, FileWAL}
			s.byPath[p+"-shm"] = ref{i, FileSHM}
		}
	}
	return s
}

func (s *scanner) current(r ref) FileID {
	t := s.targets[r.target]
	switch r.file {
	case FileDB:
		return t.DB
	case FileWAL:
		return t.WAL
	}
	return t.SHM
}

// now stats the target file of m at the time of the call, so that a sidecar
// recreated between TargetFor and Scan (SQLite deletes the -wal and -shm
// when the last connection closes) is not mistaken for a replaced one.
func (s *scanner) now(m ref) FileID {
	p := s.targets[m.target].Path
	switch m.file {
	case FileWAL:
		p += "-wal"
	case FileSHM:
		p += "-shm"
	}
	var st unix.Stat_t
	if unix.Stat(p, &st) != nil {
		return FileID{}
	}
	return FileID{Dev: st.Dev, Ino: st.Ino}
}

// procResult is what scanPID found in one process, and its comm (for
// one that holds something or was denied), cmdline and uid (for one that
// holds something).
type procResult struct {
	pid                int
	gone               bool // exited during the scan
	denied             bool // something could not be read
	holders            []Holder
	unlinked           []Unlinked
	comm, cmdline, uid string
}

// candidate is a held file that did not match a target by inode but lives
// on a target's device: it may be an unlinked sidecar.
type candidate struct {
	link string
	id   FileID
	how  string
}

// buffers are one worker's reusable buffers.
type buffers struct {
	dirent []byte   // getdents(2) output
	names  []string // fd names
	maps   []byte   // /proc/PID/maps text
}

// scanPID reads /proc/PID/fd and /proc/PID/maps, and names the process
// when it holds something (comm, cmdline, status) or could not be read
// (comm). It works with raw *at
// system calls relative to a descriptor of /proc/PID: os.Open's extra
// fstat, and walking /proc/PID again for every descriptor, cost more than
// the rest of the scan.
func (s *scanner) scanPID(pid int, b *buffers) procResult {
	r := s.readPID(pid, b)
	switch {
	case r.gone:
	case len(r.holders) > 0 || len(r.unlinked) > 0:
		var ok bool
		if r.comm, r.cmdline, r.uid, ok = s.describe(pid); !ok {
			r.gone = true // exited before we could name it
		}
	case r.denied:
		r.comm = s.comm(pid)
	}
	return r
}

// readPID is scanPID without naming the process.
func (s *scanner) readPID(pid int, b *buffers) procResult {
	r := procResult{pid: pid}
	dirfd, err := unix.Open(s.root+"/"+strconv.Itoa(pid), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		// Exited, or (any other error) could not be read.
		r.gone = gone(err)
		r.denied = !r.gone
		return r
	}
	defer unix.Close(dirfd)

	fdDir, fds, err := readDirNames(dirfd, "fd", b)
	switch {
	case gone(err):
		r.gone = true
		return r
	case err != nil:
		r.denied = true
	}
	cands, dbLinks, onDevice := s.scanFDs(&r, fdDir, fds)
	if fdDir >= 0 {
		unix.Close(fdDir)
	}

	if !onDevice && len(r.holders) == 0 {
		return r
	}
	b.maps, err = readFileAt(dirfd, "maps", b.maps)
	switch {
	case gone(err):
		r.gone = true
		return r
	case err != nil:
		r.denied = true
	}
	cands = s.scanMaps(&r, b.maps, cands, dbLinks)

	if len(cands) > 0 {
		r.unlinked = s.unlinked(pid, dirfd, cands, dbLinks)
	}
	return r
}

// scanFDs stats each descriptor fds of directory fdDir (/proc/PID/fd) and
// adds those of a target file to r's holders. It returns the regular files
// on a target's device that matched no target (candidates for Unlinked),
// the process's links to a target database, and onDevice: whether the
// process has a descriptor on a target's filesystem (or its descriptors
// could not all be read). Only then are its maps read: SQLite maps -shm
// through a descriptor it keeps open while mapped, so a process with no
// file open on that filesystem maps none of the targets, and reading every
// process's maps dominates the scan.
func (s *scanner) scanFDs(r *procResult, fdDir int, fds []string) (cands []candidate, dbLinks []dbLink, onDevice bool) {
	onDevice = r.denied
	for _, fd := range fds {
		id, mode, err := statFD(fdDir, fd)
		if err != nil {
			if !gone(err) {
				r.denied = true
				onDevice = true
			}
			continue // closed meanwhile
		}
		if s.devs[id.Dev] {
			onDevice = true
		}
		if m, ok := s.byID[id]; ok {
			r.holders = append(r.holders, Holder{
				PID: r.pid, Target: s.targets[m.target].Path, File: m.file, How: "fd " + fd,
			})
			if m.file == FileDB {
				if l, err := readlinkat(fdDir, fd); err == nil {
					dbLinks = append(dbLinks, dbLink{strings.TrimSuffix(l, " (deleted)"), m.target})
				}
			}
			continue
		}
		if mode&unix.S_IFMT != unix.S_IFREG || !s.devs[id.Dev] {
			continue
		}
		if l, err := readlinkat(fdDir, fd); err == nil {
			cands = append(cands, candidate{link: l, id: id, how: "fd " + fd})
		}
	}
	return cands, dbLinks, onDevice
}

// noStatx is set once statx(2) has failed with ENOSYS (Linux before
// 4.11): statFD then uses fstatat(2).
var noStatx atomic.Bool

// statFD returns the device, inode and mode (file type bits) of the file
// that descriptor fd (a name in fdDir, a /proc/PID/fd directory) refers
// to. It uses statx(2) with AT_STATX_DONT_SYNC and asks only for the type
// and inode, which the kernel answers from the inode it holds: FUSE and
// NFS do not ask their daemon or server, so a file open on a mount that
// has stopped answering does not block. Before Linux 4.11 it falls back
// to fstatat(2), which may block there.
func statFD(fdDir int, fd string) (id FileID, mode uint32, err error) {
	if !noStatx.Load() {
		var stx unix.Statx_t
		err := unix.Statx(fdDir, fd, unix.AT_STATX_DONT_SYNC, unix.STATX_TYPE|unix.STATX_INO, &stx)
		if !errors.Is(err, unix.ENOSYS) {
			return FileID{Dev: unix.Mkdev(stx.Dev_major, stx.Dev_minor), Ino: stx.Ino}, uint32(stx.Mode), err
		}
		noStatx.Store(true)
	}
	var st unix.Stat_t
	err = unix.Fstatat(fdDir, fd, &st, 0)
	return FileID{Dev: st.Dev, Ino: st.Ino}, st.Mode, err
}

// scanMaps adds each target file mapped in maps (the text of
// /proc/PID/maps) to r's holders, once per file, and returns cands with
// the mappings on a target's device that may name a target file (see
// mayName) appended.
func (s *scanner) scanMaps(r *procResult, maps []byte, cands []candidate, dbLinks []dbLink) []candidate {
	var seen map[ref]bool
	parseMaps(maps, func(m mapping) bool {
		id := FileID{Dev: unix.Mkdev(m.Major, m.Minor), Ino: m.Ino}
		if t, ok := s.byID[id]; ok {
			if !seen[t] {
				if seen == nil {
					seen = map[ref]bool{}
				}
				seen[t] = true
				r.holders = append(r.holders, Holder{
					PID: r.pid, Target: s.targets[t.target].Path, File: t.file, How: "mmap",
				})
			}
			return true
		}
		if s.devs[id.Dev] && s.mayName(m.Path, dbLinks) {
			cands = append(cands, candidate{link: string(m.Path), id: id, how: "mmap"})
		}
		return true
	})
	return cands
}

// mayName reports whether a maps path could name a target file, directly
// or through the process's own database links, so that ordinary mappings
// on a target's device (libraries, executables) are dropped without
// allocating.
func (s *scanner) mayName(p []byte, dbLinks []dbLink) bool {
	p = bytes.TrimSuffix(p, []byte(" (deleted)"))
	if _, ok := s.byPath[string(p)]; ok {
		return true
	}
	for _, d := range dbLinks {
		if rest, ok := bytes.CutPrefix(p, []byte(d.link)); ok &&
			(string(rest) == "-wal" || string(rest) == "-shm") {
			return true
		}
	}
	return false
}

// unlinked picks the candidates that are a target's file by name but not by
// inode (see [Unlinked] for the rule).
func (s *scanner) unlinked(pid, dirfd int, cands []candidate, dbLinks []dbLink) []Unlinked {
	// Names as this process sees them, from its own descriptor of the
	// database: valid in any mount namespace.
	own := map[string]ref{}
	for _, d := range dbLinks {
		own[d.link+"-wal"] = ref{d.target, FileWAL}
		own[d.link+"-shm"] = ref{d.target, FileSHM}
	}
	sameNS, nsRead := false, false
	inSameNS := func() bool {
		if !nsRead && s.mntNS != "" {
			ns, err := readlinkat(dirfd, "ns/mnt")
			sameNS = err == nil && ns == s.mntNS
		}
		nsRead = true
		return sameNS
	}
	var out []Unlinked
	done := map[string]bool{}
	for _, c := range cands {
		name := strings.TrimSuffix(c.link, " (deleted)")
		m, ok := own[name]
		if !ok {
			if m, ok = s.byPath[name]; ok && !inSameNS() {
				ok = false
			}
		}
		if !ok || c.id == s.current(m) || c.id == s.now(m) {
			continue // the live file, possibly recreated after TargetFor
		}
		key := m.file + "\x00" + strconv.Itoa(m.target) + "\x00" + c.how
		if c.how == "mmap" {
			if done[key] {
				continue
			}
			done[key] = true
		}
		out = append(out, Unlinked{
			PID: pid, Target: s.targets[m.target].Path, File: m.file, Link: c.link, How: c.how,
		})
	}
	return out
}

// dbLink is the link text of a process's descriptor of a target database.
type dbLink struct {
	link   string
	target int
}

// comm is pid's /proc/PID/comm without its newline, empty when it cannot
// be read.
func (s *scanner) comm(pid int) string {
	b, err := os.ReadFile(s.root + "/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(b), "\n")
}

// describe reads comm, cmdline and the real uid of pid; ok is false when
// the process has exited.
func (s *scanner) describe(pid int) (comm, cmdline, uid string, ok bool) {
	dir := s.root + "/" + strconv.Itoa(pid)
	b, err := os.ReadFile(dir + "/comm")
	if gone(err) {
		return "", "", "", false
	}
	comm = strings.TrimSuffix(string(b), "\n")
	b, err = os.ReadFile(dir + "/cmdline")
	if gone(err) {
		return "", "", "", false
	}
	cmdline = formatCmdline(b)
	b, err = os.ReadFile(dir + "/status")
	if gone(err) {
		return "", "", "", false
	}
	uid = statusUID(b)
	return comm, cmdline, uid, true
}

// formatCmdline turns the NUL-separated /proc/PID/cmdline into one line cut
// to about maxCmdline bytes.
func formatCmdline(b []byte) string {
	b = bytes.TrimRight(b, "\x00")
	b = bytes.ReplaceAll(b, []byte{0}, []byte{' '})
	if len(b) > maxCmdline {
		n := maxCmdline
		for n > 0 && b[n]&0xC0 == 0x80 { // do not split a UTF-8 sequence
			n--
		}
		return string(b[:n]) + "..."
	}
	return string(b)
}

// statusUID returns the real uid from a /proc/PID/status text ("Uid:" line,
// first of four fields), or "" if there is none.
func statusUID(b []byte) string {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if rest, ok := bytes.CutPrefix(line, []byte("Uid:")); ok {
			if f := bytes.Fields(rest); len(f) > 0 {
				return string(f[0])
			}
			return ""
		}
	}
	return ""
}

// readDirNames opens the directory name relative to dirfd and lists it
// without sorting and without "." and "..". It returns the directory's
// descriptor, which the caller closes, or -1 with an error. b's buffers are
// reused.
func readDirNames(dirfd int, name string, b *buffers) (int, []string, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, nil, err
	}
	if b.dirent == nil {
		b.dirent = make([]byte, 8<<10)
	}
	names := b.names[:0]
	for {
		n, err := unix.ReadDirent(fd, b.dirent)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			unix.Close(fd)
			return -1, nil, err
		}
		if n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(b.dirent[:n], -1, names)
	}
	b.names = names
	return fd, names, nil
}

// readFileAt reads the whole of the /proc file name relative to dirfd into
// buf[:0], growing it.
func readFileAt(dirfd int, name string, buf []byte) ([]byte, error) {
	buf = buf[:0]
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return buf, err
	}
	defer unix.Close(fd)
	for {
		if cap(buf)-len(buf) < 4096 {
			buf = append(buf[:cap(buf)], make([]byte, max(16<<10, cap(buf)))...)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return buf, err
		}
		if n <= 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// readlinkat reads the symbolic link name relative to dirfd.
func readlinkat(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		b := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, b)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(b[:n]), nil
		}
	}
}

// gone reports whether err means the process exited while we read it.
func gone(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ESRCH)
}

// maxCgroup bounds the /proc/PID/cgroup bytes Describe keeps.
const maxCgroup = 4 << 10

// Describe reads root/PID's comm, cmdline, status (the real uid, named)
// and cgroup (root: "" is /proc), waiting at most DefaultTimeout for them
// (a cmdline read waits on the process's memory map). It returns an error
// wrapping fs.ErrNotExist when the process is gone, one wrapping
// fsbound.ErrNoAnswer when the reads did not answer in time, or ctx's
// error; the cgroup is left empty when it cannot be read.
func Describe(ctx context.Context, root string, pid int) (Described, error) {
	if root == "" {
		root = "/proc"
	}
	s := &scanner{root: root}
	d, answered := fsbound.Within(ctx, DefaultTimeout, func() *Described {
		comm, cmdline, uid, ok := s.describe(pid)
		if !ok {
			return nil
		}
		return &Described{PID: pid, Comm: comm, Cmdline: cmdline, User: userName(map[string]string{}, uid), Cgroup: s.cgroup(pid)}
	})
	switch {
	case ctx.Err() != nil:
		return Described{}, ctx.Err()
	case !answered:
		return Described{}, fmt.Errorf("describe process %d: %w within %s", pid, fsbound.ErrNoAnswer, DefaultTimeout)
	case d == nil:
		return Described{}, fmt.Errorf("describe process %d: %w", pid, os.ErrNotExist)
	}
	return *d, nil
}

// cgroup is pid's /proc/PID/cgroup, at most maxCgroup bytes, empty when
// it cannot be read.
func (s *scanner) cgroup(pid int) string {
	b, err := os.ReadFile(s.root + "/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return ""
	}
	return string(b[:min(len(b), maxCgroup)])
}
