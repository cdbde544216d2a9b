package docker

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestClassifyMissingSocket: a missing socket is no-daemon only at the
// default address on a host.
func TestClassifyMissingSocket(t *testing.T) {
	host := "unix://" + filepath.Join(t.TempDir(), "docker.sock")
	for _, tc := range []struct {
		source      string
		inContainer bool
		want        string
	}{
		{SourceDefault, false, StatusNoDaemon},
		{SourceDefault, true, StatusUnreachable},
		{"DOCKER_HOST", false, StatusUnreachable},
		{"context colima", false, StatusUnreachable},
		{"option", false, StatusUnreachable},
	} {
		c, err := connect(Endpoint{Host: host, Source: tc.source}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.engine(context.Background())
		if got := c.classify(err, tc.inContainer); got != tc.want {
			t.Errorf("classify(missing socket, source %q, in container %v) = %q, want %q", tc.source, tc.inContainer, got, tc.want)
		}
		c.close()
	}
}
