//go:build !nocompose

package compose

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/preflight-sqlite/preflight/internal/fsbound"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// Analyze finds the mounts of every service that hold SQLite data and the
// facts the rules judge: host filesystem, volume drivers, sharing,
// platform, declaration positions.
//
// ctx bounds the waits for bind sources to answer (FSTimeout derives from it).
func Analyze(ctx context.Context, l *Loaded, opts Options) (*Analysis, error) {
	p := l.Project
	cat := opts.Catalogue
	if cat == nil {
		cat = Builtin()
	}
	a := &Analysis{
		Project: p.Name, WorkingDir: p.WorkingDir, Files: l.Files, Mounts: []Mount{}, NotJudged: []NotJudged{},
		loaded: l, Live: opts.Live, ctx: ctx,
	}
	for _, s := range p.Services {
		a.Profiles = append(a.Profiles, s.Profiles...)
	}
	a.Profiles = uniq(a.Profiles)
	a.Platform = platformOf(opts)
	a.locator = newLocator(l.Files, p.WorkingDir, p.Environment)

	table := opts.HostMounts
	switch {
	case opts.NoDisk:
		a.HostMounts = "not read (files from another machine)"
	case opts.HostMountsErr != nil:
		a.HostMounts = "unreadable: " + opts.HostMountsErr.Error()
	case table == nil:
		t, err := mounts.ReadSelf()
		if err != nil {
			a.HostMounts = "unreadable: " + err.Error()
		} else {
			table = t
			a.HostMounts = "/proc/self/mountinfo"
		}
	default:
		a.HostMounts = "given"
	}

	vols := map[string]*Volume{}
	for key, v := range p.Volumes {
		vols[key] = volumeFact(key, v)
	}

	names := make([]string, 0, len(p.Services))
	for n := range p.Services {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		a.Mounts = append(a.Mounts, analyzeService(p.Services[name], opts, cat, vols, table, a)...)
	}
	for i := range a.Mounts {
		m := &a.Mounts[i]
		if m.Type == TypeNone {
			continue
		}
		if f, err := a.locator.locate(m.Service, m.Target); err == nil {
			syn := "short"
			if f.item.long {
				syn = "long"
			}
			m.Declared = &Location{File: f.decl.doc.path, Line: f.item.node.Line, Column: f.item.node.Column,
				Service: f.decl.name, Syntax: syn, Aliased: f.item.aliased}
			if f.item.rawSource != "" && f.item.rawSource != m.Source {
				m.RawSource = f.item.rawSource
				m.Default = varDefault(f.item.rawSource)
			}
		}
	}
	a.bySource(table, opts)
	a.NotJudged = notJudged(a.Mounts, opts.NoDisk, a.Platform.Kind == PlatformLinux)
	a.Warnings = l.Warnings
	shared(a.Mounts)
	deploy(a.Mounts, p.Services)
	if opts.Live != nil {
		live(a.Mounts, opts.Live)
	}
	return a, nil
}

func uniq(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func platformOf(opts Options) Platform {
	switch {
	case opts.Platform == PlatformDesktop || opts.Platform == PlatformLinux:
		pl := Platform{Kind: opts.Platform, How: "flag"}
		if opts.Engine != nil {
			pl.Engine = opts.Engine.Kind
		}
		return pl
	case opts.Engine != nil && opts.Engine.Kind != docker.KindUnknown:
		pl := Platform{Kind: PlatformLinux, How: "engine", Engine: opts.Engine.Kind}
		if opts.Engine.CrossesVM {
			pl.Kind = PlatformDesktop
		}
		return pl
	}
	return Platform{Kind: PlatformUnknown, How: "none"}
}

// volumeFact describes a top-level volume.
func volumeFact(key string, v types.VolumeConfig) *Volume {
	f := &Volume{Key: key, Name: v.Name, Driver: v.Driver, External: bool(v.External)}
	if f.Name == "" {
		f.Name = key
	}
	if len(v.DriverOpts) > 0 {
		f.DriverOpts = map[string]string{}
		for k, val := range v.DriverOpts {
			f.DriverOpts[k] = val
		}
	}
	typ := strings.ToLower(v.DriverOpts["type"])
	switch {
	case v.Driver != "" && v.Driver != "local":
		f.NetworkFS = v.Driver
	case typ == "nfs" || typ == "nfs4" || typ == "cifs" || typ == "smb3" || typ == "smbfs":
		f.NetworkFS = typ
	case strings.Contains(v.DriverOpts["o"], "addr="):
		f.NetworkFS = "network (o: addr=...)"
	}
	if f.NetworkFS == "" && hasBindOpt(v.DriverOpts["o"]) && v.DriverOpts["device"] != "" {
		f.BindDevice = v.DriverOpts["device"]
	}
	return f
}

func hasBindOpt(o string) bool {
	for _, x := range strings.Split(o, ",") {
		if x = strings.TrimSpace(x); x == "bind" || x == "rbind" {
			return true
		}
	}
	return false
}

// dataDir is a container path that holds SQLite data for a service.
type dataDir struct {
	path       string
	confidence Confidence
	rule, why  string
	app        *AppRef
}

// dataDirs are a service's data directories, each path once, at the
// highest confidence a rule gave it (the first rule to give it keeps a
// tie).
type dataDirs []dataDir

// add adds p, an absolute container path; others are ignored.
func (ds *dataDirs) add(p string, c Confidence, rule, why string, app *AppRef) {
	p = strings.TrimSpace(p)
	if p == "" || !path.IsAbs(p) {
		return
	}
	p = path.Clean(p)
	for i := range *ds {
		if (*ds)[i].path == p {
			if c.rank() > (*ds)[i].confidence.rank() {
				(*ds)[i] = dataDir{p, c, rule, why, app}
			}
			return
		}
	}
	*ds = append(*ds, dataDir{p, c, rule, why, app})
}

// analyzeService returns the mounts of service s, each data directory on
// the deepest mount covering it (or on a TypeNone mount of its own), with
// the facts the rules judge.
func analyzeService(s types.ServiceConfig, opts Options, cat *Catalogue, vols map[string]*Volume, table *mounts.Table, a *Analysis) []Mount {
	env := serviceEnv(s)
	dirs := declaredDirs(s, opts.DataDirs, env)
	app, ref := catalogueDirs(s, cat, env, &dirs)
	out := placeDirs(s, dirs, serviceMounts(s, vols, app != nil))
	for i := range out {
		if out[i].Type != TypeNone {
			a.mountFacts(out, i, opts, app, ref, table)
		}
	}
	return out
}

// serviceEnv returns the service's environment; a variable without a
// value is "".
func serviceEnv(s types.ServiceConfig) map[string]string {
	env := map[string]string{}
	for k, v := range s.Environment {
		if v != nil {
			env[k] = *v
		} else {
			env[k] = ""
		}
	}
	return env
}

// declaredDirs returns the data directories declared for service s: by
// --data-dir (dataDirFlags), the io.preflight.data-dir label, a preflight
// run --data-dir command line, or PREFLIGHT_DATA_DIR in env.
func declaredDirs(s types.ServiceConfig, dataDirFlags []string, env map[string]string) dataDirs {
	var dirs dataDirs
	for _, d := range dataDirFlags {
		svc, target, ok := strings.Cut(d, ":")
		if !ok {
			target, svc = d, ""
		}
		if svc != "" && svc != s.Name {
			continue
		}
		if svc == "" && !coveredBy(path.Clean(target), s.Volumes) {
			continue
		}
		dirs.add(target, Declared, RuleFlag, "--data-dir "+d, nil)
	}
	if l := s.Labels[LabelDataDir]; l != "" {
		for _, p := range strings.Split(l, ",") {
			dirs.add(p, Declared, RuleLabel, "label "+LabelDataDir+"="+l, nil)
		}
	}
	for _, p := range PreflightRunDirs(append(append([]string{}, s.Entrypoint...), s.Command...)) {
		dirs.add(p, Declared, RulePreflightRun, "the service runs preflight run --data-dir "+p, nil)
	}
	if v := env["PREFLIGHT_DATA_DIR"]; v != "" {
		for _, p := range strings.Split(v, ",") {
			dirs.add(p, Declared, RulePreflightRun, "environment PREFLIGHT_DATA_DIR="+v, nil)
		}
	}
	return dirs
}

// catalogueDirs adds to dirs the data directories the catalogue knows for
// the service's image (under env: moved by a setting, none when a setting
// selects another database engine), and returns the matching entry and
// its reference; nil and nil when the image is not in the catalogue.
func catalogueDirs(s types.ServiceConfig, cat *Catalogue, env map[string]string, dirs *dataDirs) (*App, *AppRef) {
	app, how := cat.MatchHow(s.Image)
	if app == nil {
		return nil, nil
	}
	ref := &AppRef{Name: app.Name, Docs: app.Docs, Source: app.Source, Note: app.Note, Match: how}
	ref.OtherEngine = app.EngineSwitch(env)
	if ref.OtherEngine != "" {
		return app, ref
	}
	ds, moved := app.DataDirsUnder(env)
	ref.MovedBy = moved
	is := "is"
	if how == MatchName {
		is = "is named"
	}
	for _, d := range ds {
		why := fmt.Sprintf("image %s %s %s, which keeps SQLite in %s", s.Image, is, app.Name, d)
		if moved != "" {
			why += " (moved by " + moved + ")"
		}
		dirs.add(d, Catalogued, RuleCatalogue, why, ref)
	}
	return app, ref
}

// serviceMounts returns the service's volumes (bind, volume, ...) and
// tmpfs mounts; known says its image is in the catalogue.
func serviceMounts(s types.ServiceConfig, vols map[string]*Volume, known bool) []Mount {
	var out []Mount
	for _, v := range s.Volumes {
		m := Mount{Service: s.Name, Image: s.Image, Type: v.Type, Target: path.Clean(v.Target), ReadWrite: !v.ReadOnly, known: known}
		switch v.Type {
		case types.VolumeTypeBind:
			m.Source = v.Source
		case types.VolumeTypeVolume:
			m.Source = v.Source
			if vf := vols[v.Source]; vf != nil {
				c := *vf
				m.Volume = &c
			}
		}
		out = append(out, m)
	}
	for _, t := range s.Tmpfs {
		t, _, _ = strings.Cut(t, ":")
		out = append(out, Mount{Service: s.Name, Image: s.Image, Type: types.VolumeTypeTmpfs, Target: path.Clean(t), ReadWrite: true})
	}
	return out
}

// placeDirs marks the deepest mount in out covering each data directory
// (and the mounts nested inside it, unless they hold logs or media), or
// appends a TypeNone mount for a data directory no mount covers.
func placeDirs(s types.ServiceConfig, dirs []dataDir, out []Mount) []Mount {
	for _, d := range dirs {
		best := -1
		for i := range out {
			if within(d.path, out[i].Target) && (best < 0 || len(out[i].Target) > len(out[best].Target)) {
				best = i
			}
		}
		if best < 0 && d.confidence == Catalogued && (anyCovered(dirs, d.app, out) || d.app.Match == MatchName) {
			// An app with several possible data directories (rootful and
			// rootless images, optional databases) that has one of them
			// mounted: the others are not in use. Another publisher's
			// image (matched by name) may keep its data elsewhere: only
			// its known data paths that are mounted are judged.
			continue
		}
		if best < 0 {
			out = append(out, Mount{Service: s.Name, Image: s.Image, Type: TypeNone, Target: d.path, ReadWrite: true,
				DataDir: true, Confidence: d.confidence, Rule: d.rule, Why: d.why, App: d.app, DataPath: d.path})
			continue
		}
		mark(&out[best], d)
		// Mounts nested inside the data directory are part of it, unless
		// they hold logs or media.
		for i := range out {
			if i != best && out[i].Type != TypeNone && within(out[i].Target, d.path) && out[i].Target != d.path && logsOrMedia(out[i].Target) == "" {
				mark(&out[i], dataDir{out[i].Target, d.confidence, d.rule, d.why + " (mounted below it)", d.app})
			}
		}
	}
	return out
}

// mountFacts states what is known of mount out[i] (not TypeNone) of a
// service whose catalogue entry is app (ref its reference; both nil when
// none): the SQLite files in its bind source, a well-known data target,
// another database engine, logs or media nested in a data directory,
// read-only, and the host filesystem of a data directory's bind source or
// bind device.
func (a *Analysis) mountFacts(out []Mount, i int, opts Options, app *App, ref *AppRef, table *mounts.Table) {
	m := &out[i]
	if m.Type == types.VolumeTypeBind && !opts.NoDisk {
		a.readBindSource(m, opts.FSTimeout)
	}
	if !m.DataDir && app == nil && m.NotData == "" {
		if why := wellKnown(m.Target); why != "" {
			mark(m, dataDir{m.Target, Possible, RuleWellKnown, why, nil})
		}
	}
	if app != nil && ref.OtherEngine != "" && m.App == nil && !m.DataDir {
		for _, d := range app.DataDirs {
			if within(d, m.Target) || within(m.Target, d) {
				m.App = ref
				m.NotData = fmt.Sprintf("%s uses another database engine (%s)", app.Name, ref.OtherEngine)
			}
		}
	}
	if why := logsOrMedia(m.Target); !m.DataDir && why != "" {
		for j := range out {
			if out[j].DataDir && out[j].Target != m.Target && within(m.Target, out[j].Target) {
				m.NotData = fmt.Sprintf("nested inside data directory %s and holds %s", out[j].Target, why)
			}
		}
	}
	if m.DataDir && !m.ReadWrite {
		m.NotData = "mounted read-only"
		m.DataDir = false
	}
	if m.DataDir && m.Type == types.VolumeTypeBind && !opts.NoDisk && m.HostFSError == "" {
		classifyHost(m, m.Source, table, a.HostMounts)
	}
	if m.DataDir && m.Volume != nil && m.Volume.BindDevice != "" && !opts.NoDisk {
		dev := m.Volume.BindDevice
		if !filepath.IsAbs(dev) {
			dev = filepath.Join(a.WorkingDir, dev)
		}
		if err := a.answers(dev, opts.FSTimeout); err != nil {
			m.HostFSError = err.Error()
		} else {
			classifyHost(m, dev, table, a.HostMounts)
		}
	}
}

// readBindSource reads bind mount m's source on this machine: whether it
// answers within timeout, exists, and holds SQLite databases (which make
// it a data directory, found).
func (a *Analysis) readBindSource(m *Mount, timeout time.Duration) {
	if err := a.answers(m.Source, timeout); err != nil {
		m.HostFSError = err.Error()
	} else if _, err := os.Stat(m.Source); errors.Is(err, fs.ErrNotExist) {
		m.SourceMissing = true
	} else if dbs := sqliteFiles(m.Source); len(dbs) > 0 {
		m.Databases = dbs
		if !m.DataDir || m.Confidence.rank() < Found.rank() {
			mark(m, dataDir{m.Target, Found, RuleSQLiteFiles, fmt.Sprintf("the bind source %s holds SQLite databases (%s)", m.Source, strings.Join(baseNames(dbs), ", ")), nil})
		}
	}
}

// anyCovered reports whether another data directory of the same catalogue
// app is on one of the mounts.
func anyCovered(dirs []dataDir, app *AppRef, out []Mount) bool {
	for _, o := range dirs {
		if o.app != app || o.confidence != Catalogued {
			continue
		}
		for _, m := range out {
			if m.Type != TypeNone && within(o.path, m.Target) {
				return true
			}
		}
	}
	return false
}

func mark(m *Mount, d dataDir) {
	if m.DataDir && m.Confidence.rank() >= d.confidence.rank() {
		return
	}
	m.DataDir = true
	m.Confidence, m.Rule, m.Why, m.DataPath = d.confidence, d.rule, d.why, d.path
	if d.app != nil {
		m.App = d.app
	}
	m.NotData = ""
}

// answers reports whether the host path p answers a stat and a directory
// read within timeout (fsbound.Responsive), asking once per path.
func (a *Analysis) answers(p string, timeout time.Duration) error {
	if a.answered == nil {
		a.answered = map[string]error{}
	}
	err, ok := a.answered[p]
	if !ok {
		err = fsbound.Responsive(a.ctx, p, timeout)
		a.answered[p] = err
	}
	return err
}

func classifyHost(m *Mount, hostPath string, table *mounts.Table, status string) {
	if windowsPath(hostPath) {
		m.HostFS = windowsHostFS(hostPath)
		return
	}
	if table == nil {
		m.HostFSError = "host mount table " + status
		return
	}
	res, err := mounts.ResolvePath(hostPath)
	if err != nil {
		m.HostFSError = err.Error()
		return
	}
	c, err := table.Classify(res)
	if err != nil {
		m.HostFSError = err.Error()
		return
	}
	m.HostFS = &c
}

// coveredBy reports whether some mount's target is p or above it.
func coveredBy(p string, vs []types.ServiceVolumeConfig) bool {
	for _, v := range vs {
		if within(p, path.Clean(v.Target)) {
			return true
		}
	}
	return false
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// wellKnown says why target is a usual place for application data, or "".
func wellKnown(target string) string {
	t := path.Clean(target)
	switch {
	case t == "/data" || t == "/config" || t == "/app/data":
		return t + " is a usual data directory"
	case strings.HasPrefix(t, "/var/lib/") && strings.Count(t, "/") >= 3:
		return t + " is under /var/lib, where applications keep state"
	case sqlitefile.LooksLikeDatabase(t):
		return t + " is named like a database file"
	}
	return ""
}

// logsOrMedia says what a directory nested in a data directory holds when
// its name says logs or media, else "".
func logsOrMedia(target string) string {
	base := strings.ToLower(path.Base(target))
	switch base {
	case "log", "logs", "cache", "tmp", "transcodes", "transcode":
		return "logs or caches (" + base + ")"
	case "media", "movies", "tv", "music", "photos", "pictures", "videos", "downloads", "books", "library",
		"uploads", "files", "recordings", "backups", "backup", "metadata", "podcasts", "audiobooks", "comics":
		return "media or files (" + base + ")"
	}
	return ""
}

// sqliteFiles lists the SQLite databases under a bind source (two levels).
func sqliteFiles(dir string) []string {
	res, err := sqlitefile.Discover([]string{dir}, sqlitefile.DiscoverOptions{MaxDepth: 2})
	if err != nil {
		return nil
	}
	var out []string
	for _, db := range res.Databases {
		if !db.NotSQLite && !db.New && db.Err == "" {
			out = append(out, db.Path)
		}
	}
	return out
}

func baseNames(ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = filepath.Base(p)
	}
	return out
}

// varDefault returns the default of a ${VAR:-default} or ${VAR-default}
// source, or "".
func varDefault(raw string) string {
	if !strings.HasPrefix(raw, "${") || !strings.HasSuffix(raw, "}") {
		return ""
	}
	in := raw[2 : len(raw)-1]
	for _, sep := range []string{":-", "-"} {
		if _, d, ok := strings.Cut(in, sep); ok {
			return d
		}
	}
	return ""
}

// sourceKey is what two mounts must share to reach the same data.
func sourceKey(m *Mount) (kind, key string) {
	switch {
	case m.Type == types.VolumeTypeBind:
		return "bind", filepath.Clean(m.Source)
	case m.Type == types.VolumeTypeVolume && m.Volume != nil && m.Volume.BindDevice != "":
		return "bind", filepath.Clean(m.Volume.BindDevice)
	case m.Type == types.VolumeTypeVolume && m.Volume != nil:
		return "volume", m.Volume.Name
	}
	return "", ""
}

// shared fills SharedWith: other services that mount the same volume or an
// equal or nested bind source read-write, for data directory mounts.
func shared(ms []Mount) {
	for i := range ms {
		a := &ms[i]
		if !a.DataDir || !a.ReadWrite {
			continue
		}
		ka, sa := sourceKey(a)
		if ka == "" {
			continue
		}
		for j := range ms {
			b := &ms[j]
			if i == j || b.Service == a.Service || !b.ReadWrite {
				continue
			}
			kb, sb := sourceKey(b)
			if kb != ka {
				continue
			}
			same := sa == sb
			if ka == "bind" {
				same = same || within(sa, sb) || within(sb, sa)
			}
			if same {
				a.SharedWith = append(a.SharedWith, b.Key())
			}
		}
	}
}

// live attaches the running containers' mounts and the other containers
// that write the same source.
func live(ms []Mount, res *docker.ProjectResult) {
	all := append(append([]docker.Container{}, res.Containers...), res.Others...)
	for i := range ms {
		m := &ms[i]
		for _, c := range res.Containers {
			if c.ComposeService != m.Service {
				continue
			}
			for _, cm := range c.Mounts {
				if path.Clean(cm.Destination) != m.Target {
					continue
				}
				src := cm.Source
				if cm.Type == docker.MountVolume {
					src = cm.Name
				}
				m.Live = append(m.Live, LiveMount{Container: c.Name, Type: cm.Type, Source: src, RW: cm.RW})
				if !m.DataDir || !cm.RW || cm.Type == docker.MountTmpfs {
					continue
				}
				for _, o := range all {
					if o.ID == c.ID || o.ComposeService == m.Service && o.ComposeProject == c.ComposeProject {
						continue
					}
					for _, om := range o.Mounts {
						if !om.RW {
							continue
						}
						hit := cm.Type == docker.MountVolume && om.Type == docker.MountVolume && om.Name == cm.Name ||
							cm.Type == docker.MountBind && om.Type == docker.MountBind && (within(om.Source, cm.Source) || within(cm.Source, om.Source))
						if hit {
							who := o.Name
							if o.ComposeService != "" {
								who = fmt.Sprintf("%s (compose project %s service %s)", o.Name, o.ComposeProject, o.ComposeService)
							}
							m.LiveWriters = append(m.LiveWriters, who+" at "+om.Destination)
						}
					}
				}
			}
		}
		m.LiveWriters = uniq(m.LiveWriters)
	}
}

// bySource carries what is known about a bind source to every service
// that mounts it: a read-write mount of a host directory that holds
// another service's data directory (found, declared or catalogued; not a
// guess) holds that data too, whatever its image (a one-shot chown
// service, a backup or an exporter).
func (a *Analysis) bySource(table *mounts.Table, opts Options) {
	for i := range a.Mounts {
		m := &a.Mounts[i]
		if !m.DataDir || m.Confidence.rank() < Catalogued.rank() {
			continue
		}
		km, sm := sourceKey(m)
		if km != "bind" {
			continue
		}
		for j := range a.Mounts {
			o := &a.Mounts[j]
			ko, so := sourceKey(o)
			if i == j || o.DataDir || o.NotData != "" || !o.ReadWrite || ko != "bind" || !(within(so, sm) || within(sm, so)) {
				continue
			}
			mark(o, dataDir{o.Target, m.Confidence, m.Rule,
				fmt.Sprintf("its bind source %s is also mounted by %s: %s", so, m.Key(), m.Why), m.App})
			o.Via = m.Key()
			if o.Type == types.VolumeTypeBind && !opts.NoDisk && o.HostFSError == "" {
				classifyHost(o, o.Source, table, a.HostMounts)
			}
		}
	}
}

// notJudged lists the read-write binds whose content is unknown (not read
// from disk, or absent) of services whose images are not catalogued,
// unless a service that knows the source mounts it. On a native Linux
// engine (linux) that includes a bind that is only possibly a data
// directory (Possible): no bind rule judges a local host directory, so
// its unknown content would otherwise pass as safe.
func notJudged(ms []Mount, noDisk, linux bool) []NotJudged {
	out := []NotJudged{}
	for i := range ms {
		m := &ms[i]
		if m.Type != types.VolumeTypeBind || m.DataDir && !(linux && m.Confidence == Possible) || m.NotData != "" || !m.ReadWrite || m.known {
			continue
		}
		src := filepath.Clean(m.Source)
		why := ""
		switch {
		case noDisk:
			why = "bind sources are not read (files from another machine)"
		case m.HostFSError != "":
			why = m.HostFSError
		case m.SourceMissing:
			why = "the source does not exist on this machine"
		default:
			continue // read: no SQLite in it
		}
		known := false
		for j := range ms {
			kj, sj := sourceKey(&ms[j])
			known = known || i != j && kj == "bind" && ms[j].known && (within(sj, src) || within(src, sj))
		}
		if !known {
			out = append(out, NotJudged{Mount: m.Key(), Source: src, Why: why})
		}
	}
	return out
}
