//go:build !unix

package sqlitefile

import "io/fs"

// fileID is not supported on this GOOS: Dev and Ino stay 0 and Discover
// deduplicates by cleaned path only.
func fileID(fs.FileInfo) (dev, ino uint64, ok bool) {
	return 0, 0, false
}
