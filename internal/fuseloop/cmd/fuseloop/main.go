// Command fuseloop mounts a directory through a named FUSE loopback
// filesystem until SIGTERM or SIGINT, then unmounts it. Scripts use it to
// stand in for Docker Desktop's grpcfuse share:
//
//	fuseloop -name grpcfuse BACKING MOUNTPOINT
//
// It needs Linux, root and /dev/fuse. Once the mount is in place it prints
// "fuseloop: mounted BACKING on MOUNTPOINT as fuse.NAME" on stderr.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/preflight-sqlite/preflight/internal/fuseloop"
)

func main() {
	name := flag.String("name", "grpcfuse", "filesystem name: shown as type fuse.NAME and source NAME")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: fuseloop [-name NAME] BACKING MOUNTPOINT\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 2 {
		flag.Usage()
		os.Exit(2)
	}
	backing, mnt := flag.Arg(0), flag.Arg(1)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)

	unmount, err := fuseloop.Mount(backing, mnt, *name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fuseloop: error: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "fuseloop: mounted %s on %s as fuse.%s\n", backing, mnt, *name)
	<-sigs
	if err := unmount(); err != nil {
		fmt.Fprintf(os.Stderr, "fuseloop: error: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "fuseloop: unmounted %s\n", mnt)
}
