package preflight

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/preflight-sqlite/preflight/policy"
	"github.com/preflight-sqlite/preflight/probe/activity"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/kube"
	"github.com/preflight-sqlite/preflight/probe/locks"
	"github.com/preflight-sqlite/preflight/probe/procfs"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
	"github.com/preflight-sqlite/preflight/report"
	"github.com/preflight-sqlite/preflight/rules"
)

// WriterOptions configure the live-writer probes.
type WriterOptions struct {
	// Off skips every live-writer probe (processes, locks, Docker,
	// activity). Used with a saved mount table, whose paths live on another
	// machine.
	Off bool
	// Docker configures the Docker Engine probe; Docker.Mode "off" skips it,
	// "required" makes an engine that does not answer an error finding.
	Docker docker.Options
	// Watch is how long to watch each WAL database's -wal and -shm for
	// changes no probe can attribute, and each database's locks for how
	// long each write lock is held; 0 turns the watch off.
	Watch time.Duration
	// BusyTimeout is the busy timeout a write lock held during Watch is
	// measured against (write-lock-held); 0 is 5s.
	BusyTimeout time.Duration
	// Kube configures the Kubernetes API probe; Kube.Mode "off" skips it,
	// "required" makes an API that does not answer an error finding.
	// Outside a cluster (no in-cluster configuration, no kubeconfig) it
	// asks nothing.
	Kube kube.Options
	// Starting says the application has not started yet (preflight run):
	// every writer found is one besides the application.
	Starting bool
	// ProcTimeout bounds how long the /proc entries of any one process may
	// take to read (procfs.Options.Timeout): one that does not answer
	// makes the process probe unsure, never "no writer". It bounds each
	// lock query too (locks.ProbeWithin): one that does not answer makes
	// the lock probe fail. Zero means Options.FSTimeout in Check, else 5 s.
	ProcTimeout time.Duration
	// Converted lists databases that `preflight convert` (the entrypoint's
	// --on-unsafe convert policy) converted to DELETE at an earlier start,
	// from the data directories' state files, as absolute paths with
	// symlinks resolved; one found in WAL mode again is wal-reenabled.
	Converted []string
}

// writerFacts are the raw probe results shared by every database.
type writerFacts struct {
	procs     procfs.Result
	procsErr  error
	docker    docker.Result
	kube      kube.Result
	locks     map[string]locks.Result
	locksErr  map[string]error
	activity  map[string]activity.Result
	watchErr  map[string]error
	lockWatch map[string]locks.Watched
	lockErr   map[string]error
	targetErr map[string]error
	// innerIDs are the container ids nested below an outermost one in a
	// holder's cgroup path (containerOf), innermost last.
	innerIDs map[string][]string
	// selfContainer is the container this process runs in, from its own
	// cgroup ("" when none or not visible there, as with a private cgroup
	// namespace; the Docker probe's Self then names it).
	selfContainer string
}

// containerOf is the ID of the container a process with /proc/PID/cgroup
// cgroup runs in; "" when it runs in none, or in ours (a process of our
// own container is stopped by its PID, not by stopping the container
// preflight runs in).
func (f *writerFacts) containerOf(cgroup string) string {
	ids, _ := docker.ContainerIDsFromCgroup(strings.NewReader(cgroup))
	if len(ids) == 0 {
		return ""
	}
	for _, id := range ids {
		if id == f.selfContainer || f.docker.Self != nil && id == f.docker.Self.ID {
			return ""
		}
	}
	// The outermost id, which the process cannot choose; the inner ones
	// are tried when the engine does not know it (nameHolderContainers).
	if len(ids) > 1 {
		f.innerIDs[ids[0]] = ids[1:]
	}
	return ids[0]
}

// containerOfPID is containerOf for process pid of /proc ("" when it
// cannot be read).
func (f *writerFacts) containerOfPID(ctx context.Context, pid int) string {
	p, err := procfs.Describe(ctx, "", pid)
	if err != nil {
		return ""
	}
	return f.containerOf(p.Cgroup)
}

// probeWriters runs the live-writer probes for every database in dirs and
// fills each database's Writers and WriterProbes, and r.Engine and r.Docker.
// Raw reads (locks, /proc) run before anything else touches the databases:
// no SQLite connection is open in this process.
func probeWriters(ctx context.Context, r *Report, opts WriterOptions) {
	if opts.Off {
		r.Probes["processes"], r.Probes["locks"], r.Probes["docker"], r.Probes["activity"] = report.ProbeOff, report.ProbeOff, report.ProbeOff, report.ProbeOff
		return
	}
	dbs, dirPaths := writerTargets(r)
	f := runWriterProbes(ctx, dbs, dirPaths, opts)
	if f.docker.Status != docker.StatusOff && f.docker.Status != docker.StatusSkipped {
		r.Docker = &f.docker
		r.Engine = f.docker.Engine
	}
	if f.kube.Status != kube.StatusOff && f.kube.Status != kube.StatusNotInCluster {
		r.Kube = &f.kube
	}
	attributeAll(ctx, r, dbs, f, opts)
	if r.Kube != nil {
		r.Probes["kube"] = report.ProbeStatus(f.kube.Status)
	}
	r.Probes["activity"] = report.ProbeOff
	if opts.Watch > 0 {
		r.Probes["activity"] = summarize(dbs, func(db *Database) report.ProbeStatus { return db.WriterProbes.Activity })
	}
}

// attributeAll attributes f to every existing database of r (dbs, from
// writerTargets) and sets r's processes, locks and docker probe statuses.
func attributeAll(ctx context.Context, r *Report, dbs []*Database, f *writerFacts, opts WriterOptions) {
	for i := range r.DataDirs {
		d := &r.DataDirs[i]
		for j := range d.Databases {
			db := &d.Databases[j]
			if db.New || db.NotSQLite {
				continue
			}
			attribute(ctx, r, d, db, f, opts)
		}
	}
	nameHolderContainers(ctx, dbs, f, r.Container, opts.Docker)
	r.Probes["processes"] = summarize(dbs, func(db *Database) report.ProbeStatus { return db.WriterProbes.Processes })
	r.Probes["locks"] = summarize(dbs, func(db *Database) report.ProbeStatus { return db.WriterProbes.Locks })
	r.Probes["docker"] = report.ProbeStatus(f.docker.Status)
}

// writerTargets lists the databases of r that exist (not new, not another
// format) and the existing data directories, skipping unresponsive ones.
func writerTargets(r *Report) (dbs []*Database, dirPaths []string) {
	for i := range r.DataDirs {
		d := &r.DataDirs[i]
		if d.Unresponsive != "" {
			continue
		}
		if d.Exists {
			dirPaths = append(dirPaths, d.Path)
		}
		for j := range d.Databases {
			if !d.Databases[j].New && !d.Databases[j].NotSQLite {
				dbs = append(dbs, &d.Databases[j])
			}
		}
	}
	return dbs, dirPaths
}

// runWriterProbes runs the POSIX lock probes (first, raw reads), then the
// /proc scan, with the Docker probe and the file watch concurrently.
func runWriterProbes(ctx context.Context, dbs []*Database, dirPaths []string, opts WriterOptions) *writerFacts {
	f := &writerFacts{
		locks: map[string]locks.Result{}, locksErr: map[string]error{},
		activity: map[string]activity.Result{}, watchErr: map[string]error{}, targetErr: map[string]error{},
		lockWatch: map[string]locks.Watched{}, lockErr: map[string]error{},
		innerIDs: map[string][]string{},
	}
	if self, err := procfs.Describe(ctx, "", os.Getpid()); err == nil {
		f.selfContainer, _ = docker.ContainerIDFromCgroup(strings.NewReader(self.Cgroup))
	}
	var targets []procfs.Target
	for _, db := range dbs {
		f.locks[db.Path], f.locksErr[db.Path] = locks.ProbeWithin(ctx, db.Path, procTimeout(opts))
		t, err := procfs.TargetFor(db.Path)
		if err != nil {
			f.targetErr[db.Path] = err
			continue
		}
		targets = append(targets, t)
	}

	var wg sync.WaitGroup
	// The Docker probe asks about each database, not only its data
	// directory: a database can sit on another mount than its directory (a
	// nested bind mount, a single-file bind, a symlink into another
	// mount), and a container that mounts only part of a data directory
	// writes only the databases in that part.
	dockerPaths := slices.Clone(dirPaths)
	for _, db := range dbs {
		if !slices.Contains(dockerPaths, db.Path) {
			dockerPaths = append(dockerPaths, db.Path)
		}
	}
	if len(dirPaths) > 0 && opts.Docker.Mode != docker.ModeOff {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.docker = docker.Probe(ctx, dockerPaths, opts.Docker)
		}()
	} else {
		f.docker = docker.Result{Status: docker.StatusOff}
		if opts.Docker.Mode != docker.ModeOff {
			f.docker.Status = docker.StatusSkipped
		}
	}
	f.kube = kube.Result{Status: kube.StatusOff}
	if len(dirPaths) > 0 && opts.Kube.Mode != kube.ModeOff {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.kube = kube.Probe(ctx, dockerPaths, opts.Kube)
		}()
	}
	var mu sync.Mutex
	if opts.Watch > 0 {
		for _, db := range dbs {
			wg.Add(1)
			go func(path string) {
				defer wg.Done()
				res, err := activity.Watch(ctx, path, opts.Watch)
				mu.Lock()
				f.activity[path], f.watchErr[path] = res, err
				mu.Unlock()
			}(db.Path)
			wg.Add(1)
			go func(path string) {
				defer wg.Done()
				res, err := locks.Watch(ctx, path, opts.Watch, lockWatchInterval, procTimeout(opts))
				mu.Lock()
				f.lockWatch[path], f.lockErr[path] = res, err
				mu.Unlock()
			}(db.Path)
		}
	}
	if len(targets) > 0 {
		f.procs, f.procsErr = procfs.Scan(ctx, targets, procfs.Options{Timeout: opts.ProcTimeout})
	}
	wg.Wait()
	return f
}

// summarize returns the one status every database shares, or the worst.
func summarize(dbs []*Database, get func(*Database) report.ProbeStatus) report.ProbeStatus {
	order := []report.ProbeStatus{report.ProbeFailed, report.ProbeUnsupported, report.ProbeUnsure, report.ProbeChanged, report.ProbeRan, report.ProbeQuiet, report.ProbeOff}
	best := report.ProbeStatus("")
	for _, db := range dbs {
		s := get(db)
		if best == "" || indexOf(order, s) < indexOf(order, best) {
			best = s
		}
	}
	if best == "" {
		return report.ProbeNoDatabase
	}
	return best
}

func indexOf(list []report.ProbeStatus, s report.ProbeStatus) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return len(list)
}

// attribute turns the probe results into db.Writers, db.Unlinked,
// db.Activity and db.WriterProbes.
func attribute(ctx context.Context, r *Report, d *DataDir, db *Database, f *writerFacts, opts WriterOptions) {
	p := &db.WriterProbes
	byPID, pids := attributeProcesses(ctx, db, f, opts)
	db.LockHolders = lockHolders(ctx, f, f.locks[db.Path].Locks, db.JournalMode == sqlitefile.JournalWAL, byPID)
	if w, ok := f.lockWatch[db.Path]; ok && f.lockErr[db.Path] == nil {
		db.LockWatch = &w
	} else if err := f.lockErr[db.Path]; err != nil && f.locksErr[db.Path] == nil {
		p.Blind = append(p.Blind, "lock watch: "+err.Error())
	}
	foreign := attributeLocks(ctx, db, f, byPID, &pids)
	sort.Ints(pids)
	for _, pid := range pids {
		db.Writers = append(db.Writers, *byPID[pid])
	}
	attributeContainers(r, db, f, foreign)
	attributePods(db, &f.kube)
	p.Activity = report.ProbeOff
	if opts.Watch > 0 {
		if err := f.watchErr[db.Path]; err != nil {
			p.Activity = report.ProbeFailed
			p.Blind = append(p.Blind, "activity: "+err.Error())
		} else if a, ok := f.activity[db.Path]; ok {
			db.Activity = &a
			p.Activity = report.ProbeQuiet
			if a.Changed {
				p.Activity = report.ProbeChanged
			}
		}
	}

	class := rules.WALClass(d, db)
	if policy.FarSideBlind(class) {
		p.Blind = append(p.Blind, fmt.Sprintf("processes on another kernel (a host behind a VM share, another network client) are invisible on a %s filesystem, and their locks do not reach this one", class))
	}
	if db.JournalMode != sqlitefile.JournalWAL && f.docker.Status != docker.StatusRan && f.docker.Status != docker.StatusNoDaemon {
		p.Blind = append(p.Blind, "an idle connection to a rollback-mode database holds no lock, so other containers are seen only through the Docker API")
	}
	p.Sure = len(p.Blind) == 0
}

// attributeProcesses sets db's process probe status and unlinked sidecars
// from the /proc scan, and returns the processes that hold db, by PID, with
// their PIDs in the order first seen.
func attributeProcesses(ctx context.Context, db *Database, f *writerFacts, opts WriterOptions) (map[int]*Writer, []int) {
	p := &db.WriterProbes
	byPID := map[int]*Writer{}
	var pids []int
	switch {
	case f.targetErr[db.Path] != nil:
		p.Processes = report.ProbeFailed
		p.Blind = append(p.Blind, "processes: "+f.targetErr[db.Path].Error())
	case f.procsErr != nil:
		p.Processes = report.ProbeFailed
		if errors.Is(f.procsErr, procfs.ErrNotSupported) {
			p.Processes = report.ProbeUnsupported
		}
		p.Blind = append(p.Blind, "processes: "+f.procsErr.Error())
	default:
		p.Processes = report.ProbeRan
		if !f.procs.Sure {
			p.Processes = report.ProbeUnsure
		}
		if f.procs.Denied > 0 {
			p.Blind = append(p.Blind, fmt.Sprintf("processes: %s could not be read%s", ofProcesses(f.procs.Denied, f.procs.Scanned), processNames(f.procs.DeniedNamed, f.procs.Denied)))
		}
		if f.procs.Stalled > 0 {
			p.Blind = append(p.Blind, fmt.Sprintf("processes: %s did not answer within %s%s, and might hold it (a read of their /proc entries blocked: a filesystem or process that is stuck)", ofProcesses(f.procs.Stalled, f.procs.Scanned), procTimeout(opts), processNames(f.procs.StalledNamed, f.procs.Stalled)))
		}
	}
	for _, h := range f.procs.Holders {
		if h.Target != absPath(db.Path) {
			continue
		}
		w := byPID[h.PID]
		if w == nil {
			w = &Writer{Kind: report.WriterProcess, PID: h.PID, Comm: h.Comm, Cmdline: h.Cmdline, User: h.User, ContainerID: f.containerOfPID(ctx, h.PID)}
			byPID[h.PID] = w
			pids = append(pids, h.PID)
		}
		w.Files = append(w.Files, h.File+" "+h.How)
	}
	for _, u := range f.procs.Unlinked {
		if u.Target == absPath(db.Path) {
			db.Unlinked = append(db.Unlinked, u)
		}
	}
	return byPID, pids
}

// attributeLocks sets db's lock probe status and adds each lock held on db
// to its process in byPID (a new lock writer for a PID not seen, appended
// to pids); locks of processes outside our PID namespace (PID 0) are
// returned together as one writer, nil when there are none.
func attributeLocks(ctx context.Context, db *Database, f *writerFacts, byPID map[int]*Writer, pids *[]int) *Writer {
	p := &db.WriterProbes
	switch {
	case errors.Is(f.locksErr[db.Path], locks.ErrNotSupported):
		p.Locks = report.ProbeUnsupported
	case f.locksErr[db.Path] != nil:
		p.Locks = report.ProbeFailed
		p.Blind = append(p.Blind, "locks: "+f.locksErr[db.Path].Error())
	default:
		p.Locks = report.ProbeRan
	}
	var foreign *Writer
	for _, l := range f.locks[db.Path].Locks {
		if w := byPID[l.PID]; l.PID > 0 && w != nil {
			w.Locks = append(w.Locks, l)
			continue
		}
		if l.PID > 0 {
			w := &Writer{Kind: report.WriterLock, PID: l.PID, Locks: []locks.Lock{l}}
			w.ContainerID = f.containerOfPID(ctx, l.PID)
			byPID[l.PID] = w
			*pids = append(*pids, l.PID)
			continue
		}
		if foreign == nil {
			foreign = &Writer{Kind: report.WriterLock}
		}
		foreign.Locks = append(foreign.Locks, l)
	}
	return foreign
}

// attributeContainers adds the containers the Docker probe found for db
// (running: Writers, stopped: Stopped; with --container, not that one),
// and the foreign locks: to the one container when there is exactly one
// (it has the database open now, not only mounted), else as a writer of
// their own. A container whose process already holds db (a process
// writer with its ContainerID) is not listed again: that process writer
// gets the container, and is the one writer. It sets db's Docker probe
// status and what it could not see.
func attributeContainers(r *Report, db *Database, f *writerFacts, foreign *Writer) {
	p := &db.WriterProbes
	p.Docker = report.ProbeStatus(f.docker.Status)
	containers := 0
	for _, cw := range f.docker.Writers {
		if cw.Path != db.Path || r.Container != nil && cw.Container.ID == r.Container.ID {
			continue // with --container, that container is the one checked, not another writer
		}
		c := cw.Container
		own := c.SwarmService != "" && f.docker.Self != nil && f.docker.Self.SwarmService == c.SwarmService
		if inProcesses(db.Writers, &c, cw.Relation, own) {
			continue
		}
		db.Writers = append(db.Writers, Writer{Kind: report.WriterContainer, Container: &c, Relation: cw.Relation, OwnService: own})
		containers++
	}
	for _, cw := range f.docker.Stopped {
		if cw.Container.SwarmService != "" {
			continue // a finished Swarm task's container: Swarm starts new tasks in new containers
		}
		if cw.Path == db.Path && (r.Container == nil || cw.Container.ID != r.Container.ID) {
			c := cw.Container
			db.Stopped = append(db.Stopped, Writer{Kind: report.WriterContainer, Container: &c, Relation: cw.Relation})
		}
	}
	switch {
	case foreign != nil && containers == 1:
		w := &db.Writers[len(db.Writers)-1]
		w.Locks = append(w.Locks, foreign.Locks...)
	case foreign != nil:
		db.Writers = append(db.Writers, *foreign)
	}
	switch f.docker.Status {
	case docker.StatusRan:
		if !f.docker.Sure {
			p.Blind = append(p.Blind, "containers: "+nonEmpty(f.docker.Err, "the engine's answer may be incomplete"))
		}
	case docker.StatusNoDaemon, docker.StatusOff:
	default:
		p.Blind = append(p.Blind, "containers: Docker "+f.docker.Status+nonEmptyPrefix(": ", f.docker.Err))
	}
}

// inProcesses gives c (how it reaches the data: relation; own: a task of
// our own Swarm service) to every process or lock writer of ws that runs
// in it, and reports whether there was one.
func inProcesses(ws []Writer, c *docker.Container, relation string, own bool) bool {
	found := false
	for i := range ws {
		if w := &ws[i]; w.Kind != report.WriterContainer && w.ContainerID == c.ID {
			w.Container, w.Relation, w.OwnService = c, relation, own
			found = true
		}
	}
	return found
}

func absPath(p string) string {
	if strings.HasPrefix(p, "/") {
		return p
	}
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	return wd + "/" + p
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func nonEmptyPrefix(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

// ofProcesses is "N of M processes", with the noun's number right.
func ofProcesses(n, of int) string {
	if of == 1 {
		return fmt.Sprintf("%d of 1 process", n)
	}
	return fmt.Sprintf("%d of %d processes", n, of)
}

// processNames is " (PID 1 process_api, PID 7 sshd, N more)" for the
// named processes of the total a scan could not read, empty when it named
// none.
func processNames(named []procfs.Process, total int) string {
	if len(named) == 0 {
		return ""
	}
	var names []string
	for _, p := range named {
		n := fmt.Sprintf("PID %d", p.PID)
		if p.Comm != "" {
			n += " " + p.Comm
		}
		names = append(names, n)
	}
	if total > len(named) {
		names = append(names, fmt.Sprintf("%d more", total-len(named)))
	}
	return " (" + strings.Join(names, ", ") + ")"
}

// procTimeout is the per-process bound of the /proc scan.
func procTimeout(opts WriterOptions) time.Duration {
	if opts.ProcTimeout > 0 {
		return opts.ProcTimeout
	}
	return procfs.DefaultTimeout
}

// lockWatchInterval is how often --watch samples each database's locks.
const lockWatchInterval = 25 * time.Millisecond

// lockHolders groups ls by holder (a PID of ours, a PID of the /proc
// namespace, or one unnamed holder in another PID namespace; OFD locks
// apart) and names what each holds. A holder the /proc scan found is
// described from it (byPID), any other from /proc; the container comes
// from the cgroup (f.containerOf).
func lockHolders(ctx context.Context, f *writerFacts, ls []locks.Lock, wal bool, byPID map[int]*Writer) []report.LockHolder {
	type who struct {
		pid, procPID int
		other, ofd   bool
	}
	by := map[who]int{}
	var out []report.LockHolder
	for _, l := range ls {
		k := who{l.PID, l.ProcPID, l.OtherNamespace, l.OFD}
		i, ok := by[k]
		if !ok {
			i = len(out)
			by[k] = i
			out = append(out, report.LockHolder{PID: l.PID, ProcPID: l.ProcPID, OtherNamespace: l.OtherNamespace, Invisible: l.OtherNamespace && l.ProcPID == 0})
		}
		out[i].Locks = append(out[i].Locks, l)
	}
	for i := range out {
		h := &out[i]
		h.Holds = locks.Roles(h.Locks, wal)
		pid := h.PID
		if pid == 0 {
			pid = h.ProcPID
		}
		if pid <= 0 {
			continue
		}
		if w := byPID[h.PID]; h.PID > 0 && w != nil && w.Comm != "" {
			h.Comm, h.Cmdline, h.User = w.Comm, w.Cmdline, w.User
		}
		p, err := procfs.Describe(ctx, "", pid)
		if err != nil {
			continue
		}
		if h.Comm == "" {
			h.Comm, h.Cmdline, h.User = p.Comm, p.Cmdline, p.User
		}
		h.ContainerID = f.containerOf(p.Cgroup)
	}
	return out
}

// maxHolderInspects bounds the containers nameHolderContainers asks the
// engine about (each within the Docker timeout): the others keep their
// cgroup's container ID.
const maxHolderInspects = 16

// nameHolderContainers describes the container of each lock holder and
// process writer that runs in one: from the containers the Docker probe
// listed (and checked, the container of --container or of an audit
// entry), else by asking the engine (once per container), when the probe
// reached it.
func nameHolderContainers(ctx context.Context, dbs []*Database, f *writerFacts, checked *docker.Container, opts docker.Options) {
	known := map[string]*docker.Container{}
	for _, cw := range append(slices.Clone(f.docker.Writers), f.docker.Stopped...) {
		c := cw.Container
		known[c.ID] = &c
	}
	if s := f.docker.Self; s != nil {
		known[s.ID] = s
	}
	if checked != nil {
		known[checked.ID] = checked
	}
	asked := 0
	name := func(id string) *docker.Container {
		c, ok := known[id]
		if !ok && f.docker.Status == docker.StatusRan && asked < maxHolderInspects {
			asked++
			c, _, _ = docker.InspectContainer(ctx, id, opts)
			known[id] = c
		}
		return c
	}
	// resolve names the outermost container id of a cgroup path, else the
	// first nested one the engine knows (a container of an engine running
	// in that container, when the engine asked is that one).
	resolve := func(id string) (string, *docker.Container) {
		for _, cand := range append([]string{id}, f.innerIDs[id]...) {
			if c := name(cand); c != nil {
				return cand, c
			}
		}
		return id, nil
	}
	for _, db := range dbs {
		for i := range db.LockHolders {
			if h := &db.LockHolders[i]; h.ContainerID != "" {
				h.ContainerID, h.Container = resolve(h.ContainerID)
			}
		}
		for i := range db.Writers {
			if w := &db.Writers[i]; w.Kind != report.WriterContainer && w.ContainerID != "" && w.Container == nil {
				w.ContainerID, w.Container = resolve(w.ContainerID)
			}
		}
	}
}
