//go:build linux && !(386 || arm || mips || mipsle)

package fuseloop

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Mount mounts backingDir on mountpoint through a FUSE loopback filesystem
// named name: the mount shows in /proc/self/mountinfo with filesystem type
// "fuse.<name>" and source "<name>" (for name "grpcfuse", what Docker
// Desktop's file sharing shows inside containers). The mount allows other
// users (AllowOther), so a container process running as uid 65532 can use
// it when the backing directory's permissions allow.
//
// Mount returns once the kernel has the mount. The FUSE server runs in the
// calling process until unmount is called; unmount retries for up to five
// seconds while the mountpoint is busy, then returns the last error. If the
// process exits without calling unmount, the mountpoint is left
// disconnected ("Transport endpoint is not connected") until `umount` is
// run on it.
func Mount(backingDir, mountpoint, name string) (unmount func() error, err error) {
	root, err := fs.NewLoopbackRoot(backingDir)
	if err != nil {
		return nil, fmt.Errorf("mount fuse loopback of %s: %w", backingDir, err)
	}
	return mount(root, backingDir, mountpoint, name, 0)
}

// MountDirectIO is Mount with every file opened in direct I/O
// (FOPEN_DIRECT_IO, without FUSE_DIRECT_IO_ALLOW_MMAP), as mergerfs opens
// them with cache.files=off: reads and writes reach the backing files,
// but the kernel refuses a shared mmap of a file on the mount
// (mmap(MAP_SHARED) fails with ENODEV), so SQLite cannot map a WAL
// database's -shm there.
func MountDirectIO(backingDir, mountpoint, name string) (unmount func() error, err error) {
	var st syscall.Stat_t
	if err := syscall.Stat(backingDir, &st); err != nil {
		return nil, fmt.Errorf("mount fuse loopback of %s: %w", backingDir, err)
	}
	lr := &fs.LoopbackRoot{Path: backingDir, Dev: uint64(st.Dev),
		NewNode: func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
			return &directNode{fs.LoopbackNode{RootData: r}}
		}}
	root := lr.NewNode(lr, nil, "", &st)
	lr.RootNode = root
	// Without passthrough: a file backed by the host file would be mapped
	// through to it, direct I/O or not.
	return mount(root, backingDir, mountpoint, name, fuse.CAP_PASSTHROUGH)
}

// directNode is a loopback node whose opened and created files use direct
// I/O.
type directNode struct{ fs.LoopbackNode }

var (
	_ fs.NodeOpener  = (*directNode)(nil)
	_ fs.NodeCreater = (*directNode)(nil)
)

func (n *directNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags)
	return fh, fl | fuse.FOPEN_DIRECT_IO, errno
}

func (n *directNode) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	in, fh, fl, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	return in, fh, fl | fuse.FOPEN_DIRECT_IO, errno
}

// MountStuckLocks is Mount with file locks forwarded to the FUSE server
// (fuse.MountOptions.EnableLocks), which never answers a lock query
// (F_GETLK, F_OFD_GETLK): the caller blocks, as against an NFS mount
// whose lock daemon is gone, while opens, reads and stats answer. unmount
// releases the blocked queries (they fail with EIO) before unmounting.
func MountStuckLocks(backingDir, mountpoint, name string) (unmount func() error, err error) {
	var st syscall.Stat_t
	if err := syscall.Stat(backingDir, &st); err != nil {
		return nil, fmt.Errorf("mount fuse loopback of %s: %w", backingDir, err)
	}
	release := make(chan struct{})
	lr := &fs.LoopbackRoot{Path: backingDir, Dev: uint64(st.Dev),
		NewNode: func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
			return &stuckLockNode{LoopbackNode: fs.LoopbackNode{RootData: r}, release: release}
		}}
	root := lr.NewNode(lr, nil, "", &st)
	lr.RootNode = root
	um, err := mountWith(root, backingDir, mountpoint, name, 0, true)
	if err != nil {
		return nil, err
	}
	return func() error { close(release); return um() }, nil
}

// stuckLockNode is a loopback node whose lock queries wait for release.
type stuckLockNode struct {
	fs.LoopbackNode
	release chan struct{}
}

var _ fs.NodeGetlker = (*stuckLockNode)(nil)

func (n *stuckLockNode) Getlk(ctx context.Context, _ fs.FileHandle, _ uint64, _ *fuse.FileLock, _ uint32, _ *fuse.FileLock) syscall.Errno {
	<-n.release
	return syscall.EIO
}

// mount serves root on mountpoint under name, with the FUSE capabilities
// in disabled (fuse.CAP_*) left out of the negotiation.
func mount(root fs.InodeEmbedder, backingDir, mountpoint, name string, disabled uint64) (unmount func() error, err error) {
	return mountWith(root, backingDir, mountpoint, name, disabled, false)
}

// mountWith is mount, with file locks forwarded to the server when locks
// is set.
func mountWith(root fs.InodeEmbedder, backingDir, mountpoint, name string, disabled uint64, locks bool) (unmount func() error, err error) {
	if name == "" {
		return nil, errors.New("mount fuse loopback: empty name")
	}
	server, err := fs.Mount(mountpoint, root, &fs.Options{
		MountOptions: fuse.MountOptions{
			Name:                 name,
			FsName:               name,
			AllowOther:           true,
			DirectMount:          true,
			DisabledCapabilities: disabled,
			EnableLocks:          locks,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("mount fuse loopback of %s on %s: %w", backingDir, mountpoint, err)
	}
	return func() error {
		var err error
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			err = server.Unmount()
			if err == nil || !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("unmount %s: %w", mountpoint, err)
		}
		server.Wait()
		return nil
	}, nil
}
