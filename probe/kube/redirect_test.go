package kube_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestRedirectNotFollowed: the pod list on the configured server holds a
// writer, but the server redirects the list to another host that answers
// an empty one. Following it would say "no other pods" from a server the
// kubeconfig never named; the probe must not be sure instead.
func TestRedirectNotFollowed(t *testing.T) {
	elsewhere := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"metadata":{},"items":[]}`)
	}))
	t.Cleanup(elsewhere.Close)
	kc := peer(t, api(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.RequestURI(), http.StatusFound)
	}))
	res := probe(t, kc, 5*time.Second)
	if res.Sure || !strings.Contains(res.Err, "302") {
		t.Errorf("Probe(list redirected to another host) = status %s sure %v err %q, want not sure, HTTP 302 named", res.Status, res.Sure, res.Err)
	}
}
