//go:build unix

package main

import (
	"io/fs"
	"os"
	"syscall"
)

// keepOwner returns a function that gives a file the owner and group of fi
// (lchown(2)) when this process runs as root, and does nothing otherwise:
// run as root, an edited compose file and its backup must still belong to
// the user whose project it is.
func keepOwner(fi fs.FileInfo) func(name string) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || os.Geteuid() != 0 {
		return func(string) error { return nil }
	}
	return func(name string) error { return os.Lchown(name, int(st.Uid), int(st.Gid)) }
}
