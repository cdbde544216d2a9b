//go:build !unix

package dirfd

import "io/fs"

// Swappable is the Unix check of the directories on the way to a file
// (see swappable_unix.go); elsewhere nothing is checked.
func Swappable(string) (string, string) { return "", "" }

// UntrustedLink is the Unix check of the symlinks on the way to a file
// (see swappable_unix.go); elsewhere nothing is checked.
func UntrustedLink(string) (string, string) { return "", "" }

// Owner is not known here: ok is false.
func Owner(fs.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }

// SwappableNew is the Unix check of a directory to be created (see
// swappable_unix.go); elsewhere nothing is checked.
func SwappableNew(string) (string, string) { return "", "" }
