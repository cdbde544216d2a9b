//go:build unix

package convert

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// swappableDir returns the first directory on the way to the directory
// dir (absolute, symlinks resolved) that a user other than root and this
// process could rename away and replace with a symlink, with why; "" when
// there is none.
//
// SQLite opens the database and creates its -journal, -wal and -shm by
// path (each with O_NOFOLLOW on the last component only): a directory
// between "/" and the database that another user can replace would send
// those files wherever that user points it. A directory X can be replaced
// by whoever can write its parent P: P's owner (who can also chmod it), or
// anyone when P is group- or world-writable, unless P is sticky and X
// belongs to root or to us. The data directory itself is safe when its
// parent is root's: a database directly in it is reached through no
// directory its owner can swap.
func swappableDir(dir string) (string, string) {
	me := uint32(os.Geteuid())
	trusted := func(uid uint32) bool { return uid == 0 || uid == me }
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
