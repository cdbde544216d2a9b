package testdb

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// printedPrefixes are how the commands preflight prints for a person
// start.
var printedPrefixes = []string{"docker ", "kill ", "preflight "}

// PrintedCommands are the commands in the "fix:" lines of a text report,
// exactly as printed, each once, in order: a fix that is a command, or
// the command after the last ": " of a fix sentence ("Stop it before
// converting or moving the database: docker stop web").
func PrintedCommands(out string) []string {
	isCommand := func(s string) bool {
		return slices.ContainsFunc(printedPrefixes, func(p string) bool { return strings.HasPrefix(s, p) })
	}
	var cmds []string
	for _, l := range strings.Split(out, "\n") {
		fix, ok := strings.CutPrefix(strings.TrimSpace(l), "fix: ")
		if !ok {
			continue
		}
		if i := strings.LastIndex(fix, ": "); i >= 0 && !isCommand(fix) {
			fix = fix[i+2:]
		}
		if isCommand(fix) && !slices.Contains(cmds, fix) {
			cmds = append(cmds, fix)
		}
	}
	return cmds
}

// RunPrinted runs line, a command as preflight printed it, through sh -c
// in a new directory, with the directory of preflight (a built binary)
// first on PATH. It returns the combined output and the exit code; a
// command that cannot be started fails the test.
func RunPrinted(t testing.TB, line, preflight string) (string, int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(preflight)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Logf("%s: exit %d\n%s", line, ee.ExitCode(), out)
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	t.Logf("%s: exit 0\n%s", line, out)
	return string(out), 0
}
