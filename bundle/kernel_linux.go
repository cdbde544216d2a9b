package bundle

import "golang.org/x/sys/unix"

// kernel is uname's release and version ("6.18.0 #1 SMP ...").
func kernel() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:]) + " " + unix.ByteSliceToString(u.Version[:])
}
