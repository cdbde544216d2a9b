//go:build linux

package procfs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"

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
	if err := testdb.ServeSQL(os.Getenv(dbEnv), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sql helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

type child = testdb.Child

// startChild runs the helper on path (via the path given, which may be a
// link) and stops it at cleanup.
func startChild(t testing.TB, path string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", dbEnv+"="+path)
	return startCmd(t, cmd)
}

// startCmd starts cmd, which must speak the helper's protocol.
func startCmd(t testing.TB, cmd *exec.Cmd) *child { return testdb.StartCmd(t, cmd) }
