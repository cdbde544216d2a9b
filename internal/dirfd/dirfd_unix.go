//go:build unix

package dirfd

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Dir is an open directory. Its methods take a single entry name (no
// separator, not "." or ".."). The zero value is not usable; a Dir must be
// closed.
type Dir struct {
	f *os.File
	// Path is the path the directory had when it was opened or created;
	// for messages only, never reopened.
	Path     string
	dev, ino uint64
}

// Open resolves path's symlinks (filepath.EvalSymlinks) once and then opens
// the result from "/" one component at a time with
// O_DIRECTORY|O_NOFOLLOW, so a component that became a symlink after the
// resolution fails (ELOOP, ENOTDIR) instead of being followed. Errors wrap
// the fs.PathError of the call that failed.
func Open(path string) (*Dir, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	r, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: "/", Err: err}
	}
	parts := strings.Split(strings.TrimPrefix(r, "/"), "/")
	for i, c := range parts {
		if c == "" {
			continue
		}
		flags := unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i < len(parts)-1 {
			flags |= walkFlag
		} else {
			flags |= unix.O_RDONLY
		}
		next, err := openat(fd, c, flags, 0)
		unix.Close(fd)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: "/" + strings.Join(parts[:i+1], "/"), Err: err}
		}
		fd = next
	}
	return newDir(fd, r)
}

func newDir(fd int, path string) (*Dir, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: %w: not a directory", path, ErrSwapped)
	}
	return &Dir{f: os.NewFile(uintptr(fd), path), Path: path, dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil //nolint:unconvert // int32 on darwin
}

// openat retries on EINTR (a FUSE daemon's answer can be interrupted).
func openat(dirfd int, name string, flags int, perm uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, perm)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

func (d *Dir) fd() int { return int(d.f.Fd()) }

func (d *Dir) path(name string) string { return filepath.Join(d.Path, name) }

// Close closes the descriptor.
func (d *Dir) Close() error { return d.f.Close() }

// Sync fsyncs the directory, making entries created or renamed in it
// durable.
func (d *Dir) Sync() error {
	if err := d.f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", d.Path, err)
	}
	return nil
}

// Same reports whether fi (from os.Stat or Lstat) is this directory (same
// device and inode).
func (d *Dir) Same(fi fs.FileInfo) bool {
	switch st := fi.Sys().(type) {
	case *syscall.Stat_t: // os.Stat, os.Lstat
		return uint64(st.Dev) == d.dev && uint64(st.Ino) == d.ino //nolint:unconvert // int32 on darwin
	case *unix.Stat_t: // Dir.Lstat
		return uint64(st.Dev) == d.dev && uint64(st.Ino) == d.ino //nolint:unconvert // int32 on darwin
	}
	return false
}

// FreeBytes is fstatfs's f_bavail * f_bsize for the directory's
// filesystem, in bytes.
func (d *Dir) FreeBytes() (int64, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(d.fd(), &st); err != nil {
		return 0, &fs.PathError{Op: "fstatfs", Path: d.Path, Err: err}
	}
	return int64(st.Bavail) * int64(st.Bsize), nil //nolint:unconvert // types differ per GOOS
}

// Mkdir creates the directory name (mkdirat, mode perm before the umask),
// opens it O_DIRECTORY|O_NOFOLLOW and checks that what it opened is the
// directory it created: owned by this process's effective uid, empty, and
// with d as its parent. Otherwise (the entry was replaced between the two
// calls) it returns an error wrapping ErrSwapped and leaves the entry.
func (d *Dir) Mkdir(name string, perm fs.FileMode) (*Dir, error) {
	if err := unix.Mkdirat(d.fd(), name, uint32(perm.Perm())); err != nil {
		return nil, &fs.PathError{Op: "mkdir", Path: d.path(name), Err: err}
	}
	fd, err := openat(d.fd(), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %w", ErrSwapped, d.path(name), err)
	}
	sub, err := newDir(fd, d.path(name))
	if err != nil {
		return nil, err
	}
	if err := sub.checkCreated(d); err != nil {
		sub.Close()
		return nil, err
	}
	return sub, nil
}

// checkCreated is Mkdir's check: a directory someone else put in place is
// not ours (uid), not empty, or elsewhere (its ".." is not parent).
func (d *Dir) checkCreated(parent *Dir) error {
	var st, up unix.Stat_t
	if err := unix.Fstat(d.fd(), &st); err != nil {
		return &fs.PathError{Op: "fstat", Path: d.Path, Err: err}
	}
	if err := unix.Fstatat(d.fd(), "..", &up, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "fstatat ..", Path: d.Path, Err: err}
	}
	if int(st.Uid) != os.Geteuid() || uint64(up.Dev) != parent.dev || uint64(up.Ino) != parent.ino { //nolint:unconvert // int32 on darwin
		return fmt.Errorf("%s: %w: not the directory just created", d.Path, ErrSwapped)
	}
	names, err := d.f.Readdirnames(1)
	if len(names) > 0 {
		return fmt.Errorf("%s: %w: not empty after it was created", d.Path, ErrSwapped)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read %s: %w", d.Path, err)
	}
	return nil
}

// Create creates the file name (O_RDWR|O_CREAT|O_EXCL|O_NOFOLLOW, mode
// perm before the umask). An existing entry, symlink or not, is an error
// wrapping fs.ErrExist.
func (d *Dir) Create(name string, perm fs.FileMode) (*os.File, error) {
	fd, err := openat(d.fd(), name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, &fs.PathError{Op: "create", Path: d.path(name), Err: err}
	}
	return os.NewFile(uintptr(fd), d.path(name)), nil
}

// CreateTemp creates a new file named prefix followed by 16 random hex
// digits, like Create with mode 0600, and returns it and its name.
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

// Open opens the entry name with flags (os.O_RDONLY, os.O_RDWR, ...)
// plus O_NOFOLLOW and O_CLOEXEC: a symlink is an error (ELOOP), never
// followed.
func (d *Dir) Open(name string, flags int) (*os.File, error) {
	fd, err := openat(d.fd(), name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: d.path(name), Err: err}
	}
	return os.NewFile(uintptr(fd), d.path(name)), nil
}

// OpenRegular opens the entry name for reading (O_RDONLY|O_NONBLOCK|
// O_NOFOLLOW: a symlink is not followed and a FIFO does not block) and
// returns it with its fstat, or an error when it is not a regular file.
func (d *Dir) OpenRegular(name string) (*os.File, fs.FileInfo, error) {
	f, err := d.Open(name, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, nil, &fs.PathError{Op: "fstat", Path: d.path(name), Err: err}
	}
	fi := fileInfo(name, &st)
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s: not a regular file (%s)", d.path(name), fi.Mode().Type())
	}
	return f, fi, nil
}

// OpenDir opens the subdirectory name O_DIRECTORY|O_NOFOLLOW.
func (d *Dir) OpenDir(name string) (*Dir, error) {
	fd, err := openat(d.fd(), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: d.path(name), Err: err}
	}
	return newDir(fd, d.path(name))
}

// Lstat is fstatat(AT_SYMLINK_NOFOLLOW) of the entry name.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: d.path(name), Err: err}
	}
	return fileInfo(name, &st), nil
}

// Is reports whether the entry name of d is the directory sub (same device
// and inode, not followed if a symlink).
func (d *Dir) Is(name string, sub *Dir) bool {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return false
	}
	return uint64(st.Dev) == sub.dev && uint64(st.Ino) == sub.ino //nolint:unconvert // int32 on darwin
}

// Rename renames the entry old to new within d (renameat), replacing new
// as rename(2) does.
func (d *Dir) Rename(old, new string) error {
	if err := unix.Renameat(d.fd(), old, d.fd(), new); err != nil {
		return &os.LinkError{Op: "rename", Old: d.path(old), New: d.path(new), Err: err}
	}
	return nil
}

// Remove removes the entry name (unlinkat; a symlink itself, never its
// target).
func (d *Dir) Remove(name string) error {
	if err := unix.Unlinkat(d.fd(), name, 0); err != nil {
		return &fs.PathError{Op: "remove", Path: d.path(name), Err: err}
	}
	return nil
}

// RemoveDir removes the empty subdirectory name (unlinkat AT_REMOVEDIR).
func (d *Dir) RemoveDir(name string) error {
	if err := unix.Unlinkat(d.fd(), name, unix.AT_REMOVEDIR); err != nil {
		return &fs.PathError{Op: "remove", Path: d.path(name), Err: err}
	}
	return nil
}

// ReadDirNames returns the names of d's entries, unsorted.
func (d *Dir) ReadDirNames() ([]string, error) {
	fd, err := openat(d.fd(), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: d.Path, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.Path)
	defer f.Close()
	return f.Readdirnames(-1)
}

// statInfo is an fs.FileInfo of a Stat_t; Sys returns the *unix.Stat_t.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func fileInfo(name string, st *unix.Stat_t) fs.FileInfo { return &statInfo{name, *st} }

func (i *statInfo) Name() string       { return i.name }
func (i *statInfo) Size() int64        { return int64(i.st.Size) }
func (i *statInfo) ModTime() time.Time { return time.Unix(int64(i.st.Mtim.Sec), int64(i.st.Mtim.Nsec)) } //nolint:unconvert // types differ per GOOS
func (i *statInfo) IsDir() bool        { return i.Mode().IsDir() }
func (i *statInfo) Sys() any           { return &i.st }

// Mode maps st_mode's type bits and permissions to an fs.FileMode.
func (i *statInfo) Mode() fs.FileMode {
	m := fs.FileMode(i.st.Mode & 0o777)
	switch i.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	case unix.S_IFREG:
	default:
		m |= fs.ModeIrregular
	}
	return m
}

// Owner returns the uid that owns the directory (fstat).
func (d *Dir) Owner() (int, error) {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd(), &st); err != nil {
		return 0, &fs.PathError{Op: "fstat", Path: d.Path, Err: err}
	}
	return int(st.Uid), nil
}

// MkdirAll opens the directory path, creating it and the parents it lacks
// (mode perm before the umask). The part of path that exists is opened as
// Open opens it; each missing directory is made with Mkdir in the one
// above it (mkdirat, then opened O_NOFOLLOW and checked to be the one
// made). A directory that appeared in its place first is used only when
// it is this process's user's or root's; otherwise the error wraps
// ErrSwapped.
func MkdirAll(path string, perm fs.FileMode) (*Dir, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	have, missing := abs, []string(nil)
	for {
		_, err := os.Lstat(have)
		if err == nil || have == "/" {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		missing = append([]string{filepath.Base(have)}, missing...)
		have = filepath.Dir(have)
	}
	d, err := Open(have)
	if err != nil {
		return nil, err
	}
	for _, c := range missing {
		sub, err := d.Mkdir(c, perm)
		if errors.Is(err, fs.ErrExist) {
			sub, err = d.openTrusted(c)
		}
		d.Close()
		if err != nil {
			return nil, err
		}
		d = sub
	}
	return d, nil
}

// openTrusted opens the subdirectory name when root or this process's
// user owns it.
func (d *Dir) openTrusted(name string) (*Dir, error) {
	sub, err := d.OpenDir(name)
	if err != nil {
		return nil, err
	}
	if uid, err := sub.Owner(); err != nil || !trusted(uint32(uid)) {
		sub.Close()
		return nil, fmt.Errorf("%s: %w: another user made it first", sub.Path, ErrSwapped)
	}
	return sub, nil
}
