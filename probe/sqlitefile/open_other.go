//go:build !unix

package sqlitefile

import "os"

// openRead opens path read-only.
func openRead(path string) (*os.File, error) {
	return os.Open(path)
}
