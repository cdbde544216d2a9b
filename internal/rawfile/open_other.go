//go:build !unix

package rawfile

import "os"

// open on systems without O_NONBLOCK and O_NOFOLLOW for open(2): a plain
// open; Open's fstat still refuses what is not a regular file.
func open(path string, _ bool) (*os.File, error) { return os.Open(path) }

func openDir(path string) (*os.File, error) { return os.Open(path) }
