//go:build !linux

package bundle

// kernel is empty off Linux: the bundle is of the Linux machine the data
// is on.
func kernel() string { return "" }
