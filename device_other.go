//go:build !linux

package preflight

// deviceOf is not used outside Linux: mount tables are read only there.
func deviceOf(string) (uint64, bool) { return 0, false }
