package salvage

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/preflight-sqlite/preflight"
	"github.com/preflight-sqlite/preflight/internal/dirfd"
	"github.com/preflight-sqlite/preflight/report"
	"github.com/preflight-sqlite/preflight/rules"
)

// ErrRefused is returned by Run when the guard refused (Result.Refusals
// says why): nothing was read past the guard and nothing was written.
var ErrRefused = errors.New("refused")

// Refusal is why recover did not start, with a remedy: convert's guard
// refusals (a live writer, a probe that could not run, an odd sidecar) and
// a destination directory another user could replace.
type Refusal struct {
	// Reason is the refusal's stable ID (rules.Refusals): writer,
	// unverified, unlinked-sidecar, sidecar-not-regular, swappable-dir, ...
	Reason  string   `json:"reason"`
	Message string   `json:"message"`
	Remedy  []string `json:"remedy,omitempty"`
}

// guard runs preflight.Check over the source (the live-writer probes as
// convert runs them) and judges it with convert's guard-stage rules, and
// refuses a destination whose directory another user can replace (SQLite
// creates NEW-journal there by path). It returns the refusals, the notes
// (a probe that could not run, with AllowUnverified) and the probes that
// ran.
func guard(ctx context.Context, opts Options, to string) ([]Refusal, []string, map[string]report.ProbeStatus, error) {
	var refusals []Refusal
	var notes []string
	if x, why := dirfd.Swappable(filepath.Dir(to)); x != "" {
		refusals = append(refusals, Refusal{Reason: string(rules.SwappableDir),
			Message: fmt.Sprintf("the directory of %s is reached through %s, which another user can replace (%s): SQLite would create its journal wherever that user points it", opts.To, x, why),
			Remedy:  []string{"write the new file into a directory only you (or root) can change, or run as that directory's owner"}})
	}
	copts := *opts.Guard
	copts.Paths = []string{opts.Source}
	copts.Writers.Watch = 0
	copts.Writers.Starting = false
	rep, err := preflight.Check(ctx, copts)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("guard: %w", err)
	}
	if ctx.Err() != nil {
		return nil, nil, nil, fmt.Errorf("guard: interrupted: %w", context.Cause(ctx))
	}
	found := false
	for i := range rep.DataDirs {
		d := &rep.DataDirs[i]
		for j := range d.Databases {
			found = true
			cf := &rules.ConvertFacts{Report: rep, Dir: d, DB: &d.Databases[j], AllowUnverified: opts.AllowUnverified}
			for _, f := range rules.Convert(cf, rules.StageGuard) {
				if f.Level != preflight.LevelError {
					notes = append(notes, f.Message)
					continue
				}
				refusals = append(refusals, Refusal{Reason: string(f.ID), Message: f.Message, Remedy: f.Remedy})
			}
		}
	}
	if !found && !opts.AllowUnverified {
		refusals = append(refusals, Refusal{Reason: string(rules.Unverified),
			Message: fmt.Sprintf("the check did not take %s for a database, so no live-writer probe looked at it", opts.Source),
			Remedy:  []string{"once you have made sure yourself that nothing uses the file: --allow-unverified"}})
	}
	return refusals, notes, rep.Probes, nil
}
