package rules

import (
	"github.com/preflight-sqlite/preflight/compose"
	"github.com/preflight-sqlite/preflight/policy"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// Journal modes JournalMode recommends (the report's
// recommended_journal_mode, PREFLIGHT_JOURNAL_MODE).
const (
	JournalModeWAL    = "wal"
	JournalModeDelete = "delete"
)

// JournalMode is the one decision of the journal mode recommended for
// every database of r, and the least safe filesystem class among what r
// holds (the report's fs_class), from r's facts alone, whichever command
// made it (check and run, compose, kube):
//   - each data directory by its mount (unknown when it could not be
//     classified) and each of its databases by WALClass (a single-file
//     mount, a symlink to another filesystem), either riskier when the
//     Kubernetes objects say so (kubeClass);
//   - each compose data directory by its mount (composeClass);
//   - each manifest volume that holds SQLite data by its storage
//     (manifestClass).
//
// The mode is delete when that class is not known to be safe for WAL
// (policy.PreferDelete), when a database is a single-file mount (its -wal
// would be created on the directory's filesystem), or when a configured
// path exists but could not be examined; wal otherwise. The class is
// local when r holds nothing.
func JournalMode(r *Report) (mode string, class mounts.Class) {
	class = mounts.ClassLocal
	worse := func(c mounts.Class) {
		if policy.Riskier(c, class) {
			class = c
		}
	}
	unsure := false
	for i := range r.DataDirs {
		d := &r.DataDirs[i]
		worse(subject{r: r, dir: d}.class())
		unsure = unsure || d.StatError != ""
		for j := range d.Databases {
			worse(subject{r: r, dir: d, db: &d.Databases[j]}.class())
			unsure = unsure || d.Databases[j].SingleFileMount
		}
	}
	if a := r.Compose; a != nil {
		for i := range a.Mounts {
			if a.Mounts[i].DataDir {
				worse(composeClass(a, &a.Mounts[i]))
			}
		}
	}
	if r.Manifests != nil {
		for i := range r.Manifests.Mounts {
			if r.Manifests.Mounts[i].SQLite {
				worse(manifestClass(subject{r: r, km: &r.Manifests.Mounts[i]}))
			}
		}
	}
	if unsure || policy.PreferDelete(class) {
		return JournalModeDelete, class
	}
	return JournalModeWAL, class
}

// composeClass is the class of the place compose mount m of a puts its
// data: cross-vm for a bind on a VM engine (unknown when the engine is
// unknown), the host filesystem's class for a bind on a native engine
// (unknown when it was not read, or the read failed or timed out: never
// local), network for a network volume, ephemeral for no volume or tmpfs,
// local for another volume.
func composeClass(a *compose.Analysis, m *compose.Mount) mounts.Class {
	vm := mounts.EngineNative
	switch a.Platform.Kind {
	case compose.PlatformDesktop:
		vm = mounts.EngineInVM
	case compose.PlatformUnknown:
		vm = mounts.EngineVMUnknown
	}
	em := mounts.EngineMount{Type: m.Type, VM: vm, HasSource: true}
	if m.Volume != nil {
		em.NetworkFS = m.Volume.NetworkFS
		if m.Volume.BindDevice != "" {
			em.Type = "bind" // a local volume that binds a host path
		}
	}
	c, why := mounts.EngineClass(em)
	if why != mounts.WhyHost {
		return c
	}
	switch {
	case em.Type != "bind":
		return mounts.ClassLocal
	case m.HostFS != nil:
		return m.HostFS.Class
	}
	return mounts.ClassUnknown
}
