package sqlitefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/preflight-sqlite/preflight/internal/rawfile"
)

// ErrDirMissing reports that a path given to Discover does not exist.
var ErrDirMissing = errors.New("data directory does not exist")

// DefaultMaxDepth is the MaxDepth Discover uses when DiscoverOptions.MaxDepth
// is zero or negative.
const DefaultMaxDepth = 2

// DefaultSniffMax and DefaultSniffTime are the sniffing budget Discover
// uses when DiscoverOptions.SniffMax and SniffTime are zero.
const (
	DefaultSniffMax  = 2000
	DefaultSniffTime = time.Second
)

// MinSniffSize is the smallest file, in bytes, whose header Discover reads
// to look for a database without a database name: the smallest page size
// (https://sqlite.org/fileformat2.html#page_size), so the smallest
// database that holds a page.
const MinSniffSize = 512

// DiscoverOptions tunes Discover. The zero value is ready to use.
type DiscoverOptions struct {
	// MaxDepth bounds the walk. Files directly in a given directory are at
	// depth 1, files in its subdirectories at depth 2, and so on; Discover
	// looks at files up to depth MaxDepth and never reads deeper
	// directories. Zero or negative means DefaultMaxDepth (2: the directory
	// and its immediate subdirectories).
	MaxDepth int
	// SniffMax bounds, per element of dirs, how many files without a
	// database name (of at least MinSniffSize bytes) Discover opens to read
	// their header. Zero means DefaultSniffMax (2,000); negative means no limit.
	SniffMax int
	// SniffTime bounds, per element of dirs, how long files without a
	// database name are looked at (the stat that gives their size, the
	// header read): not after SniffTime from the start of that element's
	// walk, which the directory reads count in. Zero means DefaultSniffTime
	// (1 s); negative means no limit.
	SniffTime time.Duration
	// Progress, when set, is called after each filesystem call that
	// answered (a batch of directory entries, a stat, a header read), so a
	// caller can tell a slow filesystem from one that stopped answering.
	// It is called from the goroutine that runs Discover.
	Progress func()
	// OneFilesystem keeps the walk on the filesystem of each element of
	// dirs, as find -xdev does: a directory on another device (a mount
	// below it: /proc, /sys, /dev of a container's root) is not read.
	// Files are looked at wherever they are (overlayfs may give them the
	// device of the layer they come from).
	OneFilesystem bool
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
	// NotSniffed counts files without a database name that were not looked
	// at because the sniffing budget (SniffMax, SniffTime) ran out: their
	// size and header were not read. Files with a database name are always
	// inspected.
	NotSniffed int `json:"files_not_sniffed,omitempty"`
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
//   - otherwise, when it is at least MinSniffSize bytes and its first 16
//     bytes are the header string "SQLite format 3\x00" (a smaller file or
//     one with another header string is not listed, unless a -wal or
//     -journal exists beside it). Such files are
//     looked at within a budget per element of dirs (opts.SniffMax files
//     opened, and none after opts.SniffTime from the start of its walk);
//     once it runs out, the remaining ones are counted in
//     Result.NotSniffed without a single call on them. The walk itself
//     goes on: every file with a database name is still inspected.
//
// Files whose names end in -wal, -shm or -journal are never listed or read;
// they are reported as the sidecars of their database. Nor are NFS
// silly-rename files (IsNFSSillyRename), whatever their header. Symlinks to
// files and directories are followed; a directory already walked at the same or a
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
		progress: opts.Progress,
		oneFS:    opts.OneFilesystem,
	}
	if w.maxDepth < 1 {
		w.maxDepth = DefaultMaxDepth
	}
	if w.progress == nil {
		w.progress = func() {}
	}
	sniffMax, sniffTime := opts.SniffMax, opts.SniffTime
	if sniffMax == 0 {
		sniffMax = DefaultSniffMax
	}
	if sniffTime == 0 {
		sniffTime = DefaultSniffTime
	}
	w.res.Databases = []Database{}
	var errs []error
	for _, d := range dirs {
		w.sniffing = budget{files: sniffMax}
		if sniffTime > 0 {
			w.sniffing.deadline = time.Now().Add(sniffTime)
		}
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
	progress func()
	oneFS    bool // OneFilesystem

	// sniffing is the budget left for the current element of dirs.
	sniffing budget
}

// budget is what is left of the sniffing budget of one element of dirs.
type budget struct {
	files    int       // headers that may still be read; negative: no limit
	deadline time.Time // when looking stops; zero: no limit
}

// out reports that the budget is spent.
func (b *budget) out() bool {
	return b.files == 0 || !b.deadline.IsZero() && !time.Now().Before(b.deadline)
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
	rootKey := keyOf(root, rootInfo)
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		key := keyOf(d.path, d.info)
		if seen, ok := w.dirs[key]; ok && seen <= d.depth {
			continue
		}
		w.dirs[key] = d.depth

		entries, err := w.readDir(d.path)
		if err != nil {
			if d.depth == 0 {
				return err
			}
			w.errorf(err)
			if len(entries) == 0 {
				continue
			}
		}
		journaled := journaledNames(entries)
		for _, e := range entries {
			name := e.Name()
			if IsNFSSillyRename(name) {
				// A file an NFS client deleted while it was open (an old
				// database or -wal): not a database in use, whatever its
				// header; NFSSillyRenamed reports it.
				continue
			}
			if isSidecarName(name) {
				if main, ok := strings.CutSuffix(name, "-wal"); ok {
					w.orphanWAL(filepath.Join(d.path, main))
				}
				continue
			}
			p := filepath.Join(d.path, name)
			if e.Type().IsRegular() && !hasDBExt(name) && !journaled[name] {
				w.sniff(p)
				continue
			}
			fi, err := os.Stat(p) // follows symlinks
			w.progress()
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
			case fi.IsDir() && w.oneFS && keyOf(p, fi).dev != rootKey.dev:
				// Another filesystem mounted below the root: not walked.
			case fi.IsDir():
				if d.depth+2 <= w.maxDepth {
					queue = append(queue, dir{p, fi, d.depth + 1})
				} else {
					w.res.NotSearched++
				}
			case fi.Mode().IsRegular() && !hasDBExt(name) && !journaled[name]:
				// A symlink to a file without a database name.
				w.sniffStat(p, fi)
			case fi.Mode().IsRegular():
				w.file(p, fi, true)
			}
		}
	}
	return nil
}

// readDirBatch is how many entries readDir asks for at a time.
const readDirBatch = 1024

// readDir reads the directory p in batches, calling w.progress after each,
// and returns its entries sorted by name (with the entries read before an
// error).
func (w *walker) readDir(p string) ([]fs.DirEntry, error) {
	f, err := rawfile.OpenDir(p)
	w.progress()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var all []fs.DirEntry
	for {
		batch, err := f.ReadDir(readDirBatch)
		w.progress()
		all = append(all, batch...)
		if err == io.EOF {
			break
		}
		if err != nil {
			slices.SortFunc(all, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
			return all, err
		}
	}
	slices.SortFunc(all, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return all, nil
}

// sniff looks at the regular file p, which has no database name, within
// the sniffing budget: a stat for its size, then its header.
func (w *walker) sniff(p string) {
	if w.sniffing.out() {
		w.res.NotSniffed++
		return
	}
	fi, err := os.Stat(p)
	w.progress()
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) { // removed since the directory was read
			w.errorf(err)
		}
		return
	}
	w.sniffStat(p, fi)
}

// sniffStat reads the header of p, a regular file without a database name
// with its stat fi, when it is large enough and the budget allows.
func (w *walker) sniffStat(p string, fi fs.FileInfo) {
	if fi.Size() < MinSniffSize {
		return
	}
	if w.sniffing.out() {
		w.res.NotSniffed++
		return
	}
	if w.sniffing.files > 0 {
		w.sniffing.files--
	}
	w.file(p, fi, false)
	w.progress()
}

// file looks at the regular file p. named means p is a database whatever
// its bytes: it was given to Discover, has a database name, or has a -wal or
// -journal beside it; otherwise it is listed only when its header is SQLite's.
func (w *walker) file(p string, fi fs.FileInfo, named bool) {
	key := keyOf(p, fi)
	if w.files[key] {
		return
	}
	w.files[key] = true
	db, found, err := inspect(p, !named)
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

// journaledNames returns the names in one directory's entries that have a
// -wal or -journal beside them: names only SQLite gives, so such a file is a
// database whatever its own name and bytes (a zero-filled page 1 is damage,
// not another program's file).
func journaledNames(entries []fs.DirEntry) map[string]bool {
	var m map[string]bool
	for _, e := range entries {
		for _, s := range []string{"-wal", "-journal"} {
			if main, ok := strings.CutSuffix(e.Name(), s); ok && main != "" {
				if m == nil {
					m = map[string]bool{}
				}
				m[main] = true
			}
		}
	}
	return m
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
