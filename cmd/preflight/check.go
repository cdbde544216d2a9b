package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/kube"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/rules"
)

// CheckFlags are the flags shared by check and run.
type CheckFlags struct {
	DataDir  []string `name:"data-dir" brief:"Data directory or database file (repeatable)." env:"PREFLIGHT_DATA_DIR" sep:"none" placeholder:"DIR" help:"Data directory or database file to check (repeatable; env: comma-separated list)."`
	Ignore   []string `name:"ignore" env:"PREFLIGHT_IGNORE" sep:"," placeholder:"ID" help:"Demote finding ID to info (repeatable)."`
	MaxDepth int      `name:"max-depth" brief:"Directory levels searched for databases." env:"PREFLIGHT_MAX_DEPTH" default:"2" help:"How many directory levels below a data directory to search for databases."`

	SniffMax  int           `name:"sniff-max" brief:"Files without a database name to sniff; -1: all." env:"PREFLIGHT_SNIFF_MAX" default:"2000" help:"Per data directory, at most this many files without a database name (*.db, *.sqlite, *.sqlite3, *.db3) and of at least 512 bytes are opened to look for the SQLite header; -1 is no limit."`
	SniffTime time.Duration `name:"sniff-time" brief:"Time to sniff files without a database name." env:"PREFLIGHT_SNIFF_TIME" default:"1s" help:"Per data directory, how long after its search starts files without a database name are still looked at (size, then header); -1s is no limit."`

	FSTimeout time.Duration `name:"fs-timeout" brief:"Longest wait for a stat and a directory read." default:"5s" env:"PREFLIGHT_FS_TIMEOUT" help:"Longest wait for a data directory to answer a stat and a directory read (a stuck FUSE daemon or NFS server)."`
	ProbeFS   bool          `name:"probe-fs" brief:"Test mmap and POSIX locks with a temporary file." env:"PREFLIGHT_PROBE_FS" help:"Test the filesystem with a temporary file: shared mmap and POSIX locks (the only probe that writes)."`

	Docker        string        `name:"docker" brief:"Look for other containers: auto, off, required." enum:"auto,off,required" default:"auto" env:"PREFLIGHT_DOCKER" help:"Look for other containers using the data through the Docker Engine API: auto (when reachable), off, or required (an engine that does not answer is an error)."`
	DockerTimeout time.Duration `name:"docker-timeout" default:"2s" env:"PREFLIGHT_DOCKER_TIMEOUT" help:"Longest wait for the Docker Engine API."`

	Kube        string        `name:"kube" brief:"Look for other pods: auto, off, required." enum:"auto,off,required" default:"auto" env:"PREFLIGHT_KUBE" help:"Look for other pods using the data through the Kubernetes API: auto (in a pod, or with --kubeconfig), off, or required (an API that does not answer is an error)."`
	KubeTimeout time.Duration `name:"kube-timeout" default:"2s" env:"PREFLIGHT_KUBE_TIMEOUT" help:"Longest wait for the Kubernetes API."`
	Kubeconfig  string        `name:"kubeconfig" brief:"Reach the API through this kubeconfig." env:"PREFLIGHT_KUBECONFIG,KUBECONFIG" placeholder:"FILE" help:"Reach the Kubernetes API through this kubeconfig (server, CA, token or client certificate; the first existing file of a KUBECONFIG list) instead of the in-cluster service account."`
	Pod         string        `name:"pod" brief:"Our pod (default: POD_NAMESPACE/POD_NAME)." env:"PREFLIGHT_POD" placeholder:"NAMESPACE/NAME" help:"The pod whose data this is (default: POD_NAMESPACE/POD_NAME from the downward API, else the hostname)."`
}

// options builds preflight.Options from the flags, reading the saved mount
// table when --mountinfo is set.
func (f CheckFlags) options(g *Globals, paths []string) (preflight.Options, error) {
	dataDirs := f.DataDir
	if !g.given("data-dir") {
		// From PREFLIGHT_DATA_DIR: a comma-separated list, which PATH
		// arguments replace. The flag itself is repeatable and never split,
		// so a directory name may hold a comma.
		dataDirs = nil
		if len(paths) == 0 {
			for _, v := range f.DataDir {
				dataDirs = append(dataDirs, strings.Split(v, ",")...)
			}
		}
	}
	opts := preflight.Options{
		Paths:     trimAll(append(append([]string{}, paths...), dataDirs...)),
		MaxDepth:  f.MaxDepth,
		SniffMax:  f.SniffMax,
		SniffTime: f.SniffTime,
		Ignore:    f.Ignore,
		FSTimeout: f.FSTimeout,
		Health:    preflight.HealthOptions{ProbeFS: f.ProbeFS},
		Writers: preflight.WriterOptions{
			Docker: docker.Options{Mode: docker.Mode(f.Docker), Timeout: f.DockerTimeout},
			Kube:   kube.Options{Mode: kube.Mode(f.Kube), Timeout: f.KubeTimeout, Kubeconfig: firstKubeconfig(f.Kubeconfig), Pod: f.Pod},
		},
	}
	if f.KubeTimeout <= 0 {
		return opts, usageError(fmt.Errorf("--kube-timeout %s: must be positive", f.KubeTimeout))
	}
	if ns, name, ok := strings.Cut(f.Pod, "/"); f.Pod != "" && (!ok || ns == "" || name == "") {
		return opts, usageError(fmt.Errorf("--pod %q: want NAMESPACE/NAME", f.Pod))
	}
	if f.DockerTimeout <= 0 {
		return opts, usageError(fmt.Errorf("--docker-timeout %s: must be positive", f.DockerTimeout))
	}
	if len(opts.Paths) == 0 {
		return opts, usageError(errors.New("no data directory given"), "pass --data-dir DIR or set PREFLIGHT_DATA_DIR (check and convert also take PATH arguments)")
	}
	if f.MaxDepth < 1 {
		return opts, usageError(fmt.Errorf("--max-depth %d: must be at least 1 (1 = files directly in the data directory)", f.MaxDepth))
	}
	if f.SniffMax == 0 || f.SniffTime == 0 {
		return opts, usageError(fmt.Errorf("--sniff-max %d --sniff-time %s: must not be zero (negative is no limit)", f.SniffMax, f.SniffTime))
	}
	known := map[string]bool{}
	for _, r := range preflight.Rules() {
		known[string(r.ID)] = true
	}
	for _, id := range f.Ignore {
		if !known[id] {
			fmt.Fprintf(g.stderr, "preflight: warning: --ignore %s: no finding has this ID (see "+rules.DocsURL+"reference/findings/)\n", id)
		}
	}
	if g.Mountinfo != "" {
		t, err := mounts.ReadFile(g.Mountinfo)
		if err != nil {
			return opts, mountTableError(err)
		}
		opts.MountTable = t
		opts.MountTableSource = g.Mountinfo
	}
	return opts, nil
}

// CheckCmd is `preflight check`.
type CheckCmd struct {
	Paths []string `arg:"" optional:"" name:"path" help:"Data directory or database file; given PATHs replace PREFLIGHT_DATA_DIR (default: --data-dir, PREFLIGHT_DATA_DIR)."`
	CheckFlags
	Format    string        `name:"format" brief:"Output: text, json (preflight/v1) or sarif." enum:"text,json,sarif" default:"text" env:"PREFLIGHT_FORMAT" help:"Output format: text, json (schema preflight/v1) or sarif (SARIF 2.1.0, for code scanning)."`
	FailOn    string        `name:"fail-on" brief:"Lowest level that fails: warn, error or never." enum:"warn,error,never" default:"warn" env:"PREFLIGHT_FAIL_ON" help:"Lowest level that makes the exit code non-zero: warn, error or never."`
	Watch     time.Duration `name:"watch" brief:"Watch -wal and -shm this long for unseen writers." default:"0s" env:"PREFLIGHT_WATCH" help:"Watch each database's -wal and -shm this long for changes no probe can attribute (a writer behind a VM share); 0 is off."`
	Container string        `name:"container" brief:"Check PATHs as container NAME sees them." env:"PREFLIGHT_CONTAINER" placeholder:"NAME" help:"Check PATHs as container NAME sees them: its mounts (docker inspect) mapped to this host and classified here."`

	Deep        bool          `name:"deep" brief:"Also check health: WAL chain, quick_check." env:"PREFLIGHT_DEEP" help:"Also check database health: WAL frame chain, hot journals, header bytes, and PRAGMA quick_check on a read-only connection, with damage classified (--deep=full runs integrity_check)."`
	DeepMode    string        `name:"deep-mode" brief:"quick (quick_check) or full (integrity_check)." enum:"quick,full" default:"quick" env:"PREFLIGHT_DEEP_MODE" help:"quick_check or integrity_check for --deep (--deep=full is --deep --deep-mode full)."`
	BusyTimeout time.Duration `name:"busy-timeout" brief:"With --deep, longest wait on another's lock." default:"1s" env:"PREFLIGHT_BUSY_TIMEOUT" help:"With --deep, longest wait on another process's lock before reporting 'integrity not checked'."`
	TmpDir      string        `name:"tmp-dir" brief:"With --deep, where the private copy is made." env:"PREFLIGHT_TMP_DIR" placeholder:"DIR" help:"With --deep, where to make the private copy a database is checked on (across a share, or a WAL database no process has open); default $TMPDIR, else /tmp. It needs room for the database and its -wal."`
}

// Run checks the paths, renders the report and exits by the verdict.
func (c *CheckCmd) Run(g *Globals) error {
	if err := needsLinux("check", g.Mountinfo != ""); err != nil {
		return err
	}
	opts, err := c.options(g, c.Paths)
	if err != nil {
		return err
	}
	if c.Watch < 0 {
		return usageError(fmt.Errorf("--watch %s: must not be negative", c.Watch))
	}
	opts.Writers.Watch = c.Watch
	opts.Health.Deep = c.Deep || c.DeepMode == "full"
	opts.Health.Full = c.DeepMode == "full"
	opts.Health.BusyTimeout = c.BusyTimeout
	opts.Health.TempDir = c.TmpDir
	if c.Container != "" {
		if opts.MountTable != nil {
			return usageError(errors.New("--container and --mountinfo cannot be combined"))
		}
		opts.Container = c.Container
	}
	r, err := preflight.Check(g.ctx, opts)
	if err := g.ctx.Err(); err != nil {
		return fmt.Errorf("check: interrupted: %w", context.Cause(g.ctx))
	}
	if err != nil {
		if errors.Is(err, docker.ErrNotFound) {
			return usageError(err, "docker ps -a lists the containers by name and ID; --container takes one of them")
		}
		if errors.Is(err, preflight.ErrRelativePath) {
			return usageError(err)
		}
		return err
	}
	if err := render(g.stdout, r, c.Format); err != nil {
		return err
	}
	if code := verdictCode(r.Verdict, c.FailOn); code != exitOK {
		return &exitError{code: code}
	}
	return nil
}

func render(w io.Writer, r *preflight.Report, format string) error {
	if format == "sarif" {
		return renderSARIF(w, r)
	}
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return renderText(w, r)
}

// trimAll trims spaces around each path ("/a, /b" in an environment
// variable) and drops empty ones.
func trimAll(paths []string) []string {
	out := paths[:0]
	for _, p := range paths {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// firstKubeconfig is the first existing file of a KUBECONFIG-style list
// (colon-separated), else its first element.
func firstKubeconfig(list string) string {
	parts := filepath.SplitList(list)
	for _, p := range parts {
		if _, err := os.Stat(p); p != "" && err == nil {
			return p
		}
	}
	if len(parts) > 0 {
		return parts[0]
	}
	return ""
}
