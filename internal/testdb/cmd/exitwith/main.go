// Command exitwith prints its GOARCH and exits with the code given as its
// one argument (0 to 255). scripts/cross-smoke.sh builds it for each
// architecture it tests, as the CMD of `preflight run -- CMD`: the exit code
// must pass through the exec, and the output shows which binary ran.
//
//	exitwith CODE
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: exitwith CODE")
		os.Exit(2)
	}
	code, err := strconv.Atoi(os.Args[1])
	if err != nil || code < 0 || code > 255 {
		fmt.Fprintf(os.Stderr, "exitwith: bad code %q\n", os.Args[1])
		os.Exit(2)
	}
	fmt.Println("exitwith", runtime.GOARCH, code)
	os.Exit(code)
}
