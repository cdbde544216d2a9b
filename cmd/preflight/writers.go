package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/preflight-sqlite/preflight/internal/fsbound"
	"github.com/preflight-sqlite/preflight/probe/docker"
)

// WritersCmd is `preflight writers`.
type WritersCmd struct {
	Volume        string
	HostPath      string
	Format        string
	DockerTimeout time.Duration
	FSTimeout     time.Duration
}

func newWritersCmd(g *Globals) *cobra.Command {
	c := &WritersCmd{}
	cmd := &cobra.Command{
		Use:     "writers (--volume NAME | --host-path PATH)",
		Short:   "List the containers that write a named volume or host directory.",
		Long:    "List the containers that write a named volume or host directory (Docker Engine API).",
		Example: examples["writers"],
		Args:    cobra.NoArgs,
		RunE:    func(*cobra.Command, []string) error { return c.Run(g) },
	}
	fs := cmd.Flags()
	fs.StringVar(&c.Volume, "volume", "", "List the containers that mount named volume `NAME` read-write.")
	fs.StringVar(&c.HostPath, "host-path", "", "List the containers whose bind mount source is host directory `PATH`, inside it, or contains it, read-write.")
	enumVar(fs, &c.Format, "format", "text", "Output format: text or json.", "text", "json")
	fs.DurationVar(&c.DockerTimeout, "docker-timeout", 2*time.Second, "Longest wait for the Docker Engine API.")
	fs.DurationVar(&c.FSTimeout, "fs-timeout", 5*time.Second, "Longest wait for --host-path to answer a stat (a stuck FUSE daemon or NFS server).")
	flagGroup(fs, dockerFlags, "docker-timeout")
	return cmd
}

// Run lists the containers that write a volume or host directory: the
// running, restarting and paused ones, then the stopped ones (each writes
// once started). It exits 0 when the engine answered (whatever it found),
// 1 when it could not be asked, and 2 for a volume the engine does not
// have.
func (c *WritersCmd) Run(g *Globals) error {
	if (c.Volume == "") == (c.HostPath == "") {
		return usageError(errors.New("writers: give exactly one of --volume NAME or --host-path PATH"))
	}
	if c.HostPath != "" {
		// The engine is asked about the path as this machine resolves it
		// (symlinks): a path that does not answer would hang that.
		if err := fsbound.Responsive(g.ctx, c.HostPath, c.FSTimeout); err != nil {
			return &exitError{code: exitInternal, err: fmt.Errorf("writers: %w", err), hints: []string{"the host path is on a filesystem that does not answer: find what it is on with findmnt -T PATH"}}
		}
	}
	res := docker.WritersOf(g.ctx, c.Volume, c.HostPath, docker.Options{Timeout: c.DockerTimeout})
	what := "volume " + c.Volume
	if c.HostPath != "" {
		what = "host path " + c.HostPath
	}
	if c.Format == "json" {
		if err := writeJSON(g, res); err != nil {
			return err
		}
	} else if res.Status == docker.StatusRan && !res.NoSuchVolume {
		if err := renderContainerWriters(g, res, what); err != nil {
			return err
		}
		if err := renderSwarmWriters(g, res.Swarm, what); err != nil {
			return err
		}
	}
	switch {
	case res.Status != docker.StatusRan:
		return &exitError{code: exitInternal, err: fmt.Errorf("docker %s at %s: %s", res.Status, res.Endpoint.Host, res.Err),
			hints: []string{"set DOCKER_HOST or a docker context, or run where the Docker socket is reachable"}}
	case res.NoSuchVolume:
		return &exitError{code: exitUsage, err: fmt.Errorf("writers: no volume named %s on the engine at %s", c.Volume, res.Endpoint.Host),
			hints: []string{"list the volumes with docker volume ls; a compose project's volumes are named PROJECT_VOLUME"}}
	case !res.Sure:
		fmt.Fprintf(g.stderr, "preflight: warning: writers: the engine's answer may be incomplete: %s\n", res.Err)
	}
	return nil
}

// renderContainerWriters prints the writers of what (a volume or host path)
// as one table, running containers first, then stopped ones.
func renderContainerWriters(g *Globals, res docker.Result, what string) error {
	switch {
	case len(res.Writers) == 0 && len(res.Stopped) == 0:
		fmt.Fprintf(g.stdout, "no container, running or stopped, writes %s\n", what)
		return nil
	case len(res.Writers) == 0:
		fmt.Fprintf(g.stdout, "no running container writes %s; these stopped ones write it once started:\n", what)
	case len(res.Stopped) > 0:
		fmt.Fprintf(g.stdout, "containers that write %s (the stopped ones once started):\n", what)
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTAINER\tID\tIMAGE\tSTATE\tCOMPOSE SERVICE\tMOUNT\tRELATION")
	for _, w := range append(slices.Clone(res.Writers), res.Stopped...) {
		svc := w.Container.ComposeService
		if svc != "" {
			svc = w.Container.ComposeProject + "/" + svc
		}
		if w.Container.OneOff {
			svc += " (one-off run)"
		}
		src := w.Mount.Source
		if w.Mount.Type == docker.MountVolume {
			src = w.Mount.Name
		}
		// The name and the mount in full (a reader copies them into a
		// command), each cell one escaped line.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", oneLine(w.Container.Name), docker.ShortID(w.Container.ID), cell(w.Container.Image), oneLine(w.Container.State), cell(strings.TrimSpace(svc)), oneLine(src+":"+w.Mount.Destination), oneLine(w.Relation))
	}
	return tw.Flush()
}

// renderSwarmWriters prints the Swarm services whose tasks mount what, one
// line per task, and the commands that leave one writer; on a node that
// cannot list services it says so on stderr.
func renderSwarmWriters(g *Globals, sw *docker.Swarm, what string) error {
	switch {
	case sw == nil:
		return nil
	case !sw.ServicesVisible:
		why := "this engine is a Swarm " + sw.Role + " node, and only managers list services"
		if sw.Err != "" {
			why = sw.Err
		}
		fmt.Fprintf(g.stderr, "preflight: warning: writers: Swarm services and their tasks on other nodes cannot be seen: %s\n", why)
		return nil
	case len(sw.Services) == 0:
		fmt.Fprintf(g.stdout, "no Swarm service mounts %s\n", what)
		return nil
	}
	fmt.Fprintf(g.stdout, "Swarm services that mount %s:\n", what)
	tw := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tMODE\tUPDATE ORDER\tTASK\tNODE\tSTATE\tMOUNT")
	var fixes []string
	for _, s := range sw.Services {
		mode := s.Mode
		if s.Mode == docker.ModeReplicated {
			mode = fmt.Sprintf("replicated %d", s.Replicas)
			if s.Replicas > 1 {
				fixes = append(fixes, fmt.Sprintf("docker service scale %s=1", s.Name))
			}
		}
		if s.UpdateOrder == docker.OrderStartFirst || s.RollbackOrder == docker.OrderStartFirst {
			fixes = append(fixes, fmt.Sprintf("docker service update --update-order stop-first --rollback-order stop-first %s", s.Name))
		}
		src := s.Mount.Source
		if s.Mount.Type == docker.MountVolume {
			src = s.Mount.Name
		}
		tasks := s.Tasks
		if len(tasks) == 0 {
			tasks = []docker.Task{{Name: "-", State: "no task"}}
		}
		for _, t := range tasks {
			node := t.Node
			if node == "" {
				node = docker.ShortID(t.NodeID)
			}
			if t.OtherNode {
				node += " (other node)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s:%s\n", s.Name, mode, s.UpdateOrder, t.Name, strings.TrimSpace(node), t.State, src, s.Mount.Destination)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, f := range fixes {
		fmt.Fprintf(g.stdout, "one writer: %s\n", f)
	}
	return nil
}
