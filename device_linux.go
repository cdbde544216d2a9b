package preflight

import "golang.org/x/sys/unix"

// deviceOf returns st_dev of p, following symlinks.
func deviceOf(p string) (uint64, bool) {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return 0, false
	}
	return st.Dev, true
}
