//go:build !unix

package dirfd

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Dir is a directory by path: on this system the operations do not hold
// a descriptor, and the guarantee of the package does not hold.
type Dir struct {
	// Path is the directory's path.
	Path string
	fi   fs.FileInfo
}

// Open checks that path is a directory.
func Open(path string) (*Dir, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: errors.New("not a directory")}
	}
	return &Dir{Path: path, fi: fi}, nil
}

func (d *Dir) path(name string) string { return filepath.Join(d.Path, name) }

// Close does nothing.
func (d *Dir) Close() error { return nil }

// Sync does nothing: directories are not fsynced here.
func (d *Dir) Sync() error { return nil }

// Same reports whether fi is this directory (os.SameFile).
func (d *Dir) Same(fi fs.FileInfo) bool { return os.SameFile(d.fi, fi) }

// FreeBytes is unknown here: -1.
func (d *Dir) FreeBytes() (int64, error) { return -1, nil }

// Mkdir creates and returns the subdirectory name.
func (d *Dir) Mkdir(name string, perm fs.FileMode) (*Dir, error) {
	if err := os.Mkdir(d.path(name), perm); err != nil {
		return nil, err
	}
	return Open(d.path(name))
}

// Create creates the new file name (O_EXCL).
func (d *Dir) Create(name string, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(d.path(name), os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
}

// CreateTemp creates a new file named prefix and 16 random hex digits.
func (d *Dir) CreateTemp(prefix string) (*os.File, string, error) {
	for i := 0; ; i++ {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, "", err
		}
		name := prefix + hex.EncodeToString(b[:])
		f, err := d.Create(name, 0o600)
		if err == nil || !errors.Is(err, fs.ErrExist) || i > 100 {
			return f, name, err
		}
	}
}

// Open opens the entry name with flags (os.O_RDONLY, ...).
func (d *Dir) Open(name string, flags int) (*os.File, error) {
	return os.OpenFile(d.path(name), flags, 0)
}

// OpenRegular opens the regular file name for reading.
func (d *Dir) OpenRegular(name string) (*os.File, fs.FileInfo, error) {
	fi, err := os.Lstat(d.path(name))
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, &fs.PathError{Op: "open", Path: d.path(name), Err: errors.New("not a regular file")}
	}
	f, err := os.Open(d.path(name))
	return f, fi, err
}

// OpenDir opens the subdirectory name.
func (d *Dir) OpenDir(name string) (*Dir, error) { return Open(d.path(name)) }

// Lstat is os.Lstat of the entry name.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(d.path(name)) }

// Is reports whether the entry name is the directory sub.
func (d *Dir) Is(name string, sub *Dir) bool {
	fi, err := os.Lstat(d.path(name))
	return err == nil && sub.Same(fi)
}

// Rename renames old to new within d.
func (d *Dir) Rename(old, new string) error { return os.Rename(d.path(old), d.path(new)) }

// Remove removes the file name.
func (d *Dir) Remove(name string) error { return os.Remove(d.path(name)) }

// RemoveDir removes the empty subdirectory name.
func (d *Dir) RemoveDir(name string) error { return os.Remove(d.path(name)) }

// ReadDirNames returns the names of d's entries.
func (d *Dir) ReadDirNames() ([]string, error) {
	f, err := os.Open(d.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// Owner is not known here: it returns this process's os.Geteuid(), as
// if the directory were its own.
func (d *Dir) Owner() (int, error) { return os.Geteuid(), nil }

// MkdirAll is os.MkdirAll and Open.
func MkdirAll(path string, perm fs.FileMode) (*Dir, error) {
	if err := os.MkdirAll(path, perm); err != nil {
		return nil, err
	}
	return Open(path)
}
