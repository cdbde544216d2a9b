// Command sqlserve is a test-only program: it holds the database named by
// its argument open on one connection and runs each line of its standard
// input as SQL, answering "ok" or "error: ..." (testdb.ServeSQL). Built
// static into a FROM scratch image, it is a lock holder in another
// container.
//
// With SQLSERVE_CGROUP=NAME it first moves itself into a new cgroup NAME
// below its own in every hierarchy mounted under /sys/fs/cgroup (a
// privileged container can): a process that makes its /proc/PID/cgroup
// name another container.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/preflight-sqlite/preflight/internal/testdb"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sqlserve DB")
		os.Exit(2)
	}
	if name := os.Getenv("SQLSERVE_CGROUP"); name != "" {
		if err := moveCgroup(name); err != nil {
			fmt.Fprintln(os.Stderr, "sqlserve:", err)
			os.Exit(1)
		}
	}
	if err := testdb.ServeSQL(os.Args[1], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sqlserve:", err)
		os.Exit(1)
	}
}

// moveCgroup moves this process into cgroup name below its own, in each
// hierarchy under /sys/fs/cgroup (cgroup v2's single one, or v1's).
func moveCgroup(name string) error {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/cgroup.procs")
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.procs"); err == nil {
		roots = append(roots, "/sys/fs/cgroup/cgroup.procs")
	}
	moved := 0
	for _, procs := range roots {
		dir := filepath.Join(filepath.Dir(procs), name)
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			continue
		}
		if os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644) == nil {
			moved++
		}
	}
	if moved == 0 {
		return fmt.Errorf("move into cgroup %s: no hierarchy under /sys/fs/cgroup took this process", name)
	}
	return nil
}
