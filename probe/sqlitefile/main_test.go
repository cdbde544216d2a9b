package sqlitefile_test

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	_ "github.com/glebarez/go-sqlite" // driver "sqlite", used only by tests

	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// The test binary doubles as a helper process, selected by helperEnv:
//
//   - "live-wal": open the database named by dbEnv in WAL mode, write to it,
//     print "ready" and keep the connection open until stdin closes. The
//     connection must live in another process: closing the probe's file
//     descriptor would drop a same-process connection's POSIX locks
//     (https://sqlite.org/howtocorrupt.html#posix_close_bug).
//   - "discover": run Discover on the dirs in dirsEnv (JSON) with
//     MaxDepth 2 and print the Result and error as JSON; used to run as an
//     unprivileged user.
const (
	helperEnv = "SQLITEFILE_TEST_HELPER"
	dbEnv     = "SQLITEFILE_TEST_DB"
	dirsEnv   = "SQLITEFILE_TEST_DIRS"
)

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "live-wal":
		if err := liveWALHelper(os.Getenv(dbEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "live-wal helper:", err)
			os.Exit(1)
		}
	case "discover":
		if err := discoverHelper(os.Getenv(dirsEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "discover helper:", err)
			os.Exit(1)
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown helper", os.Getenv(helperEnv))
		os.Exit(2)
	}
	os.Exit(0)
}

func liveWALHelper(path string) error {
	db, err := sql.Open("sqlite", fileDSN(path, ""))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		"pragma journal_mode=wal",
		"pragma wal_autocheckpoint=0",
		"create table if not exists t(a)",
		"insert into t values(1),(2),(3)",
	} {
		if _, err := db.Exec(q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	if _, err := fmt.Println("ready"); err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, os.Stdin)
	return err
}

type discoverOutput struct {
	Result sqlitefile.Result
	Err    string
}

func discoverHelper(dirsJSON string) error {
	var dirs []string
	if err := json.Unmarshal([]byte(dirsJSON), &dirs); err != nil {
		return err
	}
	res, err := sqlitefile.Discover(dirs, sqlitefile.DiscoverOptions{})
	out := discoverOutput{Result: res}
	if err != nil {
		out.Err = err.Error()
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// startLiveWAL runs the live-wal helper on path and waits until it holds an
// open WAL connection with committed frames in path-wal. The helper is
// stopped at cleanup.
func startLiveWAL(t *testing.T, path string) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=live-wal", dbEnv+"="+path)
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
		t.Fatalf("start live-wal helper: %v", err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("live-wal helper: %v", err)
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("live-wal helper said %q, %v; want \"ready\"", line, err)
	}
}

// fileDSN returns a file: URI DSN for path, so that glebarez hands the query
// (mode=...) to SQLite instead of cutting it off (sqlite-facts.md §8.1).
func fileDSN(path, query string) string {
	return (&url.URL{Scheme: "file", Path: path, RawQuery: query}).String()
}

// createDB creates a database at path with the Go driver, runs stmts on one
// connection, closes it, and returns the library's SQLITE_VERSION_NUMBER.
func createDB(t testing.TB, path string, stmts ...string) uint32 {
	t.Helper()
	db, err := sql.Open("sqlite", fileDSN(path, "mode=rwc"))
	if err != nil {
		t.Fatalf("sql.Open(%q): %v", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("Exec(%q) on %s: %v", q, path, err)
		}
	}
	var v string
	if err := db.QueryRow("select sqlite_version()").Scan(&v); err != nil {
		t.Fatalf("select sqlite_version(): %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("close %s: %v", path, err)
	}
	return versionNumber(t, v)
}

// versionNumber converts "3.53.3" to SQLITE_VERSION_NUMBER 3053003.
func versionNumber(t testing.TB, v string) uint32 {
	t.Helper()
	parts := strings.SplitN(v, ".", 3)
	if len(parts) != 3 {
		t.Fatalf("version %q: want X.Y.Z", v)
	}
	var n uint32
	for _, p := range parts {
		d, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			t.Fatalf("version %q: %v", v, err)
		}
		n = n*1000 + uint32(d)
	}
	return n
}

// requireTool returns the path of an executable, skipping the test when it
// is missing unless CI=true, where that is a failure.
func requireTool(t *testing.T, name string) string {
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

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
