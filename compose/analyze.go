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

// Confidence says how sure the analysis is that a mount holds SQLite data,
// highest first.
type Confidence string

// Confidences, highest first.
const (
	// Declared: --data-dir, the io.preflight.data-dir label, or the
	// service runs preflight run --data-dir (or sets PREFLIGHT_DATA_DIR).
	Declared Confidence = "declared"
	// Found: the bind source on disk holds SQLite files (header magic).
	Found Confidence = "found"
	// Catalogued: the image is in the catalogue of applications that keep
	// SQLite in a known directory.
	Catalogued Confidence = "catalogue"
	// Possible: a well-known data target (/data, /config, /var/lib/*,
	// /app/data, *.db, *.sqlite).
	Possible Confidence = "possible"
)

func (c Confidence) rank() int {
	switch c {
	case Declared:
		return 4
	case Found:
		return 3
	case Catalogued:
		return 2
	case Possible:
		return 1
	}
	return 0
}

// Rules that find data directories, in Mount.Rule.
const (
	RuleFlag         = "data-dir-flag"
	RuleLabel        = "label"
	RulePreflightRun = "preflight-run"
	RuleSQLiteFiles  = "sqlite-files"
	RuleCatalogue    = "catalogue"
	RuleWellKnown    = "well-known"
)

// LabelDataDir is the service label naming data directories
// (comma-separated container paths).
const LabelDataDir = "io.preflight.data-dir"

// Mount types in Mount.Type besides Compose's (bind, volume, tmpfs, npipe,
// cluster, image): TypeNone is a data directory on no mount at all.
const TypeNone = "none"

// Platform says whether host bind mounts cross a VM boundary.
type Platform struct {
	// Kind is "desktop" (the engine runs in a VM: Docker Desktop, OrbStack,
	// Colima, Lima, Rancher Desktop, a Podman machine), "linux" (a native
	// engine: binds are host directories) or "unknown" (either).
	Kind string `json:"kind"`
	// How is how Kind was decided: "engine" (Docker API), "flag"
	// (--platform), or "none".
	How string `json:"how"`
	// Engine is the engine kind when the Docker API answered.
	Engine string `json:"engine,omitempty"`
}

// Platform kinds.
const (
	PlatformDesktop = "desktop"
	PlatformLinux   = "linux"
	PlatformUnknown = "unknown"
)

// Volume is a top-level named volume as the project defines it.
type Volume struct {
	// Key is the name in the compose file; Name what the engine calls it
	// (project_key unless name: or external).
	Key        string            `json:"key"`
	Name       string            `json:"name"`
	Driver     string            `json:"driver,omitempty"`
	DriverOpts map[string]string `json:"driver_opts,omitempty"`
	External   bool              `json:"external,omitempty"`
	// NetworkFS is the driver_opts type when it is a network filesystem
	// (nfs, nfs4, cifs, smb3), or the driver when it is not "local".
	NetworkFS string `json:"network_fs,omitempty"`
	// BindDevice is the host path of a local volume with driver_opts
	// o: bind and device: PATH (a bind mount in disguise).
	BindDevice string `json:"bind_device,omitempty"`
}

// AppRef names the catalogue entry that matched a service's image.
type AppRef struct {
	Name string `json:"name"`
	Docs string `json:"docs,omitempty"`
	// Source is where the application says its SQLite files live.
	Source string `json:"source,omitempty"`
	Note   string `json:"note,omitempty"`
	// Match is how the image matched: "image" (one of the entry's
	// images) or "name" (the application's name is a path segment of the
	// image's repository: another publisher's image).
	Match string `json:"match,omitempty"`
	// OtherEngine is the environment setting that moves the application to
	// another database engine (NAME=value), when set.
	OtherEngine string `json:"other_engine,omitempty"`
	// MovedBy is the setting that moved the data directory, when set.
	MovedBy string `json:"moved_by,omitempty"`
}

// Location is where a mount is declared.
type Location struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
	// Service is the service that declares it in File (an extends base
	// can be another service).
	Service string `json:"service"`
	// Syntax is "short" or "long".
	Syntax string `json:"syntax"`
	// Aliased is set when the entry is reached through a YAML alias or
	// merge key.
	Aliased bool `json:"aliased,omitempty"`
}

// LiveMount is a mount of a running container of the service.
type LiveMount struct {
	Container string `json:"container"`
	Type      string `json:"type"`
	// Source is the host path (bind) or the volume name (volume).
	Source string `json:"source"`
	RW     bool   `json:"rw"`
}

// Mount is one service × mount, or a data directory on no mount.
type Mount struct {
	Service string `json:"service"`
	Image   string `json:"image,omitempty"`
	// Type is bind, volume, tmpfs (npipe, cluster, image), or none.
	Type string `json:"type"`
	// Source is the host path of a bind (absolute), the volume key of a
	// volume, "" otherwise.
	Source string `json:"source,omitempty"`
	// RawSource is the source as written, before interpolation
	// (${DATA_DIR:-./data}); Default is the default such a variable names.
	RawSource string `json:"raw_source,omitempty"`
	Default   string `json:"default,omitempty"`
	Target    string `json:"target"`
	ReadWrite bool   `json:"read_write"`
	// DataDir says the mount holds SQLite data; Confidence and Rule say
	// how sure and which rule found it, DataPath the data directory it
	// holds (Target or a directory below it).
	DataDir    bool       `json:"data_dir"`
	Confidence Confidence `json:"confidence,omitempty"`
	Rule       string     `json:"rule,omitempty"`
	DataPath   string     `json:"data_path,omitempty"`
	Why        string     `json:"why,omitempty"`
	App        *AppRef    `json:"app,omitempty"`
	// NotData says why a mount that looked like data is not judged as a
	// data directory (read-only, nested logs or media, another engine).
	NotData string `json:"not_data,omitempty"`
	// Databases are SQLite files found under a bind source.
	Databases []string `json:"databases,omitempty"`
	// HostFS is the host filesystem of a bind source (or a volume's bind
	// device), classified from this machine's mount table.
	HostFS *mounts.Mount `json:"host_fs,omitempty"`
	// HostFSError says why HostFS is missing: the source did not answer
	// within Options.FSTimeout, the mount table could not be read, the
	// path could not be resolved.
	HostFSError string  `json:"host_fs_error,omitempty"`
	Volume      *Volume `json:"volume,omitempty"`
	// SharedWith lists the other service mounts (SERVICE:TARGET) that
	// mount the same volume or bind source read-write.
	SharedWith []string `json:"shared_with,omitempty"`
	// Declared is where the mount is written; nil for TypeNone or when it
	// could not be found.
	Declared *Location `json:"declared,omitempty"`
	// Live lists the mounts of the service's running containers at Target
	// (--live), and LiveWriters other running containers that mount the
	// same source read-write.
	Live        []LiveMount `json:"live,omitempty"`
	LiveWriters []string    `json:"live_writers,omitempty"`
	// Via is the mount (SERVICE:TARGET) whose data directory this mount's
	// bind source holds, when that is how it was found (bySource).
	Via string `json:"via,omitempty"`
	// SourceMissing says the bind source does not exist on this machine
	// (it is created empty when the service starts).
	SourceMissing bool `json:"source_missing,omitempty"`
	// Findings are the IDs of the findings made about this mount (set by
	// the caller that judges it).
	Findings []string `json:"findings,omitempty"`

	// known: the service's image is in the catalogue (its data
	// directories, or that it keeps no SQLite, are known).
	known bool
}

// NotJudged is a mount whose content is unknown, so no rule could judge
// it: a read-write bind whose source was not read (absent on this machine,
// not answering, files from another machine) of services whose images are
// not in the catalogue.
type NotJudged struct {
	// Mount is SERVICE:TARGET; Source the host path.
	Mount  string `json:"mount"`
	Source string `json:"source"`
	// Why is why its content is unknown.
	Why string `json:"why"`
}

// Key returns SERVICE:TARGET.
func (m *Mount) Key() string { return m.Service + ":" + m.Target }

// Analysis is what Analyze found: the facts the compose rules judge.
type Analysis struct {
	Project    string   `json:"project"`
	WorkingDir string   `json:"working_dir"`
	Files      []string `json:"files"`
	Profiles   []string `json:"profiles,omitempty"`
	Platform   Platform `json:"platform"`
	// HostMounts says where host filesystems were classified from, or why
	// not.
	HostMounts string  `json:"host_mounts"`
	Mounts     []Mount `json:"mounts"`
	// NotJudged lists the mounts no rule could judge (their content is
	// unknown); never empty when a verdict of ok would hide them.
	NotJudged []NotJudged `json:"not_judged"`
	// Warnings are what Compose's loader warned about (an unset
	// variable, an obsolete version: key), in its words.
	Warnings []string `json:"warnings,omitempty"`
	// Live is the engine's answer for --live.
	Live *docker.ProjectResult `json:"live,omitempty"`
	// Rewrites are the proposed named-volume rewrites (Plan).
	Rewrites []Rewrite `json:"rewrites,omitempty"`
	// Written are the rewrites compose --write made; the rest of the
	// analysis is then the project as written.
	Written []Rewrite `json:"written,omitempty"`

	loaded  *Loaded
	locator *locator
	// answered caches fsbound.Responsive per bind source.
	answered map[string]error
	// ctx is Analyze's: when it ends, bind sources not yet asked are not
	// waited for.
	ctx context.Context
}

// Options configure Analyze.
type Options struct {
	// DataDirs are --data-dir values: TARGET (every service mounting it)
	// or SERVICE:TARGET.
	DataDirs []string
	// Catalogue is the app catalogue; nil means Builtin().
	Catalogue *Catalogue
	// Platform is --platform: "desktop", "linux" or "" (ask Engine).
	Platform string
	// Engine is the engine recognised through the Docker API, or nil.
	Engine *docker.Engine
	// HostMounts is the host mount table for classifying bind sources;
	// nil reads /proc/self/mountinfo. HostMountsErr, when set, says the
	// table could not be read.
	HostMounts    *mounts.Table
	HostMountsErr error
	// NoDisk skips reading bind sources (rule 4, host filesystems): for
	// files from another machine and for tests.
	NoDisk bool
	// FSTimeout bounds how long a bind source may take to answer a stat
	// and a directory read (a stuck FUSE daemon, a dead NFS server); one
	// that does not is left unread, with Mount.HostFSError saying so. Zero
	// means 5 s.
	FSTimeout time.Duration
	// Live is the engine's list of the project's containers (--live).
	Live *docker.ProjectResult
}

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
	a.NotJudged = notJudged(a.Mounts, opts.NoDisk)
	a.Warnings = l.Warnings
	shared(a.Mounts)
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

func analyzeService(s types.ServiceConfig, opts Options, cat *Catalogue, vols map[string]*Volume, table *mounts.Table, a *Analysis) []Mount {
	env := map[string]string{}
	for k, v := range s.Environment {
		if v != nil {
			env[k] = *v
		} else {
			env[k] = ""
		}
	}
	var dirs []dataDir
	add := func(p string, c Confidence, rule, why string, app *AppRef) {
		p = strings.TrimSpace(p)
		if p == "" || !path.IsAbs(p) {
			return
		}
		p = path.Clean(p)
		for i := range dirs {
			if dirs[i].path == p {
				if c.rank() > dirs[i].confidence.rank() {
					dirs[i] = dataDir{p, c, rule, why, app}
				}
				return
			}
		}
		dirs = append(dirs, dataDir{p, c, rule, why, app})
	}
	for _, d := range opts.DataDirs {
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
		add(target, Declared, RuleFlag, "--data-dir "+d, nil)
	}
	if l := s.Labels[LabelDataDir]; l != "" {
		for _, p := range strings.Split(l, ",") {
			add(p, Declared, RuleLabel, "label "+LabelDataDir+"="+l, nil)
		}
	}
	for _, p := range preflightRunDirs(append(append([]string{}, s.Entrypoint...), s.Command...)) {
		add(p, Declared, RulePreflightRun, "the service runs preflight run --data-dir "+p, nil)
	}
	if v := env["PREFLIGHT_DATA_DIR"]; v != "" {
		for _, p := range strings.Split(v, ",") {
			add(p, Declared, RulePreflightRun, "environment PREFLIGHT_DATA_DIR="+v, nil)
		}
	}
	var app *App
	var ref *AppRef
	var how string
	if app, how = cat.MatchHow(s.Image); app != nil {
		ref = &AppRef{Name: app.Name, Docs: app.Docs, Source: app.Source, Note: app.Note, Match: how}
		ref.OtherEngine = app.engineSwitch(env)
		if ref.OtherEngine == "" {
			ds, moved := app.dataDirs(env)
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
				add(d, Catalogued, RuleCatalogue, why, ref)
			}
		}
	}

	var out []Mount
	for _, v := range s.Volumes {
		m := Mount{Service: s.Name, Image: s.Image, Type: v.Type, Target: path.Clean(v.Target), ReadWrite: !v.ReadOnly, known: app != nil}
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

	// Each data directory belongs to the deepest mount covering it.
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

	for i := range out {
		m := &out[i]
		if m.Type == TypeNone {
			continue
		}
		if m.Type == types.VolumeTypeBind && !opts.NoDisk {
			if err := a.answers(m.Source, opts.FSTimeout); err != nil {
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
	return out
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

// preflightRunDirs returns the --data-dir values of a `preflight run`
// command line.
func preflightRunDirs(args []string) []string {
	var out []string
	seen := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case path.Base(a) == "preflight":
			seen = false
			if i+1 < len(args) && args[i+1] == "run" {
				seen = true
				i++
			}
		case !seen:
		case a == "--":
			seen = false
		case a == "--data-dir" && i+1 < len(args):
			out = append(out, strings.Split(args[i+1], ",")...)
			i++
		case strings.HasPrefix(a, "--data-dir="):
			out = append(out, strings.Split(strings.TrimPrefix(a, "--data-dir="), ",")...)
		}
	}
	return out
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
// unless a service that knows the source mounts it.
func notJudged(ms []Mount, noDisk bool) []NotJudged {
	out := []NotJudged{}
	for i := range ms {
		m := &ms[i]
		if m.Type != types.VolumeTypeBind || m.DataDir || m.NotData != "" || !m.ReadWrite || m.known {
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
