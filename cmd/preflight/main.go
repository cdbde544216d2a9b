// Command preflight checks that SQLite databases in a container's data
// directory are safe where they are, and runs as an image's ENTRYPOINT.
//
// Output policy: the result (a report, a mount list) goes to stdout, as text
// or as JSON with --format json. Everything else (errors, hints, the log of
// `preflight run`) goes to stderr, as `preflight: error: ...` and
// `preflight: hint: ...` lines, without colour. The exit code follows one
// table (exitcode.go), printed in --help and the README.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"
	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/manifest"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

// Globals are flags shared by every command.
type Globals struct {
	Mountinfo string           `name:"mountinfo" env:"PREFLIGHT_MOUNTINFO" placeholder:"FILE" help:"Classify paths against a mount table saved on another machine (mountinfo, /proc/mounts, mount or findmnt output; auto-detected) instead of /proc/self/mountinfo. The paths are that machine's: nothing on this machine is read."`
	Version   kong.VersionFlag `env:"-" help:"Print the version and exit."`

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
}

// given reports whether flag (e.g. "--data-dir") was on the command line
// before "--", as opposed to coming from its environment variable.
func (g *Globals) given(flag string) bool {
	for _, a := range g.args {
		if a == "--" {
			return false
		}
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

// CLI is the command tree.
type CLI struct {
	Globals

	Check   CheckCmd   `cmd:"" help:"Check data directories or database files: filesystem class, journal mode, findings."`
	Mounts  MountsCmd  `cmd:"" help:"List every mount with its class, or the mount holding PATH."`
	Run     RunCmd     `cmd:"" help:"Check the data directories, log findings to stderr, then exec CMD (the container ENTRYPOINT)."`
	Writers WritersCmd `cmd:"" help:"List the containers that write a named volume or host directory (Docker Engine API)."`
	Convert ConvertCmd `cmd:"" help:"Convert databases offline to journal_mode=DELETE (or back to WAL), guarded by every live-writer probe, with a backup and verification."`
	Compose ComposeCmd `cmd:"" help:"Find SQLite data on unsafe mounts in a compose project, propose the named-volume rewrite with its data migration, and gate CI (exit 3 on an error-level finding; --fail-on warn: 4 on warnings)."`
	Migrate MigrateCmd `cmd:"" help:"Copy a data directory to another (a bind to a named volume) so nothing is lost: databases through SQLite, other files with owner, mode and times, then verify."`
	Kube    KubeCmd    `cmd:"" help:"Lint Kubernetes manifests (files, directories, or - for helm template / kubectl kustomize output) for SQLite data that more than one pod can write: rolling updates, replicas, DaemonSets, shared and ReadWriteMany network claims; each finding with a JSON merge patch."`
}

// hideCompose leaves `compose` and `kube` out of --help in a build
// without them (-tags nocompose) and says so in their own help; running
// them still exits 1 with the reason.
func hideCompose(k *kong.Kong) error {
	for _, n := range k.Model.Children {
		if n.Name == "compose" && !compose.Built || n.Name == "kube" && !manifest.Built {
			n.Hidden = true
			n.Help = "Not in this build (-tags nocompose, the image's binary): " + n.Help
		}
	}
	return nil
}

// runCLI is the command tree when the first argument is "run": the same
// RunCmd and Globals as CLI, without the other commands.
type runCLI struct {
	Globals

	Run RunCmd `cmd:"" help:"Check the data directories, log findings to stderr, then exec CMD (the container ENTRYPOINT)."`
}

const description = `Keeps SQLite databases safe inside containers: WAL mode needs coherent POSIX
locks and shared memory, which bind mounts across a VM boundary (Docker
Desktop, OrbStack, Podman machine, Colima, Lima, WSL2) and network or FUSE
filesystems do not give.

Exit codes:
  0    ok (or only findings below --fail-on)
  1    could not run (internal error, or the command needs Linux);
       convert: a conversion failed
  2    bad usage or bad input; compose --write: a compose file another
       user could redirect
  3    unsafe: an error-level finding; convert: refused (a writer, an
       unverified probe, Litestream, WAL frames that would be lost)
  4    warnings only
  126  run: CMD is not executable
  127  run: CMD not found
  130  interrupted by SIGINT (128 + 2): what the command made is removed;
       convert: the database is as it was, or converted (see its report)
  143  interrupted by SIGTERM (128 + 15), the same
After 'preflight run' execs CMD, the exit code is the application's.`

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
	cli := CLI{Globals: Globals{ctx: ctx, stdout: stdout, stderr: stderr, args: args, cmdArgs: cmdArgs}}
	unsetEmptyEnv()
	exit := -1
	// `preflight run` starts every container, and kong builds its model
	// from every command's struct tags at each start (about 1 ms for the
	// whole tree): the entrypoint parses with a tree of run alone.
	var model any = &cli
	g := &cli.Globals
	if len(args) > 0 && args[0] == "run" {
		r := &runCLI{Globals: cli.Globals}
		model, g = r, &r.Globals
	}
	parser, err := kong.New(model,
		kong.Name("preflight"),
		kong.Description(description),
		kong.Vars{"version": "preflight " + buildVersion()},
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) {
			if exit < 0 {
				exit = code
			}
		}),
		kong.UsageOnError(),
		// Every flag without its own env tag is also PREFLIGHT_<NAME>:
		// images configure their entrypoints through ENV.
		kong.DefaultEnvars("PREFLIGHT"),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.PostBuild(hideCompose),
	)
	if err != nil {
		return report(stderr, fmt.Errorf("build command line: %w", err))
	}
	kctx, err := parser.Parse(args)
	if exit >= 0 { // --help or --version
		if exit == 80 {
			return exitUsage
		}
		return exit
	}
	if err != nil {
		fmt.Fprintf(stderr, "preflight: error: %s\n", fromEnv(err, args))
		fmt.Fprintln(stderr, "preflight: hint: run 'preflight --help' for usage")
		return exitUsage
	}
	err = kctx.Run(g)
	code := exitOK
	if err != nil {
		code = report(stderr, err)
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

// splitRun rewrites args before parsing: "--deep=full" and "--deep=quick"
// become --deep with --deep-mode, and for `run` everything after the first
// "--" is split off as the application's command line.
func splitRun(args []string) (flags, cmd []string) {
	run := false
	for i, a := range args {
		switch {
		case a == "--":
			if run {
				return append(flags, "--"), args[i+1:]
			}
			return append(flags, args[i:]...), nil
		case a == "run":
			run = true
		case a == "--deep=full" || a == "--deep=quick":
			flags = append(flags, "--deep", "--deep-mode="+strings.TrimPrefix(a, "--deep="))
			continue
		}
		flags = append(flags, a)
	}
	return flags, nil
}

// fromEnv names the environment variable in a parse error about a flag
// whose value came from it ("--on-unsafe (PREFLIGHT_ON_UNSAFE) must be one
// of ..."): a flag not on the command line, with one of its variables set,
// that the error names first. Other errors are returned as they are.
func fromEnv(err error, args []string) string {
	msg := err.Error()
	var pe *kong.ParseError
	if !errors.As(err, &pe) || pe.Context == nil {
		return msg
	}
	for _, f := range pe.Context.Flags() {
		name := "--" + f.Name
		if !strings.HasPrefix(msg, name+" ") || onCommandLine(args, f) {
			continue
		}
		for _, env := range f.Envs {
			if _, ok := os.LookupEnv(env); ok {
				return name + " (" + env + ")" + strings.TrimPrefix(msg, name)
			}
		}
	}
	return msg
}

// onCommandLine reports whether args give flag f (--name, --name=V, -s).
func onCommandLine(args []string, f *kong.Flag) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--"+f.Name || strings.HasPrefix(a, "--"+f.Name+"=") || f.Short != 0 && strings.HasPrefix(a, "-"+string(f.Short)) && !strings.HasPrefix(a, "--") {
			return true
		}
	}
	return false
}
