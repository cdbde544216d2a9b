//go:build !unix

package procfs

import "io/fs"

// fileID is not supported on this GOOS: every FileID is zero.
func fileID(fs.FileInfo) FileID { return FileID{} }
