package mounts

// EngineVM says whether a container engine runs its containers in a VM
// (Docker Desktop, OrbStack, Colima, Lima, a Podman machine), so that its
// bind mounts cross the VM boundary.
type EngineVM int

// Engine VM answers.
const (
	// EngineNative: the engine runs on this kernel (native Linux).
	EngineNative EngineVM = iota
	// EngineInVM: the engine runs in a VM.
	EngineInVM
	// EngineVMUnknown: the engine could not be asked, and nothing said.
	EngineVMUnknown
)

// EngineMount is how a container engine provides a container's path: the
// facts the class depends on before any host mount table is read.
type EngineMount struct {
	// Type is "bind", "volume", "tmpfs", "none" or "" (no mount: the
	// container's writable layer), or another engine type ("npipe").
	Type string
	// VM is whether the engine runs in a VM.
	VM EngineVM
	// Driver is a volume's driver ("" or "local" for the local driver).
	Driver string
	// NetworkFS is set when the volume's driver options make it a network
	// filesystem (type: nfs, cifs; a non-local driver named in a compose
	// file).
	NetworkFS string
	// HasSource is false when the engine names no host source for it.
	HasSource bool
}

// EngineWhy says which fact of an EngineMount decided its class.
type EngineWhy int

// Reasons, in the order EngineClass tries them.
const (
	// WhyHost: the class is the host filesystem's under the source: look
	// the source up in the host's mount table.
	WhyHost EngineWhy = iota
	WhyWritableLayer
	WhyTmpfs
	WhyVMBind
	WhyUnknownEngineBind
	WhyNetworkVolume
	WhyRemoteDriver
	WhyNoSource
	WhyVMVolume
)

// EngineClass is the class an engine's mount has whatever the host's mount
// table says, and why; WhyHost (and no class) when the host filesystem
// under the source decides. The data directory of a container is
// ephemeral on no mount or tmpfs; cross-vm on a bind of a VM engine,
// unknown on a bind of an engine not known; network on a network volume;
// unknown on a volume of another driver or a mount without a source;
// local on a volume inside the VM (the VM's own disk).
func EngineClass(m EngineMount) (Class, EngineWhy) {
	switch {
	case m.Type == "" || m.Type == "none":
		return ClassEphemeral, WhyWritableLayer
	case m.Type == "tmpfs":
		return ClassEphemeral, WhyTmpfs
	case m.Type == "bind" && m.VM == EngineInVM:
		return ClassCrossVM, WhyVMBind
	case m.Type == "bind" && m.VM == EngineVMUnknown:
		return ClassUnknown, WhyUnknownEngineBind
	case m.NetworkFS != "":
		return ClassNetwork, WhyNetworkVolume
	case m.Type == "volume" && m.Driver != "" && m.Driver != "local":
		return ClassUnknown, WhyRemoteDriver
	case !m.HasSource:
		return ClassUnknown, WhyNoSource
	case m.Type != "bind" && m.VM == EngineInVM:
		return ClassLocal, WhyVMVolume
	}
	return "", WhyHost
}
