package convert

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
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// removePartialBackups removes the backups of the database at path that an
// earlier run began in parent and did not finish (DIR.partial: the process
// was killed, the machine went down; see backup) and returns their paths.
// Only directories named <database name>.preflight-backup-*.partial are
// removed, each through a descriptor of parent (os.Root), so a name swapped
// for a symlink does not lead outside it. It runs once the guard found no
// writer: a run still copying would hold the database open.
func removePartialBackups(path, parent string) ([]string, error) {
	if parent == "" {
		parent = filepath.Dir(path)
	}
	ents, err := os.ReadDir(parent)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", parent, err)
	}
	prefix := filepath.Base(path) + sqlitefile.BackupDirMarker
	var names []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), prefix) && strings.HasSuffix(e.Name(), ".partial") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	root, err := os.OpenRoot(parent)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", parent, err)
	}
	defer root.Close()
	var removed []string
	for _, n := range names {
		if err := root.RemoveAll(n); err != nil {
			return removed, fmt.Errorf("remove %s: %w", filepath.Join(parent, n), err)
		}
		removed = append(removed, filepath.Join(parent, n))
	}
	return removed, nil
}

// reusableBackup returns the complete backup in dir of the database at
// path when it holds the database and its -wal (when one exists) as they
// are now, byte for byte, and no -wal when there is none; a -shm in it is
// listed but not compared (SQLite rebuilds the WAL index from the -wal).
// The files are read through a descriptor of dir (internal/dirfd). The
// error says why it does not hold them.
func reusableBackup(dir, path string) (*Backup, error) {
	d, err := dirfd.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	defer d.Close()
	b := &Backup{Dir: dir}
	buf1, buf2 := make([]byte, copyBufSize), make([]byte, copyBufSize)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		name := filepath.Base(path) + suffix
		f, fi, err := d.OpenRegular(name)
		cur, cerr := os.Open(path + suffix)
		switch {
		case errors.Is(err, fs.ErrNotExist) && errors.Is(cerr, fs.ErrNotExist):
			continue
		case err != nil || cerr != nil:
			closeAll(f, cur)
			return nil, fmt.Errorf("%s is not in it as it is now", name)
		}
		same := suffix == "-shm"
		if !same {
			same, err = sameContent(f, cur, buf1, buf2)
		}
		closeAll(f, cur)
		if err != nil {
			return nil, fmt.Errorf("compare %s: %w", name, err)
		}
		if !same {
			return nil, fmt.Errorf("%s changed since", name)
		}
		b.Files = append(b.Files, BackupFile{Name: name, Bytes: fi.Size()})
		b.Bytes += fi.Size()
	}
	if len(b.Files) == 0 {
		return nil, fmt.Errorf("it holds no copy of %s", filepath.Base(path))
	}
	return b, nil
}

// sameContent reports whether a and b hold the same bytes, reading both
// with the buffers given.
func sameContent(a, b *os.File, bufA, bufB []byte) (bool, error) {
	for {
		na, ea := io.ReadFull(a, bufA)
		nb, eb := io.ReadFull(b, bufB)
		if !bytes.Equal(bufA[:na], bufB[:nb]) {
			return false, nil
		}
		aDone := ea == io.EOF || ea == io.ErrUnexpectedEOF
		bDone := eb == io.EOF || eb == io.ErrUnexpectedEOF
		switch {
		case ea != nil && !aDone:
			return false, ea
		case eb != nil && !bDone:
			return false, eb
		case aDone || bDone:
			return aDone && bDone, nil
		}
	}
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}
