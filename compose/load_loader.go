//go:build !nocompose

package compose

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/compose-spec/compose-go/v2/cli"
)

// Built is true in the full build: Load loads projects.
const Built = true

// Load loads the project with Compose's own semantics: files merged in
// order, include, extends, .env and --env-file interpolation, profiles,
// relative paths resolved against the project directory.
func Load(ctx context.Context, opts LoadOptions) (*Loaded, error) {
	// The order docker compose uses (cmd/compose/compose.go ToProjectOptions).
	fns := []cli.ProjectOptionsFn{cli.WithWorkingDirectory(opts.ProjectDirectory)}
	if opts.Env != nil {
		fns = append(fns, cli.WithEnv(opts.Env))
	} else {
		fns = append(fns, cli.WithOsEnv)
	}
	fns = append(fns,
		cli.WithConfigFileEnv,
		cli.WithDefaultConfigPath,
		cli.WithEnvFiles(opts.EnvFiles...),
		cli.WithDotEnv,
		cli.WithDefaultProfiles(opts.Profiles...),
		cli.WithName(opts.ProjectName),
		cli.WithResolvedPaths(true),
	)
	po, err := cli.NewProjectOptions(opts.Files, fns...)
	if err != nil {
		return nil, fmt.Errorf("load compose project: %w", err)
	}
	p, err := po.LoadProject(ctx)
	if err != nil {
		return nil, fmt.Errorf("load compose project: %w", err)
	}
	l := &Loaded{Project: p}
	for _, f := range p.ComposeFiles {
		if f == "-" {
			continue
		}
		if !filepath.IsAbs(f) {
			if abs, err := filepath.Abs(f); err == nil {
				f = abs
			}
		}
		l.Files = append(l.Files, f)
	}
	return l, nil
}
