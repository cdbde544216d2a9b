//go:build !nocompose

package compose

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/sirupsen/logrus"
)

// Built is true in the full build: Load loads projects.
const Built = true

// Project is a project as compose-go's loader gives it.
type Project = types.Project

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
	var p *types.Project
	warnings, err := loaderWarnings(func() (err error) {
		p, err = po.LoadProject(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("load compose project: %w", err)
	}
	l := &Loaded{Project: p, Warnings: warnings}
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

// warnHook keeps the messages of warning (and worse) entries.
type warnHook struct{ msgs []string }

func (h *warnHook) Levels() []logrus.Level {
	return []logrus.Level{logrus.PanicLevel, logrus.FatalLevel, logrus.ErrorLevel, logrus.WarnLevel}
}

func (h *warnHook) Fire(e *logrus.Entry) error {
	h.msgs = append(h.msgs, e.Message)
	return nil
}

// loaderWarnings runs load with logrus's standard logger silenced and
// returns what it warned about, so the loader's warnings reach the user
// as preflight's own lines (and in JSON) instead of logrus's
// time=... level=warning lines on stderr.
func loaderWarnings(load func() error) ([]string, error) {
	logMu.Lock()
	defer logMu.Unlock()
	l := logrus.StandardLogger()
	h := &warnHook{}
	out := l.Out
	hooks := l.ReplaceHooks(logrus.LevelHooks{})
	l.AddHook(h)
	l.SetOutput(io.Discard)
	defer func() {
		l.SetOutput(out)
		l.ReplaceHooks(hooks)
	}()
	err := load()
	return h.msgs, err
}
