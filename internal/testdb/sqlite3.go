package testdb

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
)

// SQLite3 is Debian's sqlite3 CLI with a database open, driven through its
// standard input: a real C SQLite (3.40.1 here) holding real locks.
type SQLite3 struct {
	Cmd *exec.Cmd
	in  io.WriteCloser
}

// NeedSQLite3 skips the test when sqlite3 is not on PATH, or fails it
// under CI=true (or PREFLIGHT_REQUIRE_DOCKER=1).
func NeedSQLite3(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("sqlite3"); err != nil {
		if Required() {
			t.Fatal("sqlite3 not on PATH")
		}
		t.Skip("sqlite3 not on PATH: install Debian's sqlite3 to run this test")
	}
}

// StartSQLite3 runs wrapper... sqlite3 path (wrapper: a command that
// execs the rest, such as unshare --pid --fork --mount-proc; none for
// sqlite3 itself), and kills it at cleanup. Its output goes to the test
// log only on failure of a Send.
func StartSQLite3(t testing.TB, path string, wrapper ...string) *SQLite3 {
	t.Helper()
	NeedSQLite3(t)
	argv := append(append([]string{}, wrapper...), "sqlite3", path)
	cmd := exec.Command(argv[0], argv[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", argv, err)
	}
	s := &SQLite3{Cmd: cmd, in: in}
	t.Cleanup(s.Stop)
	return s
}

// Send writes sql (one or more statements, or a dot command) to the CLI.
// It does not wait for them to run: poll for their effect (a lock).
func (s *SQLite3) Send(t testing.TB, sql string) {
	t.Helper()
	if _, err := fmt.Fprintln(s.in, sql); err != nil {
		t.Fatalf("sqlite3: send %q: %v", sql, err)
	}
}

// Stop kills the CLI and waits for it.
func (s *SQLite3) Stop() {
	s.in.Close()
	if s.Cmd.Process != nil {
		s.Cmd.Process.Kill()
	}
	s.Cmd.Wait()
}

// NeedUnsharePID returns the path of unshare(1) after checking that it
// can make a PID namespace (unshare --pid --fork --mount-proc, which needs
// CAP_SYS_ADMIN); it skips the test otherwise, or fails it under Required.
func NeedUnsharePID(t testing.TB) string {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err == nil {
		err = exec.Command(unshare, "--pid", "--fork", "--mount-proc", "true").Run()
	}
	if err != nil {
		if Required() {
			t.Fatalf("unshare --pid --fork --mount-proc: %v", err)
		}
		t.Skipf("skipping: unshare --pid --fork --mount-proc (needs util-linux and CAP_SYS_ADMIN): %v", err)
	}
	return unshare
}
