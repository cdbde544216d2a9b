package sqlitefile

import (
	"os"
	"slices"
	"strings"
)

// nfsSillyPrefix starts the name the Linux NFS client gives a file that is
// unlinked while a process on that client still has it open: it renames the
// file to ".nfs" followed by the file id and a counter in hex (16 and 8
// digits) and removes it at the last close (fs/nfs/unlink.c,
// nfs_sillyrename: SILLYNAME_PREFIX ".nfs", "%0*llx%0*x"). A client that
// crashes leaves the file behind.
const nfsSillyPrefix = ".nfs"

// IsNFSSillyRename reports whether name (a base name) is an NFS silly-rename
// name: ".nfs" followed by one or more lower-case hex digits and nothing
// else. It reads nothing.
func IsNFSSillyRename(name string) bool {
	hex, ok := strings.CutPrefix(name, nfsSillyPrefix)
	if !ok || hex == "" {
		return false
	}
	for _, c := range hex {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// NFSSillyRenamed lists the base names of the NFS silly-rename files
// (IsNFSSillyRename) directly in dir, sorted. It only reads the directory;
// an error reading it is returned with the names read before it.
func NFSSillyRenamed(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if IsNFSSillyRename(e.Name()) {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, err
}
