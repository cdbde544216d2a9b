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

	"github.com/spf13/cobra"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/probe/docker"
	"github.com/preflight-sqlite/preflight/probe/kube"
	"github.com/preflight-sqlite/preflight/probe/mounts"
	"github.com/preflight-sqlite/preflight/rules"
)

// CheckFlags are the flags shared by check, run, convert, recover and
// bundle.
type CheckFlags struct {
	DataDir   []string
	Ignore    []string
	MaxDepth  int
	SniffMax  int
	SniffTime time.Duration
	FSTimeout time.Duration
	ProbeFS   bool

	Docker        string
	DockerTimeout time.Duration

	Kube        string
	KubeTimeout time.Duration
	Kubeconfig  string
	Pod         string
}

// AddFlags declares the flags on cmd, the Docker and Kubernetes probes'
// in their groups.
func (o *CheckFlags) AddFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.Var(&sliceValue{p: &o.DataDir}, "data-dir", "Check `DIR`, a data directory or database file (repeatable).")
	flagDoc(fs, "data-dir", "Data directory or database file to check, `DIR` (repeatable; env: comma-separated list).")
	sliceVar(fs, &o.Ignore, "ignore", "", "Demote finding `ID` to info (repeatable).")
	fs.IntVar(&o.MaxDepth, "max-depth", 2, "Directory levels to search.")
	flagDoc(fs, "max-depth", "How many directory levels below a data directory to search for databases.")
	fs.IntVar(&o.SniffMax, "sniff-max", 2000, "Unnamed files to sniff; -1: all.")
	flagDoc(fs, "sniff-max", "Per data directory, at most this many files without a database name (*.db, *.sqlite, *.sqlite3, *.db3) and of at least 512 bytes are opened to look for the SQLite header; -1 is no limit.")
	fs.DurationVar(&o.SniffTime, "sniff-time", time.Second, "Time to sniff unnamed files.")
	flagDoc(fs, "sniff-time", "Per data directory, how long after its search starts files without a database name are still looked at (size, then header); -1s is no limit.")
	fs.DurationVar(&o.FSTimeout, "fs-timeout", 5*time.Second, "Longest wait for stat and readdir.")
	flagDoc(fs, "fs-timeout", "Longest wait for a data directory to answer a stat and a directory read (a stuck FUSE daemon or NFS server).")
	boolVar(fs, &o.ProbeFS, "probe-fs", "", "Test mmap and POSIX locks on a temporary file.")
	flagDoc(fs, "probe-fs", "Test the filesystem with a temporary file: shared mmap and POSIX locks (the only probe that writes).")

	enumVar(fs, &o.Docker, "docker", "auto", "Other containers: auto, off or required.", "auto", "off", "required")
	flagDoc(fs, "docker", "Look for other containers using the data through the Docker Engine API: auto (when reachable), off, or required (an engine that does not answer is an error).")
	fs.DurationVar(&o.DockerTimeout, "docker-timeout", 2*time.Second, "Longest wait for the Docker API.")
	flagDoc(fs, "docker-timeout", "Longest wait for the Docker Engine API.")
	flagGroup(fs, dockerFlags, "docker", "docker-timeout")

	enumVar(fs, &o.Kube, "kube", "auto", "Other pods: auto, off or required.", "auto", "off", "required")
	flagDoc(fs, "kube", "Look for other pods using the data through the Kubernetes API: auto (in a pod, or with --kubeconfig), off, or required (an API that does not answer is an error).")
	fs.DurationVar(&o.KubeTimeout, "kube-timeout", 2*time.Second, "Longest wait for the Kubernetes API.")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "Reach the API through kubeconfig `FILE`.")
	flagDoc(fs, "kubeconfig", "Reach the Kubernetes API through kubeconfig `FILE` (server, CA, token or client certificate; the first existing file of a KUBECONFIG list) instead of the in-cluster service account.")
	envFor(fs, "kubeconfig", "PREFLIGHT_KUBECONFIG", "KUBECONFIG")
	fs.StringVar(&o.Pod, "pod", "", "Our pod (default: $POD_NAMESPACE/$POD_NAME).")
	flagDoc(fs, "pod", "The pod whose data this is, NAMESPACE/NAME (default: POD_NAMESPACE/POD_NAME from the downward API, else the hostname).")
	flagGroup(fs, kubeFlags, "kube", "kube-timeout", "kubeconfig", "pod")
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
	Paths []string
	CheckFlags
	Format    string
	FailOn    string
	Watch     time.Duration
	Container string

	Deep        bool
	DeepMode    string
	BusyTimeout time.Duration
	TmpDir      string
}

func newCheckCmd(g *Globals) *cobra.Command {
	c := &CheckCmd{}
	cmd := &cobra.Command{
		Use:   "check [PATH]...",
		Short: "Check data directories or databases: filesystem, journal, findings.",
		Long: wrap("Check data directories or database files: filesystem class, journal mode, findings. "+
			"Each PATH is a data directory or database file; given PATHs replace PREFLIGHT_DATA_DIR (default: --data-dir, PREFLIGHT_DATA_DIR).", 0, helpWidth),
		Example: examples["check"],
		Args:    cobra.ArbitraryArgs,
		RunE:    func(_ *cobra.Command, args []string) error { c.Paths = args; return c.Run(g) },
	}
	fs := cmd.Flags()
	c.CheckFlags.AddFlags(cmd)
	enumVar(fs, &c.Format, "format", "text", "Output: text, json or sarif.", "text", "json", "sarif")
	flagDoc(fs, "format", "Output format: text, json (schema preflight/v1) or sarif (SARIF 2.1.0, for code scanning).")
	enumVar(fs, &c.FailOn, "fail-on", "warn", "Lowest level that fails: warn, error or never.", "warn", "error", "never")
	flagDoc(fs, "fail-on", "Lowest level that makes the exit code non-zero: warn, error or never.")
	fs.DurationVar(&c.Watch, "watch", 0, "Watch -wal, -shm this long for unseen writers.")
	flagDoc(fs, "watch", "Watch each database's -wal and -shm this long for changes no probe can attribute (a writer behind a VM share); 0 is off.")
	fs.StringVar(&c.Container, "container", "", "Check PATHs as container `NAME` sees them.")
	flagDoc(fs, "container", "Check PATHs as container `NAME` sees them: its mounts (docker inspect) mapped to this host and classified here.")
	deepVar(fs, &c.Deep, &c.DeepMode, "Also check health: WAL chain, quick_check.")
	flagDoc(fs, "deep", "Also check database health: WAL frame chain, hot journals, header bytes, and PRAGMA quick_check on a read-only connection, with damage classified (--deep=full runs integrity_check).")
	enumVar(fs, &c.DeepMode, "deep-mode", "quick", "quick (quick_check) or full (integrity_check).", "quick", "full")
	flagDoc(fs, "deep-mode", "quick_check or integrity_check for --deep (--deep=full is --deep --deep-mode full).")
	fs.DurationVar(&c.BusyTimeout, "busy-timeout", time.Second, "With --deep, longest wait on a lock.")
	flagDoc(fs, "busy-timeout", "With --deep, longest wait on another process's lock before reporting 'integrity not checked'.")
	fs.StringVar(&c.TmpDir, "tmp-dir", "", "With --deep, make the private copy in `DIR`.")
	flagDoc(fs, "tmp-dir", "With --deep, where to make the private copy a database is checked on, `DIR` (across a share, or a WAL database no process has open); default $TMPDIR, else /tmp. It needs room for the database and its -wal.")
	return cmd
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
