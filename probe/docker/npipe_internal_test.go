package docker

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestPipePath: the address of an npipe:// DOCKER_HOST, as
// client.ParseHostURL leaves it, becomes a Windows pipe path.
func TestPipePath(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"//./pipe/docker_engine", `\\.\pipe\docker_engine`},
		{`\\.\pipe\docker_engine`, `\\.\pipe\docker_engine`},
		{"//./pipe/dockerDesktopLinuxEngine", `\\.\pipe\dockerDesktopLinuxEngine`},
		{"//build-host/pipe/docker_engine", `\\build-host\pipe\docker_engine`},
		{"//./pipe/a/b", `\\.\pipe\a\b`},
	} {
		got, err := pipePath(tc.addr)
		if err != nil || got != tc.want {
			t.Errorf("pipePath(%q) = %q, %v; want %q", tc.addr, got, err, tc.want)
		}
	}
	for _, addr := range []string{"", "/./pipe/x", "host/pipe/x", "//./pipe/", "//./x/docker_engine", "///pipe/x", "//a/b/pipe/x"} {
		if got, err := pipePath(addr); err == nil {
			t.Errorf("pipePath(%q) = %q, nil; want an error", addr, got)
		}
	}
}

// TestNpipeHost: DOCKER_HOST=npipe://... is accepted (it was "scheme not
// supported"); dialling it outside Windows fails, and the probe reports
// that as a failure to reach the engine, never as "no writers".
func TestNpipeHost(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("dials a real pipe on Windows")
	}
	ep := Endpoint{Host: "npipe:////./pipe/docker_engine", Source: "DOCKER_HOST"}
	c, err := connect(ep, time.Second)
	if err != nil {
		t.Fatalf("connect(%s) = %v; want a client", ep.Host, err)
	}
	defer c.close()
	_, err = c.engine(context.Background())
	if err == nil || !strings.Contains(c.dialErrValue().Error(), "dial named pipe \\\\.\\pipe\\docker_engine: not supported on "+runtime.GOOS) {
		t.Fatalf("engine over %s: %v (dial: %v); want the named-pipe dial error", ep.Host, err, c.dialErrValue())
	}
	if s := c.classify(err, false); s == StatusRan || s == StatusNoDaemon {
		t.Errorf("classify(%v) = %s; want a failure status", err, s)
	}
	if _, err := connect(Endpoint{Host: "npipe://host/pipe/x"}, time.Second); err == nil {
		t.Errorf("connect(npipe://host/pipe/x) = nil error; want a parse error")
	}
}
