package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/preflight-sqlite/preflight"
)

// The exit codes; exitTable says what each means.
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

// exitTable is the one exit-code table: --help prints code and meaning
// (exitCodesHelp), docs/reference/exit-codes.md adds the detail (generated
// by TestDocs; TestDocsExitCodes checks it against the constants).
var exitTable = []struct {
	code            int
	meaning, detail string
}{
	{exitOK, "ok (or only findings below --fail-on)", ""},
	{exitInternal, "could not run (internal error, or the command needs Linux); convert: a conversion failed",
		"The database is left as it was unless the message says otherwise. convert also exits 1 when a data directory is missing, or a path is unreadable or does not answer (a database path that does not exist is skipped: exit 0)."},
	{exitUsage, "bad usage or bad input; compose --write: a compose file another user could redirect",
		"An unknown flag or command, no path, an unreadable or unparseable --mountinfo, an unknown finding ID for explain. compose --write writes nothing then."},
	{exitUnsafe, "unsafe: an error-level finding; convert: refused (a writer, an unverified probe, Litestream, WAL frames that would be lost)",
		"run --on-unsafe fail exits 3 before it execs the application. A refused convert changed nothing: its report names each reason (see the refusals in the findings reference)."},
	{exitWarn, "warnings only", "Only with --fail-on warn (the default of check; compose and kube take --fail-on warn to exit 4)."},
	{exitLoss, "recover: the new file was written with loss (rows missing, or in lost_and_found)",
		"The new file is kept for inspection; recover --replace does not replace the source then unless --accept-loss is given. A script must not swap it in on exit 5."},
	{exitCannotExec, "run: CMD is not executable", ""},
	{exitNotFound, "run: CMD not found", ""},
	{exitSignal + 2, "interrupted by SIGINT (128 + 2): what the command made is removed; convert: the database is as it was, or converted (see its report)",
		"Every command stops what it is doing and removes what it made (check --deep's private copies; run does not start CMD); migrate leaves the source untouched and the destination marked incomplete. A second signal ends the process at once."},
	{exitSignal + 15, "interrupted by SIGTERM (128 + 15), the same", "docker stop sends SIGTERM."},
}

// exitHelpWidth is the width --help's exit-code block wraps at (its
// meanings a little inside helpWidth).
const exitHelpWidth = 76

// exitCodesHelp is exitTable as --help prints it: the code, then its
// meaning wrapped under itself.
func exitCodesHelp() string {
	var b strings.Builder
	for _, e := range exitTable {
		fmt.Fprintf(&b, "    %-4d %s\n", e.code, wrap(e.meaning, 9, exitHelpWidth))
	}
	return b.String()
}

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
