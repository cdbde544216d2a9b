//go:build unix

package sqlitefile

import (
	"io/fs"
	"syscall"
)

// fileID returns the device and inode numbers of fi, which must come from
// os.Stat, os.Lstat or (*os.File).Stat. The field types of syscall.Stat_t
// differ between systems (int32 Dev on darwin), hence the conversions.
func fileID(fi fs.FileInfo) (dev, ino uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st == nil {
		return 0, 0, false
	}
	return uint64(st.Dev), uint64(st.Ino), true
}
