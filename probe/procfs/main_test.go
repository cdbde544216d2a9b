package procfs_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/testdb"
	"github.com/preflight-sqlite/preflight/probe/procfs"
)

// The test binary doubles as a helper process when helperEnv is set. With
// helperEnv=scan it runs Scan for dbEnv and prints the Result as JSON.
// Otherwise it
// opens the database named by dbEnv on one connection and runs each line
// of stdin as SQL, answering "ok" or "error: ..." on stdout, until stdin
// closes. The line "write-loop" starts inserting a row every 5 ms in the
// background. SQLite connections must live in another process: the probes
// read the same files, and a descriptor closed in this process would drop
// a same-process connection's POSIX locks (sqlite-facts.md §5.3).
const (
	helperEnv = "PROCFS_TEST_HELPER"
	dbEnv     = "PROCFS_TEST_DB"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "" {
		code := m.Run()
		killBenchProcs()
		os.Exit(code)
	}
	if os.Getenv(helperEnv) == "scan" {
		// Scan for the database in dbEnv and print the Result as JSON
		// (run as another user).
		tg, err := procfs.TargetFor(os.Getenv(dbEnv))
		if err == nil {
			var res procfs.Result
			res, err = procfs.Scan(context.Background(), []procfs.Target{tg}, procfs.Options{})
			if err == nil {
				err = json.NewEncoder(os.Stdout).Encode(res)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "scan helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if err := sqlHelper(os.Getenv(dbEnv), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sql helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func sqlHelper(path string, in io.Reader, out io.Writer) error {
	db, err := sql.Open("sqlite", testdb.DSN(path, "_pragma=busy_timeout(2000)"))
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
	var mu sync.Mutex // serialises use of conn
	stop := make(chan struct{})
	defer close(stop)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := sc.Text()
		if line == "write-loop" {
			go func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
					mu.Lock()
					conn.ExecContext(ctx, `insert into t(v) values ('loop')`)
					mu.Unlock()
				}
			}()
			fmt.Fprintln(out, "ok")
			continue
		}
		mu.Lock()
		_, err := conn.ExecContext(ctx, line)
		mu.Unlock()
		if err != nil {
			fmt.Fprintln(out, "error:", strings.ReplaceAll(err.Error(), "\n", " "))
		} else {
			fmt.Fprintln(out, "ok")
		}
	}
	return sc.Err()
}

// child is a running helper process.
type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startChild runs the helper on path (via the path given, which may be a
// link) and stops it at cleanup.
func startChild(t testing.TB, path string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", dbEnv+"="+path)
	return startCmd(t, cmd)
}

// startCmd starts cmd, which must speak the helper's protocol.
func startCmd(t testing.TB, cmd *exec.Cmd) *child {
	t.Helper()
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", cmd.Args, err)
	}
	c := &child{cmd: cmd, in: in, out: bufio.NewReader(out)}
	t.Cleanup(c.stop)
	return c
}

// do runs one line of SQL in the child and fails the test unless it
// answers "ok".
func (c *child) do(t testing.TB, line string) {
	t.Helper()
	if _, err := fmt.Fprintln(c.in, line); err != nil {
		t.Fatalf("send %q to child %d: %v", line, c.cmd.Process.Pid, err)
	}
	got, err := c.out.ReadString('\n')
	if err != nil || got != "ok\n" {
		t.Fatalf("child %d: %q answered %q, %v; want \"ok\"", c.cmd.Process.Pid, line, got, err)
	}
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// stop closes the child's stdin and waits for it; safe to call twice.
func (c *child) stop() {
	if c.in == nil {
		return
	}
	c.in.Close()
	c.in = nil
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
}
