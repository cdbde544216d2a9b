package fuseloop

import (
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
	if name == "" {
		return nil, errors.New("mount fuse loopback: empty name")
	}
	root, err := fs.NewLoopbackRoot(backingDir)
	if err != nil {
		return nil, fmt.Errorf("mount fuse loopback of %s: %w", backingDir, err)
	}
	server, err := fs.Mount(mountpoint, root, &fs.Options{
		MountOptions: fuse.MountOptions{
			Name:        name,
			FsName:      name,
			AllowOther:  true,
			DirectMount: true,
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
