//go:build unix

package main

import (
	"os"
	"syscall"
)

// keepOwner returns a function that gives a file fi's owner and group
// (os.Lchown), when running as root; otherwise one that does nothing.
func keepOwner(fi os.FileInfo) func(name string) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
		return func(name string) error { return os.Lchown(name, int(st.Uid), int(st.Gid)) }
	}
	return func(string) error { return nil }
}
