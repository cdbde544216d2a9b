package testdb

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// ServeSQL is the body of a helper process that holds a database open: it
// opens path on one connection and runs each line read from in as SQL,
// answering "ok" or "error: ..." on out, until in closes. The line
// "write-loop" starts inserting a row into t every 5 ms in the background.
// Tests keep SQLite connections in such a process because the probes read
// the same files, and a descriptor closed in the test process would drop a
// same-process connection's POSIX locks.
func ServeSQL(path string, in io.Reader, out io.Writer) error {
	db, err := sql.Open("sqlite", DSN(path, "_pragma=busy_timeout(2000)"))
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

// Child is a running helper process that speaks ServeSQL's protocol.
type Child struct {
	Cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// StartCmd starts cmd, which must speak ServeSQL's protocol, and stops it
// at the test's cleanup.
func StartCmd(t testing.TB, cmd *exec.Cmd) *Child {
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
	c := &Child{Cmd: cmd, in: in, out: bufio.NewReader(out)}
	t.Cleanup(c.Stop)
	return c
}

// Do runs one line of SQL in the child and fails the test unless it
// answers "ok".
func (c *Child) Do(t testing.TB, line string) {
	t.Helper()
	if _, err := fmt.Fprintln(c.in, line); err != nil {
		t.Fatalf("send %q to child %d: %v", line, c.Cmd.Process.Pid, err)
	}
	got, err := c.out.ReadString('\n')
	if err != nil || got != "ok\n" {
		t.Fatalf("child %d: %q answered %q, %v; want \"ok\"", c.Cmd.Process.Pid, line, got, err)
	}
}

// PID is the child's process id.
func (c *Child) PID() int { return c.Cmd.Process.Pid }

// Stop closes the child's stdin and waits for it (killing it after 10 s);
// safe to call twice.
func (c *Child) Stop() {
	if c.in == nil {
		return
	}
	c.in.Close()
	c.in = nil
	done := make(chan struct{})
	go func() { c.Cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.Cmd.Process.Kill()
		<-done
	}
}
