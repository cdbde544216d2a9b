package compose

// windowsPath reports whether p, a bind source as written in a compose
// file, is a Windows host path: a drive letter, a colon and a backslash or
// slash ("C:\Users\me\data", "d:/db"), or a UNC path ("\\server\share",
// "//server/share"). Docker Desktop for Windows accepts these; on Linux or
// macOS they name nothing on this machine. It looks only at the text, so it
// answers the same on every system.
func windowsPath(p string) bool {
	return driveLetter(p) || len(p) > 2 && (p[:2] == `\\` || p[:2] == "//") && p[2] != '/' && p[2] != '\\'
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
