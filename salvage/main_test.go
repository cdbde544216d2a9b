package salvage_test

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/testdb"
)

// helperEnv makes the test binary a process that holds a database open
// (testdb.ServeSQL): a live writer for the guard to find.
const helperEnv = "SALVAGE_TEST_HOLD_DB"

func TestMain(m *testing.M) {
	if p := os.Getenv(helperEnv); p != "" {
		if err := testdb.ServeSQL(p, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "sql helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if a := os.Getenv(runEnv); a != "" {
		os.Exit(runHelper(a))
	}
	os.Exit(m.Run())
}

// startWriter starts a process that has path open and stops it at
// cleanup.
func startWriter(t testing.TB, path string) *testdb.Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	return testdb.StartCmd(t, cmd)
}
