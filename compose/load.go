// Package compose reads a Compose project as Compose does
// (github.com/compose-spec/compose-go/v2), finds the mounts that hold SQLite
// data, states facts about them (Analysis), and rewrites the file that
// declares a risky bind mount into a named volume by splicing the original
// bytes at positions found in a YAML node tree (go.yaml.in/yaml/v3), so
// comments, key order, quoting, anchors and indentation are kept.
//
// The package states facts; the rules in the root package judge them. It
// never opens a SQLite connection (a dependency test keeps database/sql
// out).
package compose

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// LoadOptions mirror docker compose's global flags.
type LoadOptions struct {
	// Files are the -f files, merged in order. Empty means discovery:
	// COMPOSE_FILE, else compose.yaml, compose.yml, docker-compose.yml or
	// docker-compose.yaml in the working directory or a parent, plus its
	// override file.
	Files []string
	// ProjectDirectory is --project-directory; empty means the directory
	// of the first file.
	ProjectDirectory string
	// ProjectName is -p; empty means the name: key, COMPOSE_PROJECT_NAME or
	// the project directory's base name.
	ProjectName string
	// Profiles are the --profile flags (COMPOSE_PROFILES when empty).
	Profiles []string
	// EnvFiles are the --env-file flags; empty means the project
	// directory's .env.
	EnvFiles []string
	// Env is the process environment as KEY=VALUE; nil means os.Environ().
	Env []string
}

// Loaded is a loaded project with the files it came from.
type Loaded struct {
	Project *types.Project
	// Files are the top-level compose files in merge order (absolute).
	Files []string
}

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

// readFile is os.ReadFile; a variable for nothing but clarity at call sites.
var readFile = os.ReadFile
