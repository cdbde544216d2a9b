//go:build !unix

package migrate

import (
	"io/fs"
	"os"
)

// keepMeta keeps the mode and modification time; owners are a Unix idea.
func keepMeta(dst string, fi fs.FileInfo, symlink bool) error {
	if symlink {
		return nil
	}
	if err := os.Chmod(dst, fi.Mode().Perm()); err != nil {
		return err
	}
	return os.Chtimes(dst, fi.ModTime(), fi.ModTime())
}
