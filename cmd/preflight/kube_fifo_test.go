//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKubeFIFOInterrupted: kube -f on a FIFO no one writes (as -f <(cmd)
// whose cmd hangs) blocks in open; a signal still ends the command with
// 128 plus its number.
func TestKubeFIFOInterrupted(t *testing.T) {
	needKube(t)
	fifo := filepath.Join(t.TempDir(), "manifests.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Cleanup(func() { // release a reader still blocked in open
		if f, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil {
			f.Close()
		}
	})
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&signalled{syscall.SIGINT})
	done := make(chan struct{})
	var code int
	var errb bytes.Buffer
	go func() {
		defer close(done)
		code = MainContext(ctx, []string{"kube", "-f", fifo}, &bytes.Buffer{}, &errb)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("kube -f FIFO did not end after SIGINT")
	}
	if code != 130 || !strings.Contains(errb.String(), "interrupted") {
		t.Errorf("kube -f FIFO after SIGINT: exit %d, stderr %q; want 130, interrupted", code, errb.String())
	}
}
