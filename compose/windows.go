package compose

import "github.com/preflight-sqlite/preflight/probe/mounts"

// windowsHostFS is the host filesystem of a bind source that is a Windows
// path (windowsPath): a Linux container reaches a Windows directory only
// through a VM's file share (Docker Desktop's, or WSL2's drive mounts), so
// its class is cross-vm on every system, without a mount table. Source and
// mountpoint are the path as written; fstype is empty (not known here).
func windowsHostFS(p string) *mounts.Mount {
	return &mounts.Mount{
		Mountpoint: p, Source: p, Class: mounts.ClassCrossVM, Platform: "Windows host",
		Reason: p + " is a Windows path: a Linux engine reaches it only through a VM's file share (Docker Desktop, WSL2), where POSIX locks and the -shm shared memory are not coherent",
	}
}

// windowsPath reports whether p, a bind source as written in a compose
// file, is a Windows host path: a drive letter, a colon and a backslash or
// slash ("C:\Users\me\data", "d:/db"), or a UNC path written with
// backslashes ("\\server\share"; "//server/share" is also a Linux path, so
// it is not taken for one). Docker Desktop for Windows accepts these; on Linux or
// macOS they name nothing on this machine. It looks only at the text, so it
// answers the same on every system.
func windowsPath(p string) bool {
	return driveLetter(p) || len(p) > 2 && p[:2] == `\\` && p[2] != '\\'
}

// driveLetter reports whether p starts with a drive letter, a colon and a
// separator: the colon there is not the short syntax's source:target one.
func driveLetter(p string) bool {
	if len(p) < 3 || p[1] != ':' || (p[2] != '\\' && p[2] != '/') {
		return false
	}
	c := p[0] | 0x20
	return c >= 'a' && c <= 'z'
}

// shortSourceEnd returns the length of the source part of a short-syntax
// volume as written ("${DATA:-./d}:/data:rw" gives 12): the text before the
// first colon outside ${...}, past a leading Windows drive letter
// ("C:\data:/data" gives 7); 0 when there is no source.
func shortSourceEnd(raw string) int {
	depth, start := 0, 0
	if driveLetter(raw) {
		start = 2
	}
	for i := start; i < len(raw); i++ {
		switch {
		case raw[i] == '$' && i+1 < len(raw) && raw[i+1] == '{':
			depth++
			i++
		case raw[i] == '}' && depth > 0:
			depth--
		case raw[i] == ':' && depth == 0:
			return i
		}
	}
	return 0
}
