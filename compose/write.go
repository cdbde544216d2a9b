package compose

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/preflight-sqlite/preflight/internal/dirfd"
)

// UnsafeWriteError is returned (wrapped) by [CheckWrite] and [WriteEdit]
// when a compose file is reached through a symlink, or lies in a
// directory, that a user other than root and this process can replace:
// writing there would let that user point the write, the backup or the
// temporary file at a file of this process's choosing (root's, say).
type UnsafeWriteError struct {
	// File is the compose file as named in the project.
	File string
	// Via is the symlink or directory another user controls.
	Via string
	// Why says who controls Via and how.
	Why string
	// Owner is the uid of the user other than root who controls Via (the
	// owner of File's directory as named, of Via, or of Via's directory,
	// the first not root's), who can write the file safely; -1 if none.
	Owner int
}

func (e *UnsafeWriteError) Error() string {
	return fmt.Sprintf("write %s: refused: it is reached through %s, and %s", e.File, e.Via, e.Why)
}

// CheckWrite reports whether e.File can be written safely by this
// process: nil, or an [UnsafeWriteError] when a symlink on the way to it
// (see dirfd.UntrustedLink) or a directory on the way to the file it
// resolves to (see dirfd.Swappable) is another user's to replace. Other
// errors are those of resolving the path. It does not write.
func CheckWrite(e FileEdit) error {
	abs, err := filepath.Abs(e.File)
	if err != nil {
		return fmt.Errorf("write %s: %w", e.File, err)
	}
	if via, why := dirfd.UntrustedLink(abs); via != "" {
		return &UnsafeWriteError{File: e.File, Via: "the symlink " + via, Why: why, Owner: otherOwner(abs, via)}
	}
	path, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return fmt.Errorf("write %s: %w", e.File, err)
	}
	if via, why := dirfd.Swappable(filepath.Dir(path)); via != "" {
		return &UnsafeWriteError{File: e.File, Via: via, Why: why, Owner: otherOwner(abs, via)}
	}
	return nil
}

// otherOwner is the uid of the first of file's directory, via and via's
// directory that root does not own, or -1.
func otherOwner(file, via string) int {
	for _, p := range []string{filepath.Dir(file), via, filepath.Dir(via)} {
		if fi, err := os.Lstat(p); err == nil {
			if uid, _, ok := dirfd.Owner(fi); ok && uid != 0 {
				return uid
			}
		}
	}
	return -1
}

// WriteEdit saves e.File as FILE.bak (FILE.bak.1, ... when that exists:
// an earlier backup is never overwritten), then replaces it with e.After
// through a temporary file and a rename, keeping its mode and (as root)
// its owner, and sets e.Backup. A symlinked FILE is resolved, so the file
// it points to is edited and the link stays. Every step after the checks
// of [CheckWrite] names one entry of a descriptor of the resolved
// directory (see package dirfd), so a directory swapped meanwhile is
// never written through. Errors: an [UnsafeWriteError]; a read-only file,
// or one whose bytes are no longer e.Before, is refused unchanged.
func WriteEdit(e *FileEdit) error {
	if err := CheckWrite(*e); err != nil {
		return err
	}
	path, err := filepath.EvalSymlinks(e.File)
	if err != nil {
		return fmt.Errorf("write %s: %w", e.File, err)
	}
	d, err := openDir(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("write %s: %w", e.File, err)
	}
	defer d.Close()
	base := filepath.Base(path)
	fi, err := sameBytes(d, base, e.Before)
	if err != nil {
		return fmt.Errorf("write %s: %w", e.File, err)
	}
	if fi.Mode().Perm()&0o222 == 0 {
		return fmt.Errorf("write %s: the file is read-only (mode %s); not edited", e.File, fi.Mode().Perm())
	}
	bak, err := createBackup(d, base, fi, e.Before)
	if err != nil {
		return fmt.Errorf("back up %s: %w", e.File, err)
	}
	e.Backup = filepath.Join(d.Path, bak)
	if err := replace(d, base, fi, e.After); err != nil {
		return fmt.Errorf("write %s: %w", e.File, err)
	}
	return nil
}

// RestoreEdit puts e.Before back in the file that [WriteEdit] wrote (the
// one beside e.Backup), the same way: through the directory's descriptor,
// with the backup's mode and owner.
func RestoreEdit(e FileEdit) error {
	dir, bak := filepath.Split(e.Backup)
	i := strings.LastIndex(bak, ".bak")
	if e.Backup == "" || i <= 0 {
		return fmt.Errorf("restore %s: no backup", e.File)
	}
	d, err := openDir(dir)
	if err != nil {
		return fmt.Errorf("restore %s: %w", e.File, err)
	}
	defer d.Close()
	fi, err := d.Lstat(bak)
	if err != nil {
		return fmt.Errorf("restore %s: %w", e.File, err)
	}
	if err := replace(d, bak[:i], fi, e.Before); err != nil {
		return fmt.Errorf("restore %s: %w", e.File, err)
	}
	return nil
}

// openDir opens dir (absolute, resolved) with dirfd.Open and checks that
// it is still that path: a directory that resolves elsewhere now was
// swapped.
func openDir(dir string) (*dirfd.Dir, error) {
	d, err := dirfd.Open(dir)
	if err != nil {
		return nil, err
	}
	if filepath.Clean(d.Path) != filepath.Clean(dir) {
		d.Close()
		return nil, fmt.Errorf("%s: %w: it now resolves to %s", dir, dirfd.ErrSwapped, d.Path)
	}
	return d, nil
}

// sameBytes opens the regular file name of d and returns its fstat when
// it holds exactly want (the bytes the project was read from).
func sameBytes(d *dirfd.Dir, name string, want []byte) (fs.FileInfo, error) {
	f, fi, err := d.OpenRegular(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	got, err := io.ReadAll(io.LimitReader(f, int64(len(want))+1))
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(got, want) {
		return nil, errors.New("the file changed since it was read; not edited")
	}
	return fi, nil
}

// createBackup writes data to a new NAME.bak (NAME.bak.1, ... up to 999)
// in d with fi's mode and, as root, fi's owner, and returns its name.
func createBackup(d *dirfd.Dir, name string, fi fs.FileInfo, data []byte) (string, error) {
	bak := name + ".bak"
	f, err := d.Create(bak, fi.Mode().Perm())
	for n := 1; errors.Is(err, fs.ErrExist) && n < 1000; n++ {
		bak = fmt.Sprintf("%s.bak.%d", name, n)
		f, err = d.Create(bak, fi.Mode().Perm())
	}
	if err != nil {
		return "", err
	}
	if err := fill(f, fi, data); err != nil {
		return "", err
	}
	return bak, nil
}

// replace writes data to a new temporary file in d, gives it fi's mode
// and (as root) owner, and renames it over name.
func replace(d *dirfd.Dir, name string, fi fs.FileInfo, data []byte) error {
	tmp, tmpName, err := d.CreateTemp("." + name + ".preflight-")
	if err != nil {
		return err
	}
	if err := fill(tmp, fi, data); err != nil {
		d.Remove(tmpName)
		return err
	}
	if err := d.Rename(tmpName, name); err != nil {
		d.Remove(tmpName)
		return err
	}
	return d.Sync()
}

// fill writes data to f, sets fi's mode and, run as root, fi's owner (by
// descriptor: fchmod, fchown), syncs and closes f.
func fill(f *os.File, fi fs.FileInfo, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Chmod(fi.Mode().Perm())
	}
	if uid, gid, ok := dirfd.Owner(fi); err == nil && ok && os.Geteuid() == 0 {
		err = f.Chown(uid, gid)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
