package migrate

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/preflight-sqlite/preflight/internal/rawfile"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// immutable is the open mode for a quiescent WAL source (see
// quiescentWAL): read-only, and SQLite neither locks nor opens -wal or
// -shm (https://sqlite.org/uri.html#uriimmutable).
const immutable = "ro&immutable=1"

// quiescentWAL reports whether src is a WAL database (header bytes 18 and
// 19) whose -wal is absent or empty, so the main file holds every commit.
// A read-only connection to it would create an empty -wal and a -shm
// beside it, a write to the source; it is opened immutable instead. The
// stat it returns is src's, for unchangedSince; any error reads as false
// (the ordinary read-only open then decides).
func quiescentWAL(src string) (fs.FileInfo, bool) {
	if fi, err := os.Lstat(src + "-wal"); err == nil && fi.Size() > 0 || err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	f, err := rawfile.Open(src, false)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false
	}
	b := make([]byte, 100)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, false
	}
	h, err := sqlitefile.ParseHeader(b)
	return fi, err == nil && h.JournalMode() == sqlitefile.JournalWAL
}

// unchangedSince returns an error when src or its -wal changed after
// before was taken: an immutable connection takes no lock and keeps its
// cache, so a writer the guard missed shows only here.
func unchangedSince(src string, before fs.FileInfo) error {
	fi, err := os.Stat(src)
	if err == nil && (fi.Size() != before.Size() || !fi.ModTime().Equal(before.ModTime())) {
		err = errors.New("its size or modification time changed")
	}
	if w, werr := os.Lstat(src + "-wal"); err == nil && werr == nil && w.Size() > 0 {
		err = errors.New("a -wal with frames appeared")
	}
	if err != nil {
		return fmt.Errorf("%s changed while it was copied (%v): a writer the guard did not see is using it", src, err)
	}
	return nil
}

// crashedWAL reports whether src is a WAL database whose -wal holds
// frames (a regular file, not empty) and that has no -shm: a crash left
// it. A read-only connection would create the -shm beside it, and an
// immutable one would ignore the frames and with them committed rows, so
// copyDatabase reads a private copy instead (see privateCopy).
func crashedWAL(src string) bool {
	w, err := os.Lstat(src + "-wal")
	if err != nil || !w.Mode().IsRegular() || w.Size() == 0 {
		return false
	}
	if _, err := os.Lstat(src + "-shm"); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	f, err := rawfile.Open(src, true)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 100)
	if _, err := io.ReadFull(f, b); err != nil {
		return false
	}
	h, err := sqlitefile.ParseHeader(b)
	return err == nil && h.JournalMode() == sqlitefile.JournalWAL
}

// irregularSidecar returns an error naming src's -wal or -shm when it
// exists and is not a regular file (a symlink, FIFO, device, directory):
// SQLite would follow a symlink there, reading and writing the file it
// names, and block on a FIFO.
func irregularSidecar(src string) error {
	for _, s := range []string{"-wal", "-shm"} {
		if fi, err := os.Lstat(src + s); err == nil && !fi.Mode().IsRegular() {
			return fmt.Errorf("%s%s is a %s, not a regular file: SQLite would follow or block on it", src, s, rawfile.TypeName(fi.Mode()))
		}
	}
	return nil
}

// privateCopy copies src and its -wal byte for byte into a new directory
// (mode 0700, a random name starting ".preflight-wal-") in root and returns
// the copy's database path (root.Name() joined, for SQLite) and a function
// that removes the directory through root; on error nothing is left. Each
// file is opened without following a symlink, must be regular, and is
// copied up to the size fstat gave when it was opened. When either file's
// size or modification time changed by the end of the copy, or a -shm
// appeared, it fails with "changed while it was copied": a writer the
// guard did not see is using it. It stops with ctx's error when ctx ends.
func privateCopy(ctx context.Context, src string, root *os.Root) (string, func(), error) {
	tmp := ".preflight-wal-" + rand.Text()
	if err := root.Mkdir(tmp, 0o700); err != nil {
		return "", nil, fmt.Errorf("create a private directory to read %s: %w", src, err)
	}
	remove := func() { root.RemoveAll(tmp) }
	db := filepath.Join(tmp, "db")
	var before []fs.FileInfo
	for _, s := range []string{"", "-wal"} {
		fi, err := copyBounded(ctx, src+s, root, db+s)
		if err != nil {
			remove()
			return "", nil, err
		}
		before = append(before, fi)
	}
	var err error
	for i, s := range []string{"", "-wal"} {
		fi, serr := os.Lstat(src + s)
		if serr != nil || !os.SameFile(fi, before[i]) || fi.Size() != before[i].Size() || !fi.ModTime().Equal(before[i].ModTime()) {
			err = fmt.Errorf("%s%s changed while it was copied (its size or modification time changed): a writer the guard did not see is using it", src, s)
			break
		}
	}
	if _, serr := os.Lstat(src + "-shm"); err == nil && !errors.Is(serr, fs.ErrNotExist) {
		err = fmt.Errorf("%s changed while it was copied (a -shm appeared): a writer the guard did not see is using it", src)
	}
	if err != nil {
		remove()
		return "", nil, err
	}
	return filepath.Join(root.Name(), db), remove, nil
}

// copyBounded copies the regular file src (opened with rawfile.Open, no
// symlink followed) to the new file rel in root (O_EXCL, mode 0600), at most the
// size fstat gives at the open, and returns that stat. A file that ends
// sooner is an error ("changed while it was copied").
func copyBounded(ctx context.Context, src string, root *os.Root, rel string) (fs.FileInfo, error) {
	in, err := rawfile.Open(src, true)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", src, err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", src, err)
	}
	out, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", filepath.Join(root.Name(), rel), err)
	}
	n, err := io.Copy(out, io.LimitReader(ctxReader{ctx, in}, fi.Size()))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("copy %s: %w", src, err)
	}
	if n != fi.Size() {
		return nil, fmt.Errorf("%s changed while it was copied (it shrank from %d to %d bytes): a writer the guard did not see is using it", src, fi.Size(), n)
	}
	return fi, nil
}
