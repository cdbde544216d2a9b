package convert

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

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
// failure: a partial backup directory is removed; one cut short by a kill
// stays as DIR.partial, never under the final name.
func backup(path, parent string, now time.Time, growth int64, progress func(done, total int64)) (*Backup, error) {
	start := time.Now()
	type src struct {
		name string
		size int64
	}
	var srcs []src
	var total int64
	for _, suffix := range []string{"", "-wal", "-shm"} {
		fi, err := os.Stat(path + suffix)
		if errors.Is(err, fs.ErrNotExist) && suffix != "" {
			continue
		}
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, src{filepath.Base(path) + suffix, fi.Size()})
		total += fi.Size()
	}
	dbDir := filepath.Dir(path)
	if parent == "" {
		parent = dbDir
	} else if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, fmt.Errorf("create backup directory: %w", err)
	}
	growth -= srcs[0].size
	if growth < 0 {
		growth = 0
	}
	const margin = 1 << 20 // directory entries, metadata
	need := map[uint64]int64{}
	dirs := map[uint64]string{}
	for _, x := range []struct {
		dir  string
		need int64
	}{{parent, total + margin}, {dbDir, growth}} {
		fi, err := os.Stat(x.dir)
		if err != nil {
			return nil, err
		}
		dev := devOf(fi)
		need[dev] += x.need
		dirs[dev] = x.dir
	}
	for dev, n := range need {
		free, err := freeBytes(dirs[dev])
		if err != nil {
			return nil, fmt.Errorf("statfs %s: %w", dirs[dev], err)
		}
		if free >= 0 && free < n {
			return nil, fmt.Errorf("%w on %s: %d bytes free, %d needed (backup %d bytes, database growth %d bytes)", ErrNoSpace, dirs[dev], free, n, total, growth)
		}
	}

	// The copy is made in DIR.partial and renamed to DIR once every file
	// and the directory are on disk: a backup cut short (the process
	// killed, the machine down) never looks complete.
	stamp := now.UTC().Format("20060102T150405Z")
	var dir, partial string
	for i := 1; ; i++ {
		dir = filepath.Join(parent, filepath.Base(path)+sqlitefile.BackupDirMarker+stamp)
		if i > 1 {
			dir += fmt.Sprintf("-%d", i)
		}
		partial = dir + ".partial"
		if _, err := os.Lstat(dir); err == nil {
			continue
		}
		err := os.Mkdir(partial, 0o700)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || i > 100 {
			return nil, fmt.Errorf("create %s: %w", partial, err)
		}
	}
	b := &Backup{Dir: dir}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(partial)
		}
	}()
	buf := make([]byte, copyBufSize)
	var done int64
	for _, s := range srcs {
		n, err := copyFile(filepath.Join(dbDir, s.name), filepath.Join(partial, s.name), buf, func(n int64) {
			if progress != nil {
				progress(done+n, total)
			}
		})
		if err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				err = fmt.Errorf("%w (disk full while copying %s): %w", ErrNoSpace, s.name, err)
			}
			return nil, err
		}
		done += n
		b.Files = append(b.Files, BackupFile{Name: s.name, Bytes: n})
		b.Bytes += n
	}
	if err := syncDir(partial); err != nil {
		return nil, err
	}
	if err := os.Rename(partial, dir); err != nil {
		return nil, fmt.Errorf("complete the backup: %w", err)
	}
	if err := syncDir(parent); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	b.Duration = time.Since(start)
	ok = true
	return b, nil
}

// copyFile copies src to a new file dst, fsyncs it and returns the bytes
// copied. Both descriptors are closed before it returns.
func copyFile(src, dst string, buf []byte, progress func(int64)) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	var n int64
	for {
		r, rerr := in.Read(buf)
		if r > 0 {
			if _, werr := out.Write(buf[:r]); werr != nil {
				out.Close()
				return n, fmt.Errorf("write %s: %w", dst, werr)
			}
			n += int64(r)
			progress(n)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			out.Close()
			return n, fmt.Errorf("read %s: %w", src, rerr)
		}
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return n, fmt.Errorf("fsync %s: %w", dst, err)
	}
	if err := out.Close(); err != nil {
		return n, fmt.Errorf("close %s: %w", dst, err)
	}
	return n, nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}
