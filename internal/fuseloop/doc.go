// Package fuseloop mounts a directory through a FUSE loopback filesystem
// under a chosen name, so that tests and demos can reproduce what a
// container sees on Docker Desktop: a data directory whose mount table entry
// reads "fuse.grpcfuse grpcfuse" and whose POSIX locks do not cross the
// share.
//
// The loopback is github.com/hanwen/go-fuse/v2's fs.NewLoopbackRoot. Locks
// are left to the kernel (fuse.MountOptions.EnableLocks is false), so a
// POSIX lock taken by a process on the backing directory is not visible
// through the mount (F_GETLK there reports F_UNLCK), while data written on
// either side is: the same split as a host file shared into a VM.
//
// MountDirectIO opens every file with direct I/O and no passthrough, as
// mergerfs does with cache.files=off: a shared mmap there is refused.
//
// Mounting needs Linux, root (or CAP_SYS_ADMIN) and /dev/fuse; go-fuse
// calls mount(2) itself (DirectMount), so fusermount is not needed.
package fuseloop
