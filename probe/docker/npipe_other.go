//go:build !windows

package docker

import (
	"context"
	"fmt"
	"net"
	"runtime"
)

// defaultHost is the engine's Unix socket.
const defaultHost = "unix:///var/run/docker.sock"

// dialPipe fails: Windows named pipes exist only on Windows.
func dialPipe(_ context.Context, path string) (net.Conn, error) {
	return nil, fmt.Errorf("dial named pipe %s: not supported on %s", path, runtime.GOOS)
}
