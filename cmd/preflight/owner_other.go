//go:build !unix

package main

import "io/fs"

// keepOwner does nothing where files have no Unix owner (Windows: a new
// file takes its directory's ACL, which is what the project's files have).
func keepOwner(fs.FileInfo) func(name string) error {
	return func(string) error { return nil }
}
