package convert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/preflight-sqlite/preflight/internal/dirfd"
	"github.com/preflight-sqlite/preflight/internal/rawfile"
	"github.com/preflight-sqlite/preflight/probe/sqlitefile"
)

// ErrNoSpace is returned (wrapped) when the backup does not fit.
var ErrNoSpace = errors.New("not enough free space")

// Backup is a copy of a database and its sidecars made before converting.
type Backup struct {
	// Dir is the backup directory, <name>.preflight-backup-<UTC timestamp>
	// beside the database or in the --backup-dir.
	Dir   string       `json:"dir"`
	Files []BackupFile `json:"files"`
	// Bytes is the total copied; Duration the time the copy took
	// (including fsync).
	Bytes    int64         `json:"bytes"`
	Duration time.Duration `json:"duration_ns"`
}

// BackupFile is one copied file.
type BackupFile struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
}

// copyBufSize is the copy buffer: large enough for sequential throughput,
// small enough for the memory budget.
const copyBufSize = 1 << 20

// backup copies path, path-wal and path-shm (those that exist) into a new
// directory under parent (the database's directory when empty), fsyncs each
// file, the directory and its parent, and returns what it made. growth is
// how many bytes the database file may reach after the checkpoint (the
// WAL's last committed database size); the free space on the database's
// filesystem must hold that growth as well. Nothing is left behind on
// failure, nor when ctx ends during the copy (the error then wraps
// ctx's cause): a partial backup directory is removed; one cut short by a
// kill stays as DIR.partial, never under the final name. Once every file
// is copied the backup is completed whatever ctx says.
func backup(ctx context.Context, path, parent string, now time.Time, growth int64, progress func(done, total int64)) (*Backup, error) {
	start := time.Now()
	srcs, total, err := backupSources(path)
	if err != nil {
		return nil, err
	}
	dbDir := filepath.Dir(path)
	var pd *dirfd.Dir
	if parent == "" {
		parent = dbDir
		pd, err = dirfd.Open(parent)
	} else {
		// The guard refused a --backup-dir another user can replace
		// (swappable-dir); what is missing of it is made through
		// descriptors too.
		pd, err = dirfd.MkdirAll(parent, 0o700)
	}
	if err != nil {
		return nil, fmt.Errorf("open backup directory: %w", err)
	}
	defer pd.Close()
	var onDisk int64 // a hole is copied as a hole: what the copy takes
	for _, s := range srcs {
		onDisk += s.disk
	}
	if err := checkSpace(parent, dbDir, onDisk, max(growth-srcs[0].size, 0)); err != nil {
		return nil, err
	}

	// The copy is made in DIR.partial and renamed to DIR once every file
	// and the directory are on disk: a backup cut short (the process
	// killed, the machine down) never looks complete. Every entry is made
	// relative to descriptors of parent and of DIR.partial (internal/dirfd):
	// whoever owns the data directory cannot redirect the files by
	// swapping DIR.partial for a symlink.
	stamp := now.UTC().Format("20060102T150405Z")
	name, sub, err := mkBackupDir(pd, filepath.Base(path)+sqlitefile.BackupDirMarker+stamp)
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	b := &Backup{Dir: filepath.Join(parent, name)}
	ok := false
	defer func() {
		if !ok {
			removeBackup(pd, name+".partial", sub, b.Files)
		}
	}()
	if err := copyBackupFiles(ctx, dbDir, srcs, sub, b, total, progress); err != nil {
		return nil, err
	}
	if err := sub.Sync(); err != nil {
		return nil, err
	}
	if err := completeBackup(pd, name, sub); err != nil {
		return nil, err
	}
	b.Duration = time.Since(start)
	ok = true
	return b, nil
}

// backupSource is a file to back up: its name in the database's
// directory and its size in bytes when the backup began.
type backupSource struct {
	name string
	size int64
	disk int64 // the blocks it holds on disk, in bytes (rawfile.Allocated)
}

// backupSources lists path (first, required), path-wal and path-shm (when
// they exist) and their total size in bytes.
func backupSources(path string) ([]backupSource, int64, error) {
	var srcs []backupSource
	var total int64
	for _, suffix := range []string{"", "-wal", "-shm"} {
		fi, err := os.Stat(path + suffix)
		if errors.Is(err, fs.ErrNotExist) && suffix != "" {
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		srcs = append(srcs, backupSource{filepath.Base(path) + suffix, fi.Size(), rawfile.Allocated(fi)})
		total += fi.Size()
	}
	return srcs, total, nil
}

// checkSpace returns an error wrapping ErrNoSpace unless the filesystem of
// parent has room for total bytes of backup (and 1 MiB of metadata) and
// the filesystem of dbDir for growth bytes more of database, both summed
// when they are one filesystem.
func checkSpace(parent, dbDir string, total, growth int64) error {
	const margin = 1 << 20 // directory entries, metadata
	need := map[uint64]int64{}
	dirs := map[uint64]string{}
	for _, x := range []struct {
		dir  string
		need int64
	}{{parent, total + margin}, {dbDir, growth}} {
		fi, err := os.Stat(x.dir)
		if err != nil {
			return err
		}
		dev := devOf(fi)
		need[dev] += x.need
		dirs[dev] = x.dir
	}
	for dev, n := range need {
		free, err := freeBytes(dirs[dev])
		if err != nil {
			return fmt.Errorf("statfs %s: %w", dirs[dev], err)
		}
		if free >= 0 && free < n {
			return fmt.Errorf("%w on %s: %d bytes free, %d needed (backup %d bytes, database growth %d bytes)", ErrNoSpace, dirs[dev], free, n, total, growth)
		}
	}
	return nil
}

// copyBackupFiles copies each of srcs from dbDir into sub, adding it to b
// (Files, Bytes) before its copy starts so that a failure removes it, and
// reports the bytes done of total to progress (nil: none). It stops with
// an error wrapping ctx's cause when ctx ends.
func copyBackupFiles(ctx context.Context, dbDir string, srcs []backupSource, sub *dirfd.Dir, b *Backup, total int64, progress func(done, total int64)) error {
	buf := make([]byte, copyBufSize)
	var done int64
	for i, s := range srcs {
		b.Files = append(b.Files, BackupFile{Name: s.name})
		n, err := copyFile(ctx, filepath.Join(dbDir, s.name), i > 0, sub, s.name, buf, func(n int64) {
			if progress != nil {
				progress(done+n, total)
			}
		})
		if err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				err = fmt.Errorf("%w (disk full while copying %s): %w", ErrNoSpace, s.name, err)
			}
			return err
		}
		done += n
		b.Files[len(b.Files)-1].Bytes = n
		b.Bytes += n
	}
	return nil
}

// mkBackupDir creates base.partial (base-2.partial, ... when base or
// base.partial exists) in pd, mode 0700, and returns the name without
// ".partial" and the new directory, verified to be the one created (an
// error wrapping dirfd.ErrSwapped otherwise).
func mkBackupDir(pd *dirfd.Dir, base string) (string, *dirfd.Dir, error) {
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name += fmt.Sprintf("-%d", i)
		}
		if _, err := pd.Lstat(name); err == nil {
			continue
		}
		sub, err := pd.Mkdir(name+".partial", 0o700)
		if err == nil {
			return name, sub, nil
		}
		if !errors.Is(err, fs.ErrExist) || i > 100 {
			return "", nil, fmt.Errorf("create %s.partial: %w", filepath.Join(pd.Path, name), err)
		}
	}
}

// completeBackup renames name.partial to name in pd and fsyncs pd, after
// checking that name.partial is still sub and before checking that name
// now is: a directory moved or replaced during the copy is an error
// wrapping dirfd.ErrSwapped, and its files stay where they were moved.
func completeBackup(pd *dirfd.Dir, name string, sub *dirfd.Dir) error {
	if !pd.Is(name+".partial", sub) {
		return fmt.Errorf("complete the backup: %s.partial: %w: moved or replaced during the copy", filepath.Join(pd.Path, name), dirfd.ErrSwapped)
	}
	if err := pd.Rename(name+".partial", name); err != nil {
		return fmt.Errorf("complete the backup: %w", err)
	}
	if !pd.Is(name, sub) {
		return fmt.Errorf("complete the backup: %s: %w: replaced while it was renamed", filepath.Join(pd.Path, name), dirfd.ErrSwapped)
	}
	if err := pd.Sync(); err != nil {
		pd.Rename(name, name+".partial")
		return err
	}
	return nil
}

// removeBackup removes the files of a backup that failed, through sub,
// and then the directory partial in pd if it still is sub.
func removeBackup(pd *dirfd.Dir, partial string, sub *dirfd.Dir, files []BackupFile) {
	for _, f := range files {
		sub.Remove(f.Name)
	}
	if pd.Is(partial, sub) {
		pd.RemoveDir(partial)
	}
}

// copyFile copies src, a regular file (with nofollow, not through a
// symlink at its name), to the new file name in dir (O_EXCL, O_NOFOLLOW,
// mode 0600), fsyncs it and returns its length. Only the regions that
// hold data are written (rawfile.CopyData): a hole stays a hole. Both
// descriptors are closed before it returns. When ctx ends it stops between two reads of
// buf with an error wrapping ctx's cause.
func copyFile(ctx context.Context, src string, nofollow bool, dir *dirfd.Dir, name string, buf []byte, progress func(int64)) (int64, error) {
	in, err := rawfile.Open(src, nofollow)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := dir.Create(name, 0o600)
	if err != nil {
		return 0, err
	}
	dst := out.Name()
	fail := func(n int64, err error) (int64, error) {
		out.Close()
		if ctx.Err() != nil {
			return n, fmt.Errorf("interrupted while copying %s (%w)", filepath.Base(src), context.Cause(ctx))
		}
		return n, fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	fi, err := in.Stat()
	if err != nil {
		return fail(0, err)
	}
	// The regions that hold data, at their offsets: a database its owner
	// extended into a hole (truncate -s 2G) is copied as a hole, not as
	// gigabytes of zeros. What was appended since the stat follows.
	n, err := rawfile.CopyData(in, out, fi.Size(), buf, func(off int64, data []byte) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		progress(off + int64(len(data)))
		return nil
	})
	for grown := err == nil && n == fi.Size(); grown; {
		if ctx.Err() != nil {
			return fail(n, ctx.Err())
		}
		r, rerr := in.ReadAt(buf, n)
		if r > 0 {
			if _, werr := out.WriteAt(buf[:r], n); werr != nil {
				return fail(n, werr)
			}
			n += int64(r)
			progress(n)
		}
		grown = rerr == nil
		if rerr != io.EOF {
			err = rerr
		}
	}
	if err != nil {
		return fail(n, err)
	}
	if err := out.Truncate(n); err != nil {
		return fail(n, err)
	}
	progress(n)
	if err := out.Sync(); err != nil {
		out.Close()
		return n, fmt.Errorf("fsync %s: %w", dst, err)
	}
	if err := out.Close(); err != nil {
		return n, fmt.Errorf("close %s: %w", dst, err)
	}
	return n, nil
}

// BackupDatabase copies path, path-wal and path-shm into a new directory
// beside the database, <name>.preflight-backup-<UTC time of now>, as
// convert's backup does (checked free space, DIR.partial renamed once
// complete, every entry made through directory descriptors, fsynced):
// recover --replace keeps the original this way before putting the
// recovered file in its place.
func BackupDatabase(ctx context.Context, path string, now time.Time) (*Backup, error) {
	return backup(ctx, path, "", now, 0, nil)
}
