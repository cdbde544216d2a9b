package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/preflight-sqlite/preflight"
)

// The one exit-code table. Keep it in step with description (main.go) and
// the README.
const (
	exitOK       = 0
	exitInternal = 1
	exitUsage    = 2
	exitUnsafe   = 3
	exitWarn     = 4
	// exitLoss: recover wrote the new file, but rows are missing or
	// stranded in lost_and_found.
	exitLoss       = 5
	exitCannotExec = 126
	exitNotFound   = 127
	// exitSignal plus the signal's number is the exit code of a command
	// that SIGINT (130) or SIGTERM (143) stopped.
	exitSignal = 128
)

// signalCode is exitSignal plus the number of the signal that ended ctx
// (its cause is a *signalled), and whether one did.
func signalCode(ctx context.Context) (int, bool) {
	var s *signalled
	if !errors.As(context.Cause(ctx), &s) {
		return 0, false
	}
	return exitSignal + int(s.sig), true
}

// exitError carries an exit code, and optionally an error and hints to
// print. A nil err prints nothing (the result was already rendered).
type exitError struct {
	code  int
	err   error
	hints []string
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// ExitCode is the process exit code err stands for.
func (e *exitError) ExitCode() int { return e.code }

func usageError(err error, hints ...string) error {
	return &exitError{code: exitUsage, err: err, hints: hints}
}

// verdictCode maps a verdict to its exit code under the --fail-on threshold:
// warn (default) fails on warnings and errors, error only on errors, never
// on nothing.
func verdictCode(v preflight.Verdict, failOn string) int {
	switch {
	case failOn == "never":
		return exitOK
	case v == preflight.VerdictUnsafe:
		return exitUnsafe
	case v == preflight.VerdictWarn && failOn != "error":
		return exitWarn
	}
	return exitOK
}
