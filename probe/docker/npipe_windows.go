package docker

import (
	"context"
	"net"

	"github.com/Microsoft/go-winio"
)

// defaultHost is Docker Desktop's engine pipe on Windows.
const defaultHost = "npipe:////./pipe/docker_engine"

// dialPipe connects to the Windows named pipe at path (`\\.\pipe\NAME`),
// giving up when ctx ends.
func dialPipe(ctx context.Context, path string) (net.Conn, error) {
	return winio.DialPipeContext(ctx, path)
}
