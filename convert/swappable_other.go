//go:build !unix

package convert

// swappableDir is the Unix check of the directories on the way to a
// database (see swappable_unix.go); elsewhere nothing is checked.
func swappableDir(string) (string, string) { return "", "" }
