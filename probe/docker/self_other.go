//go:build !linux

package docker

import "github.com/preflight-sqlite/preflight/probe/mounts"

// readLocalSelf finds nothing outside Linux: a process there does not run
// in a Linux container, and the engine (if any) runs in a VM or elsewhere.
func readLocalSelf(*mounts.Table, []string) localSelf { return localSelf{} }
