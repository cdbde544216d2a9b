// Command sqlserve is a test-only program: it holds the database named by
// its argument open on one connection and runs each line of its standard
// input as SQL, answering "ok" or "error: ..." (testdb.ServeSQL). Built
// static into a FROM scratch image, it is a lock holder in another
// container.
package main

import (
	"fmt"
	"os"

	"github.com/preflight-sqlite/preflight/internal/testdb"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sqlserve DB")
		os.Exit(2)
	}
	if err := testdb.ServeSQL(os.Args[1], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sqlserve:", err)
		os.Exit(1)
	}
}
