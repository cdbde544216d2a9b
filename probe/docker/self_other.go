//go:build !linux

package docker

// readLocalSelf finds nothing outside Linux: a process there does not run
// in a Linux container, and the engine (if any) runs in a VM or elsewhere.
func readLocalSelf() localSelf { return localSelf{} }
