//go:build !linux

package convert

// litestreamProcesses is not implemented on this system: the shadow
// directory and the configuration file are still checked.
func litestreamProcesses() []string { return nil }
