//go:build !linux

package health

import "runtime"

// ProbeFS is implemented on Linux only; elsewhere it returns an FSResult
// with Ran false and Err "probe filesystem: not supported on GOOS".
func ProbeFS(dir string) FSResult {
	return FSResult{Dir: dir, Err: "probe filesystem: not supported on " + runtime.GOOS}
}

// processAlive cannot tell outside Linux; CleanupFSProbes then relies on
// the file's age alone.
func processAlive(int) bool { return true }
