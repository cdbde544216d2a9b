package health

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/preflight-sqlite/preflight/internal/dirfd"
	"github.com/preflight-sqlite/preflight/internal/rawfile"
)

// CopyDirPrefix starts the name of every directory CheckIntegrity makes
// for a private copy (Options.Copy): <TempDir>/preflight-check-<random>.
// Its owner holds an exclusive lock on the directory (flock(2) on Linux)
// for as long as the copy is in use; a directory whose lock no process
// holds belongs to a run that was killed, and RemoveStaleCopies removes
// it.
const CopyDirPrefix = "preflight-check-"

// stagingPrefix names a copy directory between its creation and its lock:
// RemoveStaleCopies leaves it alone until it is staleStaging old, so it
// cannot take a directory its owner is about to lock.
const stagingPrefix = ".preflight-check-new-"

// staleStaging is how old an unlocked staging directory must be before
// RemoveStaleCopies takes it for a leftover.
const staleStaging = time.Minute

// copyHeadroom is the free space, in bytes, CheckIntegrity leaves in
// TempDir beyond the copy itself.
const copyHeadroom = 16 << 20

// ErrNoRoom is wrapped by the error of a copy that would not fit in the
// free space of its directory.
var ErrNoRoom = errors.New("not enough free space for the copy")

// copyDir is a locked directory for one private copy.
type copyDir struct {
	path string
	lock *os.File // holds the lock; closing it releases it
}

// ErrSwappableTemp is wrapped by the error of a copy refused because
// another user could replace what is made in its directory.
var ErrSwappableTemp = errors.New("another user can replace what is made in the directory for the copy")

// swappableTemp names the symlink or directory through which tmp is
// reached that a user other than root and this process can replace, or
// tmp itself when such a user can replace what is made in it, and why
// (dirfd.UntrustedLink, dirfd.SwappableNew); "" when there is none. The
// copy directory is made, filled, opened by SQLite and removed by path,
// and RemoveStaleCopies takes a directory there for a copy by its name
// and owner: whoever owns tmp (a --tmp-dir inside a data directory) could
// rename one of root's directories to such a name, or swap the copy
// directory for a symlink.
func swappableTemp(tmp string) (string, string) {
	abs, err := filepath.Abs(tmp)
	if err != nil {
		return tmp, err.Error()
	}
	if x, why := dirfd.UntrustedLink(abs); x != "" {
		return x, why
	}
	r, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", "" // newCopyDir says why it cannot be used
	}
	return dirfd.SwappableNew(r)
}

// newCopyDir creates and locks a copy directory in tmp (empty means
// os.TempDir()). It is made under a staging name, locked, then renamed to
// CopyDirPrefix..., so no other process sees it unlocked under that name.
func newCopyDir(tmp string) (*copyDir, error) {
	if tmp == "" {
		tmp = os.TempDir()
	}
	staging, err := os.MkdirTemp(tmp, stagingPrefix)
	if err != nil {
		return nil, err
	}
	f, err := lockDir(staging, true)
	if err != nil {
		os.Remove(staging)
		return nil, fmt.Errorf("lock %s: %w", staging, err)
	}
	final := filepath.Join(tmp, CopyDirPrefix+strings.TrimPrefix(filepath.Base(staging), stagingPrefix))
	if err := os.Rename(staging, final); err != nil {
		f.Close()
		os.Remove(staging)
		return nil, err
	}
	return &copyDir{path: final, lock: f}, nil
}

// remove deletes the directory and its contents, then releases the lock.
func (d *copyDir) remove() error {
	err := os.RemoveAll(d.path)
	d.lock.Close()
	return err
}

// RemoveStaleCopies removes the private copies in tmp (empty means
// os.TempDir()) left by runs that are gone: directories named
// CopyDirPrefix... (and staging directories older than a minute), owned by
// this process's user, whose lock no process holds. A copy whose owner is
// alive keeps its lock and is left alone, whatever its age or PID
// namespace. It returns the paths removed and the errors met (joined).
// Outside Linux it removes nothing.
func RemoveStaleCopies(tmp string) (removed []string, err error) {
	if tmp == "" {
		tmp = os.TempDir()
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		staging := strings.HasPrefix(name, stagingPrefix)
		if !e.IsDir() || !staging && !strings.HasPrefix(name, CopyDirPrefix) {
			continue
		}
		p := filepath.Join(tmp, name)
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() || !ownedByMe(fi) || staging && time.Since(fi.ModTime()) < staleStaging {
			continue
		}
		f, err := lockDir(p, false)
		if err != nil {
			continue // held by a live owner, or not ours to lock
		}
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
		} else {
			removed = append(removed, p)
		}
		f.Close()
	}
	return removed, errors.Join(errs...)
}

// copyFiles copies the database path and its -wal (when there is one)
// into dir as copy.db and copy.db-wal, after checking that they fit in
// the free space there. What fits is the blocks the files hold on disk
// (st_blocks), not their length: a database its owner extended into a
// hole of gigabytes is copied sparsely (copyFile), and the bytes actually
// written are counted against that free space as the copy goes, so a file
// that grows meanwhile cannot fill it either. It stops when ctx ends. It
// returns the copy's path.
func copyFiles(ctx context.Context, path, dir string) (string, error) {
	need := int64(copyHeadroom)
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			need += rawfile.Allocated(fi)
		}
	}
	free, ok := freeBytes(dir)
	if ok && free < need {
		return "", fmt.Errorf("%s: %w: it needs %d MiB, %d MiB are free", dir, ErrNoRoom, need>>20, free>>20)
	}
	budget := int64(-1) // unknown free space: no bound
	if ok {
		budget = free - copyHeadroom
	}
	target := filepath.Join(dir, "copy.db")
	if err := copyFile(ctx, path, target, false, &budget); err != nil {
		return "", err
	}
	if err := copyFile(ctx, path+"-wal", target+"-wal", true, &budget); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	return target, nil
}

// copyChunk is how much copyFile copies between two looks at ctx.
const copyChunk = 1 << 20

// copyFile copies src, a regular file (with nofollow, not through a
// symlink at its name), to a new file dst of the same length: only the
// regions of src that hold data (rawfile.CopyData: SEEK_DATA and SEEK_HOLE on
// Linux), a chunk at a time, so that a hole stays a hole. *budget (when
// not negative) is how many bytes it may still write, lowered as it
// writes; past it the error wraps ErrNoRoom. It stops with ctx.Err() when
// ctx ends.
func copyFile(ctx context.Context, src, dst string, nofollow bool, budget *int64) error {
	in, err := rawfile.Open(src, nofollow)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := copyData(ctx, in, out, fi.Size(), budget); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := out.Truncate(fi.Size()); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// copyData writes the data regions of in's first size bytes to the same
// offsets of out (see copyFile).
func copyData(ctx context.Context, in, out *os.File, size int64, budget *int64) error {
	_, err := rawfile.CopyData(in, out, size, make([]byte, copyChunk), func(_ int64, data []byte) error {
		n := int64(len(data))
		if err := ctx.Err(); err != nil {
			return err
		}
		if *budget >= 0 && *budget < n {
			return fmt.Errorf("%w: the copy reached the free space of its directory", ErrNoRoom)
		}
		if *budget >= 0 {
			*budget -= n
		}
		return nil
	})
	return err
}
