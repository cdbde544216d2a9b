package docker

import (
	"context"
	"sort"

	"github.com/moby/moby/client"
)

// ProjectResult is what Project found: the engine, the running,
// restarting and paused containers of one compose project, and every other
// such container on the engine (a container outside the project can mount
// the project's volumes or host directories too).
type ProjectResult struct {
	Status   string   `json:"status"`
	Err      string   `json:"error,omitempty"`
	Endpoint Endpoint `json:"endpoint"`
	Engine   *Engine  `json:"engine,omitempty"`
	// Project is the compose project name asked for.
	Project string `json:"project,omitempty"`
	// Containers are the project's containers (label
	// com.docker.compose.project), sorted by service then name.
	Containers []Container `json:"containers"`
	// Others are the other running, restarting and paused containers.
	Others []Container `json:"others,omitempty"`
}

// EngineOf asks the engine what it is (GET /_ping, /version, /info),
// within opts.Timeout. Status says how it went; Engine is nil unless
// Status is "ran".
func EngineOf(ctx context.Context, opts Options) ProjectResult {
	return project(ctx, "", false, opts)
}

// Project lists the containers of compose project name (label
// com.docker.compose.project=name) and every other running, restarting or
// paused container, with their mounts, in one GET /containers/json, after
// recognising the engine. Failures are values (Status, Err), as for Probe.
func Project(ctx context.Context, name string, opts Options) ProjectResult {
	return project(ctx, name, true, opts)
}

func project(ctx context.Context, name string, list bool, opts Options) ProjectResult {
	out := ProjectResult{Project: name, Containers: []Container{}}
	if opts.Mode == ModeOff {
		out.Status = StatusOff
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, opts.timeout())
	defer cancel()
	var res Result
	c, ok := start(ctx, &res, opts)
	out.Endpoint, out.Engine = res.Endpoint, res.Engine
	if !ok {
		out.Status, out.Err = res.Status, res.Err
		return out
	}
	defer c.close()
	if list {
		f := make(client.Filters).Add("status", "running", "restarting", "paused")
		r, err := c.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
		if err != nil {
			res.fail(c, err, false)
			out.Status, out.Err = res.Status, res.Err
			return out
		}
		for i := range r.Items {
			ct := fromSummary(&r.Items[i])
			if r.Items[i].Labels[labelProject] == name {
				out.Containers = append(out.Containers, ct)
			} else {
				out.Others = append(out.Others, ct)
			}
		}
		sort.Slice(out.Containers, func(i, j int) bool {
			a, b := out.Containers[i], out.Containers[j]
			if a.ComposeService != b.ComposeService {
				return a.ComposeService < b.ComposeService
			}
			return a.Name < b.Name
		})
	}
	out.Status = StatusRan
	return out
}
