package kube_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestHugeContinueToken: a server that answers every page with a new
// continue token of 100 KiB would have the probe keep every token (to spot
// a repeat) and send each back in a URL, up to MaxPages times. A token
// that long is refused at once.
func TestHugeContinueToken(t *testing.T) {
	var lists atomic.Int32
	kc := peer(t, api(func(w http.ResponseWriter, r *http.Request) {
		n := lists.Add(1)
		fmt.Fprintf(w, `{"metadata":{"continue":"%d%s"},"items":[]}`, n, strings.Repeat("x", 100<<10))
	}))
	res := probe(t, kc, 20*time.Second)
	if res.Sure || !strings.Contains(res.Err, "continue token") {
		t.Errorf("Probe(huge continue tokens) = status %s sure %v err %q, want not sure, the token named", res.Status, res.Sure, res.Err)
	}
	if n := lists.Load(); n > 1 {
		t.Errorf("Probe followed %d pages of huge continue tokens, want 1", n)
	}
}
