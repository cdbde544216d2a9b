//go:build unix

package procfs

import (
	"io/fs"
	"syscall"
)

// fileID returns the device and inode numbers of fi, which must come from
// os.Stat or os.Lstat. The field types of syscall.Stat_t differ between
// systems (int32 Dev on darwin), hence the conversions.
func fileID(fi fs.FileInfo) FileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st == nil {
		return FileID{}
	}
	return FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}
}
