// Package policy says what each filesystem class (mounts.Class) means for
// SQLite: whether WAL's shared memory and locks work there, whether the
// data outlives the container, whose locks and processes this side sees.
// It is the one table of that judgement: the rules, the check's journal
// mode recommendation, the live-writer probes' blind spots, convert's
// guard and the compose analysis all ask it, and a class without an entry
// is treated as unknown, never as safe.
package policy

import "github.com/preflight-sqlite/preflight/probe/mounts"

// WAL says whether WAL mode works on a class.
type WAL int

// WAL verdicts.
const (
	// WALUnsure: the filesystem is not recognised; treated as unsafe for
	// the journal mode recommendation, but no wal-on-* error is raised.
	WALUnsure WAL = iota
	// WALFails: WAL's shared-memory index and locks are known not to
	// reach every process that opens the files (a VM boundary, other
	// network clients, a FUSE daemon).
	WALFails
	// WALOneSandbox: coherent among the processes inside one gVisor
	// sandbox only.
	WALOneSandbox
	// WALWorks: every process that can open the files shares this kernel's
	// locks and shared memory.
	WALWorks
)

// Meaning is what a class means for SQLite.
type Meaning struct {
	// Risk orders classes for WAL, higher is less safe: cross-vm 6,
	// network 5, fuse 4, unknown 3, sandbox 2, ephemeral 1, local 0. The
	// riskier class decides wherever two witnesses (a sidecar's mount,
	// statfs, the directory and the file) disagree.
	Risk int
	// WAL says whether WAL works here.
	WAL WAL
	// Durable is false where the data is lost with the container (its
	// writable layer, tmpfs).
	Durable bool
	// OtherKernels is true where processes on another kernel (the host
	// behind a VM share, another network client, another sandbox) can
	// open the same files: they are invisible to every probe here, and
	// their locks do not reach this side (or are not known to).
	OtherKernels bool
	// OtherMachines is true where the storage may be the same on another
	// machine (another Swarm node, another NFS client): network and FUSE
	// filesystems.
	OtherMachines bool
	// Doc is the meaning column of docs/filesystems.md, in short
	// (TestDocsClasses).
	Doc string
}

// table is the one entry per class; TestEveryClassHasAnEntry fails when a
// mounts.Class constant has none.
var table = map[mounts.Class]Meaning{
	mounts.ClassCrossVM:   {Risk: 6, WAL: WALFails, Durable: true, OtherKernels: true, Doc: "bind mount across a VM boundary: WAL unsafe"},
	mounts.ClassNetwork:   {Risk: 5, WAL: WALFails, Durable: true, OtherKernels: true, OtherMachines: true, Doc: "network, distributed or object store: WAL unsafe"},
	mounts.ClassFUSE:      {Risk: 4, WAL: WALFails, Durable: true, OtherKernels: true, OtherMachines: true, Doc: "other FUSE: locks and shared mmap not guaranteed"},
	mounts.ClassUnknown:   {Risk: 3, WAL: WALUnsure, Durable: true, OtherKernels: true, Doc: "anything else"},
	mounts.ClassSandbox:   {Risk: 2, WAL: WALOneSandbox, Durable: true, OtherKernels: true, Doc: "WAL coherent inside one gVisor sandbox only (warn)"},
	mounts.ClassEphemeral: {Risk: 1, WAL: WALWorks, Durable: false, Doc: "WAL works, data is lost"},
	mounts.ClassLocal:     {Risk: 0, WAL: WALWorks, Durable: true, Doc: "WAL safe"},
}

// Of is what class c means; a class without an entry (a new constant, an
// empty or foreign string) means what unknown means.
func Of(c mounts.Class) Meaning {
	if m, ok := table[c]; ok {
		return m
	}
	return table[mounts.ClassUnknown]
}

// Known reports whether c has an entry of its own.
func Known(c mounts.Class) bool {
	_, ok := table[c]
	return ok
}

// Classes lists every class with an entry, riskiest first.
func Classes() []mounts.Class {
	out := make([]mounts.Class, 0, len(table))
	for c := range table {
		out = append(out, c)
	}
	for i := range out { // insertion sort by descending risk: seven entries
		for j := i; j > 0 && table[out[j]].Risk > table[out[j-1]].Risk; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// Riskier reports whether class a is less safe for WAL than b (Risk).
func Riskier(a, b mounts.Class) bool { return Of(a).Risk > Of(b).Risk }

// WALUnsafe reports whether WAL is known not to work on class c
// (cross-vm, network, fuse): the wal-on-* errors, and multiple writers
// there are corruption now.
func WALUnsafe(c mounts.Class) bool { return Of(c).WAL == WALFails }

// WritersCorrupt reports whether more than one writer of one SQLite
// database on storage of class c is corruption now rather than a risk:
// WAL is known not to work on c (WALUnsafe), or manyNodes, several nodes
// mount the storage read-write (a ReadWriteMany claim), which makes it
// shared storage that another kernel reaches, whose locks never meet
// this one's, whatever its class is called.
func WritersCorrupt(c mounts.Class, manyNodes bool) bool { return WALUnsafe(c) || manyNodes }

// PreferDelete reports whether the journal mode recommended on class c is
// DELETE: WAL is unsafe there, or not known to be safe (unknown).
func PreferDelete(c mounts.Class) bool {
	w := Of(c).WAL
	return w == WALFails || w == WALUnsure
}

// FarSideBlind reports whether processes beyond class c's filesystem
// (another kernel) can use the files unseen by every probe: cross-vm,
// network, fuse, unknown, sandbox.
func FarSideBlind(c mounts.Class) bool { return Of(c).OtherKernels }

// Ephemeral reports whether data on class c is lost with the container.
func Ephemeral(c mounts.Class) bool { return !Of(c).Durable }

// OtherMachines reports whether storage of class c may be the same storage
// on another machine: network and FUSE filesystems.
func OtherMachines(c mounts.Class) bool { return Of(c).OtherMachines }
