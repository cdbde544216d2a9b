package health_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/glebarez/go-sqlite" // driver "sqlite"

	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// The test binary doubles as a sibling process, selected by helperEnv. The
// sibling must be another process: SQLite's POSIX locks are per process, and
// closing any descriptor of the database in the test process would drop
// them (https://sqlite.org/howtocorrupt.html#posix_close_bug).
//
//   - "hold": open the database named by dbEnv, run the statements in
//     stmtsEnv (separated by newlines) on one connection, print "ready",
//     then wait until stdin closes or holdFor passes and exit without
//     committing.
//   - "kill-me": like "hold", but never exits by itself: the test sends
//     SIGKILL, as a crash would.
//   - "lock-dir": take an exclusive flock(2) on the directory named by
//     dbEnv, as the owner of a private copy does, print "ready", then wait
//     like "hold".
const (
	helperEnv = "HEALTH_TEST_HELPER"
	dbEnv     = "HEALTH_TEST_DB"
	stmtsEnv  = "HEALTH_TEST_STMTS"
	holdFor   = 4 * time.Second
)

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		code := m.Run()
		if benchDir != "" {
			os.RemoveAll(benchDir)
		}
		os.Exit(code)
	case "lock-dir":
		if err := lockDirHelper(os.Getenv(dbEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "hold", "kill-me":
		if err := holdHelper(os.Getenv(dbEnv), os.Getenv(stmtsEnv), os.Getenv(helperEnv) == "kill-me"); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	default:
		fmt.Fprintln(os.Stderr, "unknown helper", os.Getenv(helperEnv))
		os.Exit(2)
	}
}

func holdHelper(path, stmts string, forever bool) error {
	db, err := sql.Open("sqlite", testdb.DSN(path, "_pragma=busy_timeout(5000)"))
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, q := range strings.Split(stmts, "\n") {
		if strings.TrimSpace(q) == "" {
			continue
		}
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	fmt.Println("ready")
	if forever {
		select {}
	}
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(done) }()
	select {
	case <-done:
	case <-time.After(holdFor):
	}
	return nil
}

func lockDirHelper(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := flockEx(f); err != nil {
		return err
	}
	fmt.Println("ready")
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
	}
	return nil
}

// sibling is a helper process started by startSibling.
type sibling struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startSibling runs helper mode on db with stmts and waits for "ready".
// The process is ended at cleanup (stdin closed, or SIGKILL for kill-me).
func startSibling(t *testing.T, mode, db string, stmts ...string) *sibling {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, dbEnv+"="+db, stmtsEnv+"="+strings.Join(stmts, "\n"))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s helper: %v", mode, err)
	}
	s := &sibling{cmd: cmd, stdin: stdin}
	t.Cleanup(func() { s.stop() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("%s helper said %q, %v; want \"ready\"", mode, line, err)
	}
	return s
}

// kill sends SIGKILL and reaps the process.
func (s *sibling) kill() {
	if s.cmd.ProcessState != nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()
}

// stop closes stdin and waits; kill-me helpers are killed.
func (s *sibling) stop() {
	if s.cmd.ProcessState != nil {
		return
	}
	s.stdin.Close()
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		s.cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
}

// exec runs statements on a fresh read-write connection to path.
func execDB(t testing.TB, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", testdb.DSN(path, "_pragma=busy_timeout(2000)"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("Exec(%q) on %s: %v", q, path, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatalf("close %s: %v", path, err)
	}
}

// rootPage returns the root page of object name and the page size.
func rootPage(t testing.TB, path, name string) (root, pageSize int64) {
	t.Helper()
	db, err := sql.Open("sqlite", testdb.DSN(path, "mode=ro"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(`select rootpage from sqlite_master where name = ?`, name).Scan(&root); err != nil {
		t.Fatalf("rootpage of %s in %s: %v", name, path, err)
	}
	if err := db.QueryRow(`pragma page_size`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	return root, pageSize
}

// zeroPage overwrites page pg (1-based) of path with zeros, the state a
// lost write leaves: SQLite reports "btreeInitPage() returns error code 11".
func zeroPage(t testing.TB, path string, pg, pageSize int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, pageSize), (pg-1)*pageSize); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// requireTool returns the path of an executable, skipping the test when it
// is missing unless CI=true, where that is a failure.
func requireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI: %v", name, err)
		}
		t.Skipf("skipping: %s not on PATH (set CI=true to make this a failure)", name)
	}
	return p
}

// makeDB creates a database like testdb.Make (table t(id, v) in journal
// mode mode) with n rows inserted in one transaction.
func makeDB(t testing.TB, path, mode string, n int) {
	t.Helper()
	testdb.Make(t, path, mode, 0)
	execDB(t, path, fmt.Sprintf(`with recursive c(x) as (select 1 union all select x+1 from c where x < %d)
		insert into t(v) select 'row ' || x from c`, n))
}
