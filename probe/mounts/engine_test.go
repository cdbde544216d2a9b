package mounts_test

import (
	"testing"

	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// TestEngineClass: the classes a container engine's mount decides alone,
// shared by --container (docker inspect) and the compose analysis.
func TestEngineClass(t *testing.T) {
	for _, c := range []struct {
		m     mounts.EngineMount
		class mounts.Class
		why   mounts.EngineWhy
	}{
		{mounts.EngineMount{}, mounts.ClassEphemeral, mounts.WhyWritableLayer},
		{mounts.EngineMount{Type: "none", VM: mounts.EngineInVM}, mounts.ClassEphemeral, mounts.WhyWritableLayer},
		{mounts.EngineMount{Type: "tmpfs", HasSource: true}, mounts.ClassEphemeral, mounts.WhyTmpfs},
		{mounts.EngineMount{Type: "bind", VM: mounts.EngineInVM, HasSource: true}, mounts.ClassCrossVM, mounts.WhyVMBind},
		{mounts.EngineMount{Type: "bind", VM: mounts.EngineVMUnknown, HasSource: true}, mounts.ClassUnknown, mounts.WhyUnknownEngineBind},
		{mounts.EngineMount{Type: "bind", HasSource: true}, "", mounts.WhyHost},
		{mounts.EngineMount{Type: "volume", NetworkFS: "nfs", HasSource: true}, mounts.ClassNetwork, mounts.WhyNetworkVolume},
		{mounts.EngineMount{Type: "volume", Driver: "rexray", HasSource: true}, mounts.ClassUnknown, mounts.WhyRemoteDriver},
		{mounts.EngineMount{Type: "volume", Driver: "local"}, mounts.ClassUnknown, mounts.WhyNoSource},
		{mounts.EngineMount{Type: "volume", VM: mounts.EngineInVM, HasSource: true}, mounts.ClassLocal, mounts.WhyVMVolume},
		{mounts.EngineMount{Type: "volume", VM: mounts.EngineVMUnknown, HasSource: true}, "", mounts.WhyHost},
		{mounts.EngineMount{Type: "volume", Driver: "local", HasSource: true}, "", mounts.WhyHost},
	} {
		class, why := mounts.EngineClass(c.m)
		if class != c.class || why != c.why {
			t.Errorf("EngineClass(%+v) = %q, %d; want %q, %d", c.m, class, why, c.class, c.why)
		}
	}
}
