//go:build !unix

package migrate

import (
	"io/fs"
	"os"
)

// keepMeta keeps the mode and modification time; owners are a Unix idea.
func keepMeta(root *os.Root, rel string, fi fs.FileInfo, symlink bool) error {
	if symlink {
		return nil
	}
	if err := root.Chmod(rel, fi.Mode().Perm()); err != nil {
		return err
	}
	return root.Chtimes(rel, fi.ModTime(), fi.ModTime())
}
