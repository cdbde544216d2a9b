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
	"errors"
	"os"
)

// ErrNotBuilt is returned by Load in a binary built with the nocompose
// tag (the lean entrypoint build, which leaves out compose-go's loader and
// the JSON-schema validator whose package init costs milliseconds at every
// start).
var ErrNotBuilt = errors.New("this preflight binary was built without compose support (-tags nocompose); run preflight compose from the full build")

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
	Project *Project
	// Files are the top-level compose files in merge order (absolute).
	Files []string
	// Warnings are the loader's warnings (an unset variable, an obsolete
	// version: key), in Compose's words, in the order given.
	Warnings []string
}

// readFile is os.ReadFile; a variable for nothing but clarity at call sites.
var readFile = os.ReadFile
