package docker

import (
	"fmt"
	"strings"
)

// pipePath turns the address part of an npipe:// engine host, as
// client.ParseHostURL returns it in URL.Host ("//./pipe/docker_engine" for
// DOCKER_HOST=npipe:////./pipe/docker_engine, Docker Desktop's default on
// Windows), into a Windows named-pipe path: `\\.\pipe\docker_engine`.
// Forward and back slashes are both accepted; the server part is "." (this
// machine) or a host name, and the name after "pipe" must not be empty. It
// returns an error for anything else ("/./pipe/x", "host/pipe/x").
//
// It is pure, so it is tested on every system; only the dial
// (dialPipe, npipe_windows.go) needs Windows.
func pipePath(addr string) (string, error) {
	a := strings.ReplaceAll(addr, `\`, "/")
	rest, ok := strings.CutPrefix(a, "//")
	server, name, _ := strings.Cut(rest, "/pipe/")
	if !ok || server == "" || strings.Contains(server, "/") || name == "" {
		return "", fmt.Errorf("parse named pipe %q: want //./pipe/NAME", addr)
	}
	return `\\` + server + `\pipe\` + strings.ReplaceAll(name, "/", `\`), nil
}
