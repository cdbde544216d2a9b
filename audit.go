package preflight

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/internal/fsbound"
	"github.com/preflight-sqlite/preflight/internal/rawfile"
	"github.com/preflight-sqlite/preflight/internal/shell"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/kube"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/report"
	"github.com/preflight-sqlite/preflight/rules"
)

// AuditSchema names the version of the audit JSON document
// (docs/reference/schema/audit.json).
const AuditSchema = "preflight-audit/v1"

// AuditOptions configure Audit.
type AuditOptions struct {
	// All audits stopped containers too (created, exited, dead); their
	// files are read through the host path of a bind or volume only.
	All bool
	// Docker is the engine to audit; Timeout bounds every engine request
	// of the audit together (zero: 10 s).
	Docker docker.Options
	// MaxDepth, SniffMax, SniffTime, FSTimeout and Ignore are as in
	// Options, per mount.
	MaxDepth  int
	SniffMax  int
	SniffTime time.Duration
	FSTimeout time.Duration
	Ignore    []string
	// Catalogue names the images known to keep SQLite in a directory;
	// nil means compose.Builtin().
	Catalogue *compose.Catalogue
	// Proc is where the engine host's processes are seen; "" means /proc.
	Proc string
}

// AuditReport is what Audit found: one entry per container.
type AuditReport struct {
	Schema   string          `json:"schema"`
	Endpoint docker.Endpoint `json:"endpoint"`
	Engine   *docker.Engine  `json:"engine,omitempty"`
	// Docker is the container list's status (docker.StatusRan when it was
	// read) and why it failed.
	Docker      string `json:"docker"`
	DockerError string `json:"docker_error,omitempty"`
	// Swarm is the engine's node in a swarm, nil when in none.
	Swarm *docker.Swarm `json:"swarm,omitempty"`
	// HostPID is true when the containers' processes were visible here
	// (preflight runs in the engine host's PID namespace); OnEngineHost
	// when the engine host's paths are ours.
	HostPID      bool `json:"host_pid"`
	OnEngineHost bool `json:"on_engine_host"`
	// Containers are every container audited, by name.
	Containers []AuditContainer `json:"containers"`
	// Services are, on a Swarm manager, the services none of whose tasks
	// is a container listed here (their tasks run on other nodes, or none
	// runs), by name: judged from their spec alone, every mount not
	// inspected. Absent when there is none.
	Services []AuditService `json:"services,omitempty"`
	// Verdict is the worst container or service verdict.
	Verdict report.Verdict `json:"verdict"`
	// Took is how long the audit took.
	Took time.Duration `json:"took_ns"`
}

// Read ways in AuditMount.ReadVia.
const (
	ReadHostPath      = "host-path"      // the bind source or volume directory on this host
	ReadContainerRoot = "container-root" // /proc/PID/root of the container's first process
)

// AuditContainer is one container and the mounts that hold SQLite data.
type AuditContainer struct {
	Container docker.Container `json:"container"`
	// App is the catalogue entry its image matches, if any.
	App string `json:"app,omitempty"`
	// Mounts are its mounts (and catalogue data directories on no mount,
	// and the writable layer's directories that hold a database, see
	// AuditMount.Mount) that hold SQLite data or could not be read, in
	// destination order;
	// Report.DataDirs[i] is Mounts[i].
	Mounts []AuditMount `json:"mounts"`
	// Report is the check report for those paths, as check --container
	// makes it: findings, verdict, each database.
	Report *Report `json:"report"`
	// Verdict is Report.Verdict.
	Verdict report.Verdict `json:"verdict"`
}

// AuditService is a Swarm service with no container here to read, and
// the paths its spec says may hold SQLite data.
type AuditService struct {
	// Service is the service's spec: mode, replicas, update and rollback
	// order, mounts, and its live tasks.
	Service docker.SpecService `json:"service"`
	// App is the catalogue entry its image matches, if any.
	App string `json:"app,omitempty"`
	// Mounts are its writable bind, volume and tmpfs mounts and
	// catalogue data directories (or "/", its writable layer, when it has
	// none), each not inspected; Report.DataDirs[i] is Mounts[i].
	Mounts []AuditMount `json:"mounts"`
	// Report is the check report for those paths: the findings that the
	// spec alone supports.
	Report *Report `json:"report"`
	// Verdict is Report.Verdict.
	Verdict report.Verdict `json:"verdict"`
}

// AuditMount is one path of a container that holds (or may hold) SQLite
// data.
type AuditMount struct {
	// Destination is the path inside the container.
	Destination string `json:"destination"`
	// Mount is the container's mount there; nil for a path on no mount
	// (the writable layer): a catalogue data directory, or, for an image
	// the catalogue does not know with no writable mount, each directory
	// of its root holding a database ("/" when the root was not read).
	Mount *docker.MountRef `json:"mount,omitempty"`
	// Class is the filesystem class the check judged.
	Class mounts.Class `json:"class"`
	// ReadVia is ReadHostPath or ReadContainerRoot; "" when not read.
	ReadVia string `json:"read_via,omitempty"`
	// Local is the path read on this machine.
	Local string `json:"local,omitempty"`
	// NotInspected says why its files could not be read; "" when read.
	NotInspected string `json:"not_inspected,omitempty"`
	// Catalogue is true when the image's catalogue entry names this path.
	Catalogue bool `json:"catalogue,omitempty"`
}

// Audit lists the engine's containers (docker.List) and checks, for each,
// every mount that holds SQLite data as check --container does: the class
// the engine gives the mount, each database's journal mode and header, the
// other containers and Swarm services on the same data, through the one
// rules table. A mount is read through the host path of its bind or volume
// when this is the engine host, else through /proc/PID/root of the
// container's first process when that PID is visible here; a mount read
// neither way is said not inspected (mount-not-inspected), when writable
// or named by the catalogue. A container of an image the catalogue does
// not know with no writable mount has its writable layer looked at
// (auditLayer). On a Swarm manager, each service with no container here
// is listed from its spec (AuditReport.Services), nothing of it read.
// An engine that does not answer is a report with Docker set, not an
// error; the error is ctx's.
func Audit(ctx context.Context, opts AuditOptions) (*AuditReport, error) {
	start := time.Now()
	if opts.Docker.Timeout <= 0 {
		opts.Docker.Timeout = 10 * time.Second
	}
	if opts.Catalogue == nil {
		opts.Catalogue = compose.Builtin()
	}
	if opts.Proc == "" {
		opts.Proc = "/proc"
	}
	inv := docker.List(ctx, docker.ListOptions{Options: opts.Docker, All: opts.All})
	ar := &AuditReport{Schema: AuditSchema, Endpoint: inv.Endpoint, Engine: inv.Engine, Docker: inv.Status,
		DockerError: inv.Err, Swarm: inv.Swarm, OnEngineHost: inv.OnEngineHost, Containers: []AuditContainer{}, Verdict: report.VerdictOK}
	if inv.Status != docker.StatusRan {
		ar.Verdict = report.VerdictUnsafe
		ar.Took = time.Since(start)
		return ar, nil
	}
	table, tableErr := mounts.ReadSelf()
	errText := ""
	if tableErr != nil {
		errText = tableErr.Error()
	}
	var all []*Report
	var roots []string
	for i := range inv.Containers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ac := auditPaths(ctx, &inv.Containers[i], inv, opts)
		if ac.hostPID {
			ar.HostPID = true
		}
		r := ac.Report
		for j := range r.DataDirs {
			if d := &r.DataDirs[j]; d.Mount == nil {
				classify(d, table, errText)
			}
		}
		ar.Containers = append(ar.Containers, ac.AuditContainer)
		all = append(all, r)
		roots = append(roots, ac.root)
	}
	auditWriters(ctx, all, inv, opts.FSTimeout)
	worst := report.LevelInfo
	for i := range ar.Containers {
		ac := &ar.Containers[i]
		worst = judgeAudited(ac.Report, roots[i], opts.Ignore, worst)
		ac.Verdict = ac.Report.Verdict
		for j := range ac.Mounts {
			if d := ac.Report.DataDirs[j]; d.Mount != nil {
				ac.Mounts[j].Class = d.Mount.Class
			}
		}
	}
	for _, svc := range inv.ServicesElsewhere() {
		as := auditService(ctx, svc, inv, opts)
		worst = judgeAudited(as.Report, "", opts.Ignore, worst)
		as.Verdict = as.Report.Verdict
		ar.Services = append(ar.Services, as)
	}
	ar.Verdict = report.VerdictOf(worst)
	// Containers without SQLite data are left out.
	ar.Containers = slices.DeleteFunc(ar.Containers, func(ac AuditContainer) bool { return len(ac.Mounts) == 0 })
	ar.Took = time.Since(start)
	return ar, nil
}

// judgeAudited judges r through the rules table (ignore as --ignore),
// names its paths as the container sees them when they were read through
// root ("" when not), and returns the worse of worst and its worst level.
func judgeAudited(r *Report, root string, ignore []string, worst report.Level) report.Level {
	r.Findings = judge(r, rules.Input{}, ignore)
	if root != "" {
		toContainerPaths(r, root, r.Container)
	}
	w := r.Worst()
	r.Verdict = report.VerdictOf(w)
	r.JournalMode, r.FSClass = rules.JournalMode(r)
	if w.Rank() > worst.Rank() {
		return w
	}
	return worst
}

// auditedContainer is an AuditContainer being built.
type auditedContainer struct {
	AuditContainer
	hostPID bool
	// root is the /proc/PID/root its files were read through, or "".
	root string
}

// auditPaths finds the paths of c to check and discovers their databases:
// each bind and volume mount (and tmpfs), and each catalogue data
// directory of its image; a path where nothing SQLite was found is
// dropped, unless the catalogue names it or it is writable and could not
// be read (mount-not-inspected).
func auditPaths(ctx context.Context, c *docker.Container, inv *docker.Inventory, opts AuditOptions) auditedContainer {
	ac := auditedContainer{AuditContainer: AuditContainer{Container: *c, Mounts: []AuditMount{}}}
	r := &Report{Schema: Schema, Probes: map[string]report.ProbeStatus{}, Engine: inv.Engine, Container: &ac.Container}
	ac.Report = r
	appDirs := map[string]bool{}
	if app := opts.Catalogue.Match(c.Image); app != nil {
		ac.App = app.Name
		for _, d := range app.DataDirs {
			appDirs[path.Clean(d)] = true
		}
	}
	root, rootWhy := containerRoot(ctx, c, opts.Proc)
	ac.hostPID, ac.root = root != "", root
	var ctable *mounts.Table
	if root != "" {
		ctable, _ = fsbound.Within(ctx, time.Second, func() *mounts.Table {
			t, err := mounts.ReadFile(filepath.Join(opts.Proc, strconv.Itoa(c.PID), "mountinfo"))
			if err != nil {
				return nil
			}
			return t
		})
	}
	copts := Options{MaxDepth: opts.MaxDepth, SniffMax: opts.SniffMax, SniffTime: opts.SniffTime, FSTimeout: opts.FSTimeout}
	// An image the catalogue does not know, with no writable mount, keeps
	// whatever it writes in its writable layer: that layer is looked at.
	layer := ac.App == "" && !slices.ContainsFunc(c.Mounts, func(m docker.MountRef) bool {
		return m.RW && (m.Type == docker.MountBind || m.Type == docker.MountVolume || m.Type == docker.MountTmpfs)
	})
	seen := map[[2]uint64]bool{}
	dests := []string{}
	for _, m := range c.Mounts {
		switch m.Type {
		case docker.MountBind, docker.MountVolume, docker.MountTmpfs:
			dests = append(dests, path.Clean(m.Destination))
		}
	}
	for d := range appDirs {
		if !slices.Contains(dests, d) {
			dests = append(dests, d)
		}
	}
	// Deepest first: a mount nested in another (a volume at /data/sub in a
	// bind at /data) keeps its own databases, which the walk of the outer
	// one through the container's root reaches too (dedupe drops them
	// there); the report lists them by destination afterwards.
	slices.SortFunc(dests, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) })
	for _, dest := range dests {
		am := AuditMount{Destination: dest, Catalogue: appDirs[dest]}
		cp := translate(dest, c, inv.Engine)
		read := cp.local
		if i := slices.IndexFunc(c.Mounts, func(m docker.MountRef) bool { return path.Clean(m.Destination) == dest }); i >= 0 {
			m := c.Mounts[i]
			am.Mount = &m
			if v, ok := inv.Volumes[m.Name]; ok && m.Type == docker.MountVolume && v.NetworkFS != "" {
				cp = containerPath{mount: &mounts.Mount{Class: mounts.ClassNetwork, Mountpoint: dest, FSType: v.NetworkFS, Source: v.Device,
					Reason: fmt.Sprintf("volume %s has driver_opts type %s (device %s): a network filesystem mounted on the engine host", m.Name, v.NetworkFS, v.Device)}}
				if read = m.Source; c.State != "running" && c.State != "paused" && c.State != "restarting" {
					// Mounted only while a container uses it: its
					// directory here is not the share.
					read = ""
				}
			}
		}
		var d DataDir
		if read != "" && inv.OnEngineHost && root != "" && !sameFile(ctx, read, root, dest) {
			// A bind source repointed (a symlink changed, a directory
			// renamed) since the container started: the host path is
			// another directory, the container's root is the truth.
			read = ""
		}
		switch {
		case read != "" && inv.OnEngineHost:
			am.ReadVia, am.Local = ReadHostPath, read
			d = discoverBounded(ctx, read, false, copts)
			if cp.mount != nil {
				d.Mount = cp.mount
			}
		case root != "":
			am.ReadVia, am.Local = ReadContainerRoot, root+dest
			d = discoverBounded(ctx, am.Local, false, copts)
			if d.Unresponsive == "" {
				confineToRoot(ctx, &d, root, am.Local)
			}
			if cp.mount == nil {
				// The host filesystem decides: the container's own
				// mount table says which it is.
				cp.mount = classifyInContainer(ctable, dest)
			}
			d.Mount = cp.mount
		default:
			why := rootWhy
			if cp.local != "" {
				why = "the host path " + cp.local + " is not visible here (this is not the engine host), and " + why
			}
			am.NotInspected = why
			if cp.mount == nil {
				// The host filesystem decides, and it is not visible here.
				cp.mount = &mounts.Mount{Class: mounts.ClassUnknown, Mountpoint: dest, Source: cp.local,
					Reason: fmt.Sprintf("the engine host's filesystem under %s decides, and it is not visible here", cp.local)}
			}
			d = DataDir{Path: dest, Mount: cp.mount, Databases: []Database{}, Saved: true, NotInspected: why}
		}
		d.ContainerPath = dest
		dedupe(&d, seen)
		if !holdsSQLite(d) && !am.Catalogue && am.NotInspected == "" {
			continue
		}
		if am.NotInspected != "" && !am.Catalogue && (am.Mount == nil || !am.Mount.RW) {
			continue
		}
		if d.Mount != nil {
			am.Class = d.Mount.Class
		}
		ac.Mounts = append(ac.Mounts, am)
		r.DataDirs = append(r.DataDirs, d)
	}
	if layer {
		auditLayer(ctx, &ac, c, inv, root, rootWhy, copts, seen)
	}
	order := make([]int, len(ac.Mounts))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(ac.Mounts[a].Destination, ac.Mounts[b].Destination) })
	ms, ds := make([]AuditMount, len(order)), make([]DataDir, len(order))
	for i, j := range order {
		ms[i], ds[i] = ac.Mounts[j], r.DataDirs[j]
	}
	ac.Mounts, r.DataDirs = ms, ds
	return ac
}

// auditLayer looks for databases in the writable layer of c, a container
// of an image the catalogue does not know and with no writable mount:
// through its root (root, "" when not readable, rootWhy saying why), on
// the root's own filesystem (not its /proc, /sys, /dev), to copts'
// depth. Each directory holding a database is added to ac as a path on no
// mount (ephemeral-data-dir); a root that could not be read is added as
// "/", not inspected (mount-not-inspected); a root searched to its end
// that holds no database adds nothing, as a mount read that holds none,
// and one whose search left directories or files unread (--max-depth, the
// sniff budget, unreadable directories) is added as "/" with what was
// left.
func auditLayer(ctx context.Context, ac *auditedContainer, c *docker.Container, inv *docker.Inventory, root, rootWhy string, copts Options, seen map[[2]uint64]bool) {
	r := ac.Report
	layerAt := func(dest string) *mounts.Mount { return translate(dest, c, inv.Engine).mount }
	if root == "" {
		why := rootWhy + "; no writable mount: its data is in its writable layer"
		ac.Mounts = append(ac.Mounts, AuditMount{Destination: "/", NotInspected: why})
		r.DataDirs = append(r.DataDirs, DataDir{Path: "/", ContainerPath: "/", Mount: layerAt("/"), Databases: []Database{}, Saved: true, NotInspected: why})
		return
	}
	copts.oneFilesystem = true
	d := discoverBounded(ctx, root, false, copts)
	if d.Unresponsive == "" {
		confineToRoot(ctx, &d, root, root+"/")
	}
	dedupe(&d, seen)
	byDir := map[string][]Database{}
	var dirs []string
	if d.Unresponsive != "" || d.StatError != "" {
		dirs = []string{"/"} // what stopped the walk is said on the root
	}
	for _, db := range d.Databases {
		if db.NotSQLite {
			continue
		}
		dir := path.Dir(strings.TrimPrefix(db.Path, root))
		if byDir[dir] == nil {
			dirs = append(dirs, dir)
		}
		byDir[dir] = append(byDir[dir], db)
	}
	if len(dirs) == 0 && (d.NotSearched > 0 || d.NotSniffed > 0 || len(d.Errors) > 0) {
		// No database found, but not every directory was searched: the
		// root is listed with what was left (scan-depth-limit and the
		// like), not left out as if it held none.
		dirs = []string{"/"}
	}
	for i, dir := range dirs {
		dd := d
		dd.Path = path.Join(root, dir)
		dd.ContainerPath, dd.Resolved, dd.Mount, dd.Databases = dir, dd.Path, layerAt(dir), append([]Database{}, byDir[dir]...)
		if i > 0 {
			// What the one walk could not read is said once.
			dd.Errors, dd.NotSearched, dd.NotSniffed = nil, 0, 0
		}
		ac.Mounts = append(ac.Mounts, AuditMount{Destination: dir, Class: dd.Mount.Class, ReadVia: ReadContainerRoot, Local: dd.Path})
		r.DataDirs = append(r.DataDirs, dd)
	}
}

// auditService lists the paths of svc, a Swarm service with no container
// here, from its spec, as auditPaths lists a container's that cannot be
// read: each writable bind, volume and tmpfs mount and each catalogue data
// directory of its image, or "/" (its writable layer) when it has no
// writable mount; none is inspected: its files are on the nodes that run
// its tasks. Each path's service entry lets the Swarm rules judge the spec
// (replicas, global mode, start-first).
func auditService(ctx context.Context, svc docker.SpecService, inv *docker.Inventory, opts AuditOptions) AuditService {
	c := &docker.Container{Name: svc.Name, Image: svc.Image, State: "service"}
	for _, m := range svc.Mounts {
		c.Mounts = append(c.Mounts, m.MountRef)
	}
	// Nothing of this engine's host is the service's: no path is read.
	away := *inv
	away.OnEngineHost = false
	ac := auditPaths(ctx, c, &away, opts)
	r := ac.Report
	sw := &docker.Swarm{Role: inv.Swarm.Role, NodeID: inv.Swarm.NodeID, ServicesVisible: true, Services: []docker.Service{}}
	r.Container, r.Probes["docker"] = nil, report.ProbeRan
	r.Docker = &docker.Result{Status: docker.StatusRan, Endpoint: inv.Endpoint, Engine: inv.Engine, Writers: []docker.Writer{}, Swarm: sw}
	why := fmt.Sprintf("service %s has no task on this node to read (tasks %s)", svc.Name, rules.TaskList(svc.Tasks))
	for i := range ac.Mounts {
		am := &ac.Mounts[i]
		am.NotInspected, r.DataDirs[i].NotInspected = why, why
		switch {
		case am.Mount == nil: // its writable layer on that node
			sw.Services = append(sw.Services, svc.Service(docker.MountRef{}, false, am.Destination))
		case am.Mount.Type != docker.MountTmpfs:
			shared := false
			for _, m := range svc.Mounts {
				shared = shared || m.Shared && path.Clean(m.Destination) == am.Destination
			}
			sw.Services = append(sw.Services, svc.Service(*am.Mount, shared, am.Destination))
		}
	}
	return AuditService{Service: svc, App: ac.App, Mounts: ac.Mounts, Report: r}
}

// toContainerPaths names r's data directories, databases and findings by
// the paths the container sees (/data, not /proc/PID/root/data): root is
// the /proc/PID/root they were read through. The judging is done; the
// paths are what the report shows. A remedy is a command to run on the
// engine host: there each path of a bind mount or volume of c is its
// source on the host (the path inside the container is valid in neither
// place); a path of no such mount keeps the container's.
func toContainerPaths(r *Report, root string, c *docker.Container) {
	strip := func(s string) string {
		if s == root {
			return "/"
		}
		return strings.ReplaceAll(s, root+"/", "/")
	}
	// Remedies quote each path (shell.Quote): the quoted form of every
	// database and data directory read here, longest first, is swapped
	// for the quoted host path.
	var swaps []string
	for i := range r.DataDirs {
		d := &r.DataDirs[i]
		_, host := hostPathOf(c, d)
		if host == nil {
			continue
		}
		add := func(p string) { swaps = append(swaps, shell.Quote(p), shell.Quote(host(p))) }
		add(d.Path)
		for _, db := range d.Databases {
			add(db.Path)
			add(path.Dir(db.Path))
		}
	}
	type pair struct{ from, to string }
	var ps []pair
	for i := 0; i < len(swaps); i += 2 {
		ps = append(ps, pair{swaps[i], swaps[i+1]})
	}
	slices.SortStableFunc(ps, func(a, b pair) int { return cmp.Compare(len(b.from), len(a.from)) })
	var args []string
	for _, p := range ps {
		args = append(args, p.from, p.to)
	}
	hostSide := strings.NewReplacer(args...)
	for i := range r.DataDirs {
		d := &r.DataDirs[i]
		d.Path, d.Resolved = strip(d.Path), strip(d.Resolved)
		for j := range d.Databases {
			db := &d.Databases[j]
			db.Path, db.Link = strip(db.Path), strip(db.Link)
		}
	}
	for i := range r.Findings {
		f := &r.Findings[i]
		f.Path, f.Message = strip(f.Path), strip(f.Message)
		f.Remedy = slices.Clone(f.Remedy)
		for j := range f.Remedy {
			f.Remedy[j] = strip(hostSide.Replace(f.Remedy[j]))
		}
	}
}

// holdsSQLite reports whether d has a SQLite database, or something that
// stopped its search (unresponsive, unreadable).
func holdsSQLite(d DataDir) bool {
	if d.Unresponsive != "" || d.StatError != "" {
		return true
	}
	for _, db := range d.Databases {
		if !db.NotSQLite {
			return true
		}
	}
	return false
}

// containerRoot is /proc/PID/root of c's first process when this process
// sees the engine host's PID namespace (PID's cgroup names c), else "" and
// why not.
func containerRoot(ctx context.Context, c *docker.Container, proc string) (string, string) {
	if c.PID <= 0 {
		return "", "the container is not running: its root is not readable, and no host path is visible"
	}
	dir := filepath.Join(proc, strconv.Itoa(c.PID))
	ok, answered := fsbound.Within(ctx, time.Second, func() bool {
		b, err := readSmall(filepath.Join(dir, "cgroup"))
		return err == nil && strings.Contains(string(b), c.ID)
	})
	switch {
	case !answered:
		return "", dir + "/cgroup did not answer"
	case !ok:
		return "", fmt.Sprintf("process %d of the engine host is not visible here (run preflight with the host's PID namespace: docker run --pid host)", c.PID)
	}
	root := filepath.Join(dir, "root")
	// Opening the root needs ptrace access to the process (proc(5)): root
	// with CAP_SYS_PTRACE for a process of another user. The root itself
	// is a directory of the container's filesystem: bounded too.
	err, answered := fsbound.Within(ctx, time.Second, func() error {
		f, err := rawfile.OpenDir(root)
		if err == nil {
			f.Close()
		}
		return err
	})
	switch {
	case !answered:
		return root, "" // it is there and does not answer: the discovery says so
	case errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EPERM):
		return "", fmt.Sprintf("%s: permission denied (run preflight as root with --cap-add SYS_PTRACE to read the files of a container that runs as another user)", root)
	case err != nil:
		return "", fmt.Sprintf("%s: %v", root, err)
	}
	return root, ""
}

// sameFile reports whether the host path local is the file the container
// whose root is root has at dest (same device and inode), or could not
// tell within 1s (a stuck filesystem: the host path is read, bounded).
func sameFile(ctx context.Context, local, root, dest string) bool {
	same, answered := fsbound.Within(ctx, time.Second, func() bool {
		hd, hi, err := rawfile.StatInRoot("/", local)
		if err != nil {
			return true // the host path's read says why
		}
		cd, ci, err := rawfile.StatInRoot(root, dest)
		return err != nil || hd == cd && hi == ci
	})
	return same || !answered
}

// readSmall reads at most 64 KiB of a /proc file.
func readSmall(name string) ([]byte, error) {
	f, err := rawfile.OpenAny(name, true)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 64<<10)
	n, err := f.Read(b)
	if n > 0 {
		err = nil
	}
	return b[:n], err
}

// classifyInContainer classifies dest from the container's own mount
// table; unknown when it could not be read.
func classifyInContainer(t *mounts.Table, dest string) *mounts.Mount {
	if t != nil {
		if m, err := t.Classify(dest); err == nil {
			return &m
		}
	}
	return &mounts.Mount{Class: mounts.ClassUnknown, Mountpoint: dest, Reason: "the container's mount table could not be read"}
}

// confineToRoot fixes the paths of d, discovered through a container's
// root (root, the /proc/PID/root) at local: symlinks there are the
// container's, which this process resolves against its own root, so
// resolved paths are the paths as read, and a database is kept only when
// the container resolves its path to the same file (rawfile.StatInRoot):
// one reached through a symlink out of the container's root is another
// file of this machine, dropped with a note.
func confineToRoot(ctx context.Context, d *DataDir, root, local string) {
	d.Resolved = local
	kept := d.Databases[:0]
	stuck := false
	for _, db := range d.Databases {
		if db.Link != "" {
			// found resolved it in this process's root, not the container's.
			d.Errors = append(d.Errors, fmt.Sprintf("%s is a symlink: not followed through the container's root", strings.TrimPrefix(db.Link, root)))
			continue
		}
		rel := strings.TrimPrefix(db.Path, root)
		same, answered := false, false
		if !stuck {
			same, answered = fsbound.Within(ctx, time.Second, func() bool {
				dev, ino, err := rawfile.StatInRoot(root, rel)
				return err == nil && dev == db.Dev && ino == db.Ino
			})
			stuck = !answered
		}
		switch {
		case stuck:
			d.Errors = append(d.Errors, fmt.Sprintf("%s: not confirmed inside the container's root (no answer within 1s): not reported", rel))
			continue
		case !same:
			d.Errors = append(d.Errors, fmt.Sprintf("%s is reached through a symlink the container resolves elsewhere (out of its root, or an absolute link): not read", rel))
			continue
		}
		db.ResolvedPath = db.Path
		kept = append(kept, db)
	}
	d.Databases = kept
	link, answered := fsbound.Within(ctx, time.Second, func() bool {
		fi, err := os.Lstat(local)
		return err == nil && fi.Mode()&os.ModeSymlink != 0
	})
	switch {
	case !answered:
		d.Databases, d.Inspected = []Database{}, false
		d.Unresponsive = local + " did not answer a stat within 1s"
	case link:
		d.Databases, d.Inspected = []Database{}, false
		d.StatError = "the mount destination is a symlink in the container's root: not followed"
	}
}

// auditWriters runs the lock and /proc probes once for every database of
// every report (a process's /proc entries bounded by procTimeout), and
// gives each report the containers and Swarm services that mount its
// data, from the inventory.
func auditWriters(ctx context.Context, all []*Report, inv *docker.Inventory, procTimeout time.Duration) {
	var dbs []*Database
	var dirs []string
	for _, r := range all {
		d, p := writerTargets(r)
		dbs, dirs = append(dbs, d...), append(dirs, p...)
	}
	wopts := WriterOptions{Docker: docker.Options{Mode: docker.ModeOff}, Kube: kube.Options{Mode: kube.ModeOff}, ProcTimeout: procTimeout}
	// One file reached through several containers' paths is probed once
	// (the /proc scan keeps one target per file), and its answer copied to
	// every path that reaches it.
	first := map[[2]uint64]string{}
	alias := map[string]string{}
	unique := dbs[:0:0]
	for _, db := range dbs {
		key := [2]uint64{db.Dev, db.Ino}
		if p, ok := first[key]; ok && db.Ino != 0 {
			alias[db.Path] = p
			continue
		}
		first[key] = db.Path
		unique = append(unique, db)
	}
	f := runWriterProbes(ctx, unique, dirs, wopts)
	copyAliases(f, alias)
	for _, r := range all {
		ac := r.Container
		var targets []docker.HostTarget
		for j := range r.DataDirs {
			d := &r.DataDirs[j]
			m, host := hostPathOf(ac, d)
			if host == nil {
				continue
			}
			targets = append(targets, docker.HostTarget{Label: d.Path, HostPath: host(d.Path), Mount: *m})
			for _, db := range d.Databases {
				targets = append(targets, docker.HostTarget{Label: db.Path, HostPath: host(db.Path), Mount: *m})
			}
		}
		rf := *f
		rf.docker = inv.Writers(targets, ac.ID)
		r.Docker = &rf.docker
		rdbs, _ := writerTargets(r)
		attributeAll(ctx, r, rdbs, &rf, wopts)
		r.Probes["activity"] = report.ProbeOff
		r.Probes["mounts"], r.Probes["sqlitefile"] = report.ProbeRan, report.ProbeRan
	}
}

// copyAliases gives each path of alias (a path to the path probed for the
// same file) the probed path's lock and /proc answers.
func copyAliases(f *writerFacts, alias map[string]string) {
	for p, to := range alias {
		f.locks[p], f.locksErr[p] = f.locks[to], f.locksErr[to]
		if err, ok := f.targetErr[to]; ok {
			f.targetErr[p] = err
		}
		for _, h := range f.procs.Holders {
			if h.Target == absPath(to) {
				h.Target = absPath(p)
				f.procs.Holders = append(f.procs.Holders, h)
			}
		}
		for _, u := range f.procs.Unlinked {
			if u.Target == absPath(to) {
				u.Target = absPath(p)
				f.procs.Unlinked = append(f.procs.Unlinked, u)
			}
		}
	}
}

// hostPathOf is c's mount holding data directory d (read at d.Path, seen
// in the container at d.ContainerPath) and the function that turns a path
// under d.Path into its path on the engine host; nil for a mount with no
// host path (tmpfs, or none).
func hostPathOf(c *docker.Container, d *DataDir) (*docker.MountRef, func(string) string) {
	m := mountOf(c, d.ContainerPath)
	if m == nil || m.Source == "" || m.Type == docker.MountTmpfs {
		return nil, nil
	}
	under := path.Join(m.Source, strings.TrimPrefix(path.Clean(d.ContainerPath), path.Clean(m.Destination)))
	return m, func(p string) string { return path.Join(under, strings.TrimPrefix(p, d.Path)) }
}

// mountOf is c's mount that holds p (a path inside it), or nil.
func mountOf(c *docker.Container, p string) *docker.MountRef {
	var best *docker.MountRef
	for i := range c.Mounts {
		m := &c.Mounts[i]
		d := path.Clean(m.Destination)
		if p == d || strings.HasPrefix(p, d+"/") {
			if best == nil || len(d) > len(path.Clean(best.Destination)) {
				best = m
			}
		}
	}
	return best
}
