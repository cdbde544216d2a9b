package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	"github.com/pmezard/go-difflib/difflib"
	"github.com/preflight-sqlite/preflight/internal/fuseloop"
	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/rogpeppe/go-internal/txtar"
)

// scriptCommands are the programs the scripts run as separate processes
// (the test binary under another name, see testscript.Main): preflight
// itself, with the script's environment and working directory.
var scriptCommands = map[string]func(){
	"preflight": func() { os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr)) },
}

// TestScripts runs the CLI scripts in testdata/script: each command's
// common paths, exit codes, and text and JSON output compared with golden
// files by cmpout. go test -run TestScripts -update (the flag of
// compose_test.go) rewrites the goldens: read every changed one before
// committing it.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("TZ", "UTC")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"mkdb":      cmdMkdb,
			"fusemount": cmdFusemount,
			"cmpout":    cmdCmpout,
			"status":    cmdStatus,
			"zeropage":  cmdZeropage,
		},
		Condition: func(cond string) (bool, error) {
			if cond == "fuse" {
				// Under CI the condition holds, so that fusemount fails
				// instead of the script skipping.
				return testdb.Required() || testdb.FUSEMissing() == "", nil
			}
			if cond == "sqlite3" {
				// Debian's sqlite3 CLI; under CI the condition holds, so
				// that exec sqlite3 fails instead of the script skipping.
				_, err := exec.LookPath("sqlite3")
				return os.Getenv("CI") == "true" || err == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

// cmdStatus is "status CODE PROGRAM [ARGS...]": exec, whose exit code
// must be CODE (testscript's exec and ! exec tell only zero from not).
func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: status CODE PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", strings.Join(args[1:], " "), got, want)
	}
}

// cmdMkdb is "mkdb MODE PATH [ROWS]": a real SQLite database at PATH in
// journal mode MODE (wal or delete) with table t and ROWS rows (default 1),
// closed (so a WAL database has no -wal left), making its directory.
func cmdMkdb(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: mkdb wal|delete PATH [ROWS]")
	}
	rows := 1
	if len(args) == 3 {
		n, err := strconv.Atoi(args[2])
		ts.Check(err)
		rows = n
	}
	path := ts.MkAbs(args[1])
	ts.Check(os.MkdirAll(filepath.Dir(path), 0o755))
	ts.Check(testdb.Create(path, args[0], rows))
}

// cmdZeropage is "zeropage PATH PAGE": page PAGE (1-based, 4096 bytes,
// mkdb's page size) of the database at PATH overwritten with zeros.
func cmdZeropage(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: zeropage PATH PAGE")
	}
	pg, err := strconv.Atoi(args[1])
	ts.Check(err)
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_WRONLY, 0)
	ts.Check(err)
	defer f.Close()
	_, err = f.WriteAt(make([]byte, 4096), int64(pg-1)*4096)
	ts.Check(err)
}

// cmdFusemount is "fusemount FSTYPE BACKING MOUNTPOINT": a FUSE loopback
// of directory BACKING at MOUNTPOINT, listed as fuse.FSTYPE, unmounted at
// the end of the script. The FUSE server runs in the test process.
func cmdFusemount(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: fusemount FSTYPE BACKING MOUNTPOINT")
	}
	if why := testdb.FUSEMissing(); why != "" {
		ts.Fatalf("FUSE script (CI=true or PREFLIGHT_REQUIRE_DOCKER=1): %s", why)
	}
	mnt := ts.MkAbs(args[2])
	unmount, err := fuseloop.Mount(ts.MkAbs(args[1]), mnt, args[0])
	ts.Check(err)
	ts.Defer(func() {
		if err := unmount(); err != nil {
			ts.Logf("unmount %s: %v", mnt, err)
		}
	})
}

// cmdCmpout is "cmpout stdout|stderr GOLDEN": the command's output, with
// the facts of this machine made neutral (scrubHost), must equal file GOLDEN of
// the script byte for byte; GOLDEN may say $WORK for the work directory.
// With -update, GOLDEN is rewritten in the script file instead.
func cmdCmpout(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 || args[0] != "stdout" && args[0] != "stderr" {
		ts.Fatalf("usage: cmpout stdout|stderr GOLDEN")
	}
	got := scrubHost(ts.ReadFile(args[0]), ts.Getenv("WORK"))
	if got != "" && !strings.HasSuffix(got, "\n") {
		got += "\n" // a txtar file always ends in a newline (SARIF output does not)
	}
	want := ts.ReadFile(args[1])
	if got == want {
		return
	}
	if *update {
		ts.Check(updateGolden(ts.Name(), args[1], got))
		return
	}
	diff, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(want), B: difflib.SplitLines(got),
		FromFile: args[1], ToFile: args[0], Context: 2,
	})
	ts.Fatalf("%s differs from %s (go test -run TestScripts -update rewrites it):\n%s", args[0], args[1], diff)
}

// updateGolden replaces file name in testdata/script/SCRIPT.txtar with
// text.
func updateGolden(script, name, text string) error {
	path := filepath.Join("testdata", "script", script+".txtar")
	a, err := txtar.ParseFile(path)
	if err != nil {
		return err
	}
	for i := range a.Files {
		if a.Files[i].Name == name {
			a.Files[i].Data = []byte(text)
			return os.WriteFile(path, txtar.Format(a), 0o644)
		}
	}
	return fmt.Errorf("%s has no file %s", path, name)
}

var (
	// processesUnread is the process probe's count of /proc entries it
	// could not read, out of all processes: the total changes from one
	// moment to the next.
	processesUnread = regexp.MustCompile(`\b\d+ of \d+ processes could not be read(?: \(PID \d+ [^,)]*(?:, PID \d+ [^,)]*)*\))?`)
	// nanoseconds is a JSON duration, elapsed is a measured duration in
	// text (convert's "in 66ms", "conversion 39ms", a backup's "8192
	// bytes, 18ms"), backupTime the UTC time in a backup's name.
	nanoseconds = regexp.MustCompile(`"(\w+)_ns": \d+`)
	elapsed     = regexp.MustCompile(`\b(in|conversion|verification|bytes,) \d+(?:\.\d+)?(?:ns|µs|ms|s|m|h)(?:\d+(?:\.\d+)?(?:ns|µs|ms|s))*\b`)
	backupTime  = regexp.MustCompile(`\.preflight-backup-\d{8}T\d{6}Z`)
	// workfsOptions is the JSON options of the mount whose source was
	// made $WORKFS_SOURCE (mount and superblock options).
	workfsOptions = regexp.MustCompile(`("source": "\$WORKFS_SOURCE",\n\s+"options": )"[^"]*"`)
)

// scrubHost makes the facts of this machine in out neutral: the work
// directory becomes $WORK, the unread processes N of M (PIDS), measured durations 0
// (JSON) or D (text), a backup's time TIME, and the
// source and options of the filesystem holding the work directory
// $WORKFS_SOURCE and $WORKFS_OPTIONS (its fstype and mountpoint stay: a
// golden made on a local disk is only right on a local disk).
func scrubHost(out, work string) string {
	if work != "" {
		out = strings.ReplaceAll(out, work, "$WORK")
	}
	// Which processes could not be read depends on what else runs (other
	// tests' containers, the machine's PID 1): only that some could not.
	out = processesUnread.ReplaceAllString(out, "N of M processes could not be read (PIDS)")
	out = nanoseconds.ReplaceAllString(out, `"${1}_ns": 0`)
	out = elapsed.ReplaceAllString(out, "$1 D")
	out = backupTime.ReplaceAllString(out, ".preflight-backup-TIME")
	if m := mountOf(work); m != nil && strings.HasPrefix(m.Source, "/") {
		src := regexp.MustCompile(regexp.QuoteMeta(m.Source) + `\b`)
		out = src.ReplaceAllString(out, "$$WORKFS_SOURCE")
		out = workfsOptions.ReplaceAllString(out, `$1"$$WORKFS_OPTIONS"`)
	}
	return out
}

// mountOf returns this machine's mount that holds dir, or nil.
func mountOf(dir string) *mountinfo.Info {
	if dir == "" {
		return nil
	}
	ms, err := mountinfo.GetMounts(nil)
	if err != nil {
		return nil
	}
	var best *mountinfo.Info
	for _, m := range ms {
		if (dir == m.Mountpoint || strings.HasPrefix(dir, strings.TrimSuffix(m.Mountpoint, "/")+"/")) &&
			(best == nil || len(m.Mountpoint) >= len(best.Mountpoint)) {
			best = m
		}
	}
	return best
}
