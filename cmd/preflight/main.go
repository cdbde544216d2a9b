// Command preflight checks that SQLite databases in a container's data
// directory are safe where they are, and runs as an image's ENTRYPOINT.
//
// Output policy: the result (a report, a mount list) goes to stdout, as text
// or as JSON with --format json. Everything else (errors, hints, the log of
// `preflight run`) goes to stderr, as `preflight: error: ...` and
// `preflight: hint: ...` lines, without colour. The exit code follows one
// table (exitcode.go), printed in --help and on the docs site.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"

	"github.com/spf13/pflag"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

// Globals are the flags shared by every command (newRoot declares them)
// and what every command runs with.
type Globals struct {
	Mountinfo string
	Version   bool

	// ctx ends on SIGINT or SIGTERM (main) and is passed to every probe
	// and command, so that what a command made (a private copy of a
	// database) is removed before the process exits.
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	args   []string
	// cmdArgs is what follows "--" after `run`, kept out of the flag
	// parser (it is the application's command line, possibly long).
	cmdArgs []string
	// flags is the running command's flag set, parsed and set from the
	// environment.
	flags *pflag.FlagSet
}

// given reports whether flag name (e.g. "data-dir") was on preflight's
// own command line, as opposed to set from its environment variable
// (setFromEnv marks those). Parsing stops at run's "--" or first
// positional (the application), so an application's own --data-dir is
// not preflight's.
func (g *Globals) given(name string) bool {
	fl := g.flags.Lookup(name)
	return fl != nil && fl.Changed && fl.Annotations[fromEnvAnnotation] == nil
}

// notBuilt prefixes the help of a command left out of this build and of
// --help (compose and kube with -tags nocompose); running it exits 1 with
// the reason.
const notBuilt = "Not in this build (-tags nocompose, the image's binary): "

const description = `Keeps SQLite databases safe inside containers: WAL mode needs coherent POSIX
locks and shared memory, which bind mounts across a VM boundary (Docker Desktop,
OrbStack, Podman machine, Colima, Lima, WSL2) and network or FUSE filesystems do
not give.`

func main() {
	ctx, stop := notifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := MainContext(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// signalled is the cause of the context notifyContext returns once one of
// its signals arrived: the command that stopped because of it exits 128
// plus its number (exitcode.go).
type signalled struct{ sig syscall.Signal }

func (s *signalled) Error() string {
	switch s.sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.sig.String()
}

// Is makes a signalled cause context.Canceled, as signal.NotifyContext's is.
func (s *signalled) Is(target error) bool { return target == context.Canceled }

// notifyContext is signal.NotifyContext with a cause that carries the
// signal (a *signalled) rather than only its name: the exit code is 128
// plus its number. After the first signal the command winds down; a
// second one ends the process the default way. stop releases the
// notification.
func notifyContext(parent context.Context, sigs ...os.Signal) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	go func() {
		select {
		case s := <-ch:
			signal.Stop(ch)
			sig, _ := s.(syscall.Signal)
			cancel(&signalled{sig})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel(nil)
	}
}

// Main runs the CLI with args and returns the process exit code. It is
// separate from main so tests can call it in-process.
func Main(args []string, stdout, stderr io.Writer) int {
	return MainContext(context.Background(), args, stdout, stderr)
}

// MainContext is Main with the context every command runs under: when it
// ends, the command stops what it is doing, cleans up and returns. When
// its cause is a signal (main's notifyContext), the exit code is 128 plus
// the signal's number whatever the command returned: 130 for SIGINT, 143
// for SIGTERM; otherwise an interrupted command exits 1.
func MainContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	args, cmdArgs := splitRun(args)
	g := &Globals{ctx: ctx, stdout: stdout, stderr: stderr, args: args, cmdArgs: cmdArgs}
	unsetEmptyEnv()
	tree := commands
	if len(args) > 0 && args[0] == "run" {
		// The entrypoint: the tree holds run alone, so that it does not
		// build every command's flags.
		tree = []command{newRunCmd}
	}
	root := newRoot(g, tree)
	root.SetArgs(args)
	c, err := root.ExecuteC()
	var ran *ranError
	switch {
	case err == nil:
		return exitOK
	case !errors.As(err, &ran):
		fmt.Fprintf(stderr, "preflight: error: %s\n", err)
		fmt.Fprintf(stderr, "preflight: hint: run '%s --help' for usage\n", c.CommandPath())
		return exitUsage
	}
	code := exitOK
	if ran.err != nil {
		code = report(stderr, ran.err)
	}
	if n, ok := signalCode(ctx); ok {
		return n
	}
	return code
}

// report prints err (unless it only carries an exit code) and returns the
// exit code it stands for.
func report(stderr io.Writer, err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "preflight: error: %s\n", ee.err)
			for _, h := range ee.hints {
				fmt.Fprintf(stderr, "preflight: hint: %s\n", h)
			}
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "preflight: error: %s\n", err)
	return exitInternal
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "devel"
}

// imageRepo is where each release's image is published, tagged with the
// release's version without the v (.github/workflows/release.yml).
const imageRepo = "ghcr.io/preflight-sqlite/preflight"

// releaseImage is the released image of version v (imageRepo:1.2.3 for
// v1.2.3, :1.2.0-rc.1 for v1.2.0-rc.1), or "" when v is not a release's
// version: "devel", a Go pseudo-version, git describe's output past a tag
// (v1.2.3-4-gabcdef0, -dirty), a goreleaser snapshot, build metadata.
func releaseImage(v string) string {
	if !semver.IsValid(v) || semver.Canonical(v) != v || module.IsPseudoVersion(v) {
		return ""
	}
	for _, id := range strings.Split(strings.TrimPrefix(semver.Prerelease(v), "-"), ".") {
		if id == "dirty" || strings.Contains(id, "snapshot") || gitDescribed(id) {
			return ""
		}
	}
	return imageRepo + ":" + strings.TrimPrefix(v, "v")
}

// gitDescribed reports whether a prerelease identifier is git describe's
// "N-gHASH" (commits past the tag), with -dirty or not.
func gitDescribed(id string) bool {
	n, rest, ok := strings.Cut(id, "-g")
	if !ok || n == "" || strings.Trim(n, "0123456789") != "" {
		return false
	}
	hash, _, _ := strings.Cut(rest, "-")
	return len(hash) >= 4 && strings.Trim(hash, "0123456789abcdef") == ""
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// unsetEmptyEnv removes PREFLIGHT_* variables set to the empty string
// (compose's ${VAR:-} gives those), so they mean "default", not "invalid".
func unsetEmptyEnv() {
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "PREFLIGHT_") && strings.TrimSpace(value) == "" {
			os.Unsetenv(name)
		}
	}
}

// splitRun splits off the application's command line of `run`: what
// follows the first "--" when the command word (the first argument that
// is neither a flag nor --mountinfo's value) is run. A path or a flag's
// value named run, and any "--" of another command, stay where they are.
func splitRun(args []string) (flags, cmd []string) {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--mountinfo":
			i++
		case a == "--":
			return args, nil
		case strings.HasPrefix(a, "-"):
		case a == "run":
			if j := slices.Index(args[i:], "--"); j >= 0 {
				return append(slices.Clip(args[:i+j]), "--"), args[i+j+1:]
			}
			return args, nil
		default:
			return args, nil
		}
	}
	return args, nil
}
