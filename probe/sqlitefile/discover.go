package sqlitefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrDirMissing reports that a path given to Discover does not exist.
var ErrDirMissing = errors.New("data directory does not exist")

// DefaultMaxDepth is the MaxDepth Discover uses when DiscoverOptions.MaxDepth
// is zero or negative.
const DefaultMaxDepth = 2

// DiscoverOptions tunes Discover. The zero value is ready to use.
type DiscoverOptions struct {
	// MaxDepth bounds the walk. Files directly in a given directory are at
	// depth 1, files in its subdirectories at depth 2, and so on; Discover
	// looks at files up to depth MaxDepth and never reads deeper
	// directories. Zero or negative means DefaultMaxDepth (2: the directory
	// and its immediate subdirectories).
	MaxDepth int
}

// Result is what Discover found.
type Result struct {
	// Databases lists each database once, in walk order: the given paths in
	// order, each walked breadth-first with entries sorted by name. Never nil.
	Databases []Database `json:"databases"`
	// Errors lists paths below the given directories that could not be
	// examined, as error texts such as "open /data/private: permission
	// denied". A file listed in Databases carries its own error in
	// Database.Err instead.
	Errors []string `json:"errors,omitempty"`
	// NotSearched counts directories found at the depth limit whose
	// contents were not read: databases there were not looked for.
	NotSearched int `json:"dirs_not_searched,omitempty"`
}

// dbExts are the file name extensions (compared case-insensitively) that mark
// a database by name.
var dbExts = []string{".db", ".sqlite", ".sqlite3", ".db3"}

// sidecarSuffixes are the names SQLite gives the files beside a database.
var sidecarSuffixes = []string{"-wal", "-shm", "-journal"}

// Discover finds SQLite databases under each of dirs and inspects them with
// Inspect. Like Inspect it only reads: directories, and at most HeaderSize
// bytes of each file it opens.
//
// In each directory, up to opts.MaxDepth, a regular file is a database when:
//   - its name ends in .db, .sqlite, .sqlite3 or .db3 (any case); such a file
//     is listed even when its header is not SQLite (NotSQLite) or it cannot
//     be read (Err), or it is empty (New);
//   - otherwise, when its first 16 bytes are the header string
//     "SQLite format 3\x00", or when a -wal or -journal exists beside it
//     (an empty file or one with another header string is not listed
//     otherwise). Every such file is opened to read those 16 bytes.
//
// Files whose names end in -wal, -shm or -journal are never listed or read;
// they are reported as the sidecars of their database. Symlinks to files and
// directories are followed; a directory already walked at the same or a
// shallower depth is not walked again, so symlink loops end. A database
// reached twice (same device and inode, through symlinks, hard links or
// overlapping dirs) is listed once under the first path found. Unreadable
// subdirectories and files are recorded in Result.Errors and do not stop the
// walk.
//
// An element of dirs may also name a regular file: that file is inspected as
// a database whatever its name.
//
// Discover returns a non-nil error only for elements of dirs that are
// missing (wrapping ErrDirMissing), empty, not a directory or regular file,
// or unreadable; the other elements are still walked and Result holds what
// was found. Several such errors are joined with errors.Join.
func Discover(dirs []string, opts DiscoverOptions) (Result, error) {
	w := walker{
		maxDepth: opts.MaxDepth,
		files:    make(map[fileKey]bool),
		dirs:     make(map[fileKey]int),
	}
	if w.maxDepth < 1 {
		w.maxDepth = DefaultMaxDepth
	}
	w.res.Databases = []Database{}
	var errs []error
	for _, d := range dirs {
		if err := w.root(d); err != nil {
			errs = append(errs, err)
		}
	}
	return w.res, errors.Join(errs...)
}

// fileKey identifies a file: by device and inode where the system has them,
// else by cleaned path.
type fileKey struct {
	dev, ino uint64
	path     string
}

func keyOf(path string, fi fs.FileInfo) fileKey {
	if dev, ino, ok := fileID(fi); ok {
		return fileKey{dev: dev, ino: ino}
	}
	return fileKey{path: path}
}

type walker struct {
	maxDepth int
	files    map[fileKey]bool // files already looked at
	dirs     map[fileKey]int  // directories already read, by depth read at
	res      Result
	orphans  map[string]bool // missing databases listed for their -wal
}

// root handles one element of the dirs given to Discover.
func (w *walker) root(dir string) error {
	if dir == "" {
		return errors.New("discover: empty path")
	}
	p := filepath.Clean(dir)
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("discover %s: %w", p, ErrDirMissing)
	case err != nil:
		return fmt.Errorf("discover: %w", err)
	case fi.Mode().IsRegular():
		w.file(p, fi, true)
		return nil
	case !fi.IsDir():
		return fmt.Errorf("discover %s: not a directory or regular file (mode %v)", p, fi.Mode().Type())
	}
	if err := w.walk(p, fi); err != nil {
		return fmt.Errorf("discover: %w", err)
	}
	return nil
}

// walk reads root and its subdirectories breadth-first. It returns only an
// error reading root itself; errors below root go to w.res.Errors.
func (w *walker) walk(root string, rootInfo fs.FileInfo) error {
	type dir struct {
		path  string
		info  fs.FileInfo
		depth int // depth of the directory; its entries are at depth+1
	}
	queue := []dir{{root, rootInfo, 0}}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		key := keyOf(d.path, d.info)
		if seen, ok := w.dirs[key]; ok && seen <= d.depth {
			continue
		}
		w.dirs[key] = d.depth

		entries, err := os.ReadDir(d.path)
		if err != nil {
			if d.depth == 0 {
				return err
			}
			w.errorf(err)
			if len(entries) == 0 {
				continue
			}
		}
		for _, e := range entries {
			name := e.Name()
			if isSidecarName(name) {
				if main, ok := strings.CutSuffix(name, "-wal"); ok {
					w.orphanWAL(filepath.Join(d.path, main))
				}
				continue
			}
			p := filepath.Join(d.path, name)
			fi, err := os.Stat(p) // follows symlinks
			if err != nil {
				// A dangling symlink with a non-database name is just not a
				// database; anything else is worth reporting.
				if hasDBExt(name) || !errors.Is(err, fs.ErrNotExist) {
					w.errorf(err)
				}
				continue
			}
			switch {
			case fi.IsDir() && strings.Contains(name, BackupDirMarker):
				// preflight convert's backups: copies, not databases in use.
			case fi.IsDir():
				if d.depth+2 <= w.maxDepth {
					queue = append(queue, dir{p, fi, d.depth + 1})
				} else {
					w.res.NotSearched++
				}
			case fi.Mode().IsRegular():
				w.file(p, fi, false)
			}
		}
	}
	return nil
}

// file looks at the regular file p. explicit means p was given to Discover.
func (w *walker) file(p string, fi fs.FileInfo, explicit bool) {
	key := keyOf(p, fi)
	if w.files[key] {
		return
	}
	w.files[key] = true
	sniff := !explicit && !hasDBExt(filepath.Base(p))
	db, found, err := inspect(p, sniff)
	switch {
	case found:
		w.res.Databases = append(w.res.Databases, db)
	case err != nil:
		w.errorf(err)
	}
}

// orphanWAL reports the database main when main does not exist but
// main-wal holds frames: SQLite would create an empty database there and
// delete that -wal on the next open, so it is listed (New, with its WAL) for
// the rules to flag.
func (w *walker) orphanWAL(main string) {
	if _, err := os.Lstat(main); !errors.Is(err, fs.ErrNotExist) {
		return
	}
	fi, err := os.Stat(main + "-wal")
	if err != nil || !fi.Mode().IsRegular() || fi.Size() <= WALHeaderSize {
		return
	}
	if w.orphans == nil {
		w.orphans = map[string]bool{}
	}
	if w.orphans[main] {
		return
	}
	w.orphans[main] = true
	if db, found, err := inspect(main, false); found {
		w.res.Databases = append(w.res.Databases, db)
	} else if err != nil {
		w.errorf(err)
	}
}

// WALHeaderSize is the size in bytes of a WAL file's header; a -wal no
// longer than that holds no frame (https://sqlite.org/fileformat2.html#walformat).
const WALHeaderSize = 32

func (w *walker) errorf(err error) {
	w.res.Errors = append(w.res.Errors, err.Error())
}

// BackupDirMarker is part of the name of every backup directory preflight
// convert makes (<db>.preflight-backup-<UTC time>): Discover does not look
// inside them, so the copies are never reported (or converted) as
// databases.
const BackupDirMarker = ".preflight-backup-"

// LooksLikeDatabase reports whether path's name marks a database by its
// extension: .db, .sqlite, .sqlite3 or .db3, in any case. It reads nothing.
func LooksLikeDatabase(path string) bool { return hasDBExt(path) }

func hasDBExt(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	for _, e := range dbExts {
		if ext == e {
			return true
		}
	}
	return false
}

func isSidecarName(name string) bool {
	for _, s := range sidecarSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}
