//go:build unix

package dirfd

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// trusted reports whether uid is root or this process's effective uid.
func trusted(uid uint32) bool { return uid == 0 || int(uid) == os.Geteuid() }

// Swappable returns the first directory on the way to the directory dir
// (absolute, symlinks resolved) that a user other than root and this
// process could rename away and replace with a symlink, with why; "" when
// there is none.
//
// SQLite opens the database and creates its -journal, -wal and -shm by
// path (each with O_NOFOLLOW on the last component only), and compose
// --write is asked to edit a file by path: a directory between "/" and the
// file that another user can replace would send the writes wherever that
// user points it. A directory X can be replaced by whoever can write its
// parent P: P's owner (who can also chmod it), or anyone when P is group-
// or world-writable, unless P is sticky and X belongs to root or to us.
// The directory dir itself is safe when its parent is root's: a file
// directly in it is reached through no directory its owner can swap.
func Swappable(dir string) (string, string) {
	for x := filepath.Clean(dir); x != "/"; x = filepath.Dir(x) {
		p := filepath.Dir(x)
		var ps, xs unix.Stat_t
		if err := unix.Lstat(p, &ps); err != nil {
			return x, fmt.Sprintf("its parent %s cannot be examined: %v", p, err)
		}
		if err := unix.Lstat(x, &xs); err != nil {
			return x, fmt.Sprintf("it cannot be examined: %v", err)
		}
		switch {
		case !trusted(ps.Uid):
			return x, fmt.Sprintf("its parent %s belongs to uid %d, who can replace it", p, ps.Uid)
		case ps.Mode&0o022 != 0 && (ps.Mode&unix.S_ISVTX == 0 || !trusted(xs.Uid)):
			return x, fmt.Sprintf("its parent %s is writable by group or others (mode %o)", p, ps.Mode&0o7777)
		}
	}
	return "", ""
}

// maxLinks is how many symlinks UntrustedLink follows, as Linux's
// MAXSYMLINKS.
const maxLinks = 40

// UntrustedLink resolves name (made absolute) one component at a time and
// returns the first symlink on the way that a user other than root and
// this process made or could replace, with why; "" when there is none.
// A symlink is untrusted when another user owns it, or when it lies in a
// directory another user owns or that is group- or world-writable (unless
// sticky and the link is root's or ours). Resolution stops quietly at a
// component that does not exist. A link that cannot be read, or more than
// 40 links, is returned too.
func UntrustedLink(name string) (string, string) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return name, err.Error()
	}
	todo := strings.Split(abs, "/")
	cur, links := "/", 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		var st unix.Stat_t
		if err := unix.Lstat(next, &st); err != nil {
			return "", ""
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			cur = next
			continue
		}
		if why := linkWhy(cur, &st); why != "" {
			return next, why
		}
		if links++; links > maxLinks {
			return next, "too many levels of symbolic links"
		}
		target, err := os.Readlink(next)
		if err != nil {
			return next, fmt.Sprintf("it cannot be read: %v", err)
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return "", ""
}

// linkWhy says why the symlink st in directory dir is untrusted, or "".
func linkWhy(dir string, st *unix.Stat_t) string {
	if !trusted(st.Uid) {
		return fmt.Sprintf("the symlink belongs to uid %d", st.Uid)
	}
	var ds unix.Stat_t
	if err := unix.Lstat(dir, &ds); err != nil {
		return fmt.Sprintf("its directory %s cannot be examined: %v", dir, err)
	}
	switch {
	case !trusted(ds.Uid):
		return fmt.Sprintf("its directory %s belongs to uid %d, who can replace it", dir, ds.Uid)
	case ds.Mode&0o022 != 0 && ds.Mode&unix.S_ISVTX == 0:
		return fmt.Sprintf("its directory %s is writable by group or others (mode %o)", dir, ds.Mode&0o7777)
	}
	return ""
}

// Owner returns the uid and gid of fi (from os.Stat, os.Lstat or a Dir
// method); ok is false when fi carries no Unix stat.
func Owner(fi fs.FileInfo) (uid, gid int, ok bool) {
	switch st := fi.Sys().(type) {
	case *syscall.Stat_t:
		return int(st.Uid), int(st.Gid), true
	case *unix.Stat_t:
		return int(st.Uid), int(st.Gid), true
	}
	return 0, 0, false
}

// SwappableNew is Swappable for a directory to be created in dir (which
// exists, absolute, symlinks resolved): dir itself must also keep others
// from replacing what is made in it, so dir owned by another user, or
// group- or world-writable without the sticky bit, is returned too.
func SwappableNew(dir string) (string, string) {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return dir, fmt.Sprintf("it cannot be examined: %v", err)
	}
	switch {
	case !trusted(st.Uid):
		return dir, fmt.Sprintf("it belongs to uid %d, who can replace what is created in it", st.Uid)
	case st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0:
		return dir, fmt.Sprintf("it is writable by group or others (mode %o)", st.Mode&0o7777)
	}
	return Swappable(dir)
}
