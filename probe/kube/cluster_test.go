package kube_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/probe/kube"
)

// clusterPeer answers every list ReadCluster sends with an empty page,
// but resource, which h answers; it records the requests.
func clusterPeer(t *testing.T, resource string, h http.HandlerFunc) (string, *[]string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	kc := peer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/"+resource) {
			h(w, r)
			return
		}
		fmt.Fprint(w, `{"metadata":{},"items":[]}`)
	})
	return kc, &seen
}

func readCluster(kc string) (*kube.Cluster, error) {
	return kube.ReadCluster(context.Background(), kube.ClusterOptions{Kubeconfig: kc, Timeout: 20 * time.Second})
}

// TestReadClusterHostile: a server that sends a page of more items than
// the limit, continue tokens for ever, or a body over the bound makes
// ReadCluster an error naming it, never a partial cluster; a refused
// PersistentVolume list is recorded and the rest read; every request is
// a GET with limit=250.
func TestReadClusterHostile(t *testing.T) {
	item := `{"metadata":{"name":"d","namespace":"a"},"spec":{}}`
	cases := []struct {
		name, resource string
		h              http.HandlerFunc
		want           error
	}{
		{"a page over the limit", "deployments", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"metadata":{},"items":[%s]}`, strings.TrimSuffix(strings.Repeat(item+",", kube.PageSize+1), ","))
		}, kube.ErrPageTooLarge},
		{"continue tokens for ever", "pods", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"metadata":{"continue":"t%d"},"items":[]}`, time.Now().UnixNano())
		}, kube.ErrTooManyPages},
		{"a body over the bound", "replicasets", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"metadata":{},"items":[{"metadata":{"name":"`)
			chunk := []byte(strings.Repeat("a", 64<<10))
			for n := 0; n < kube.MaxBody+len(chunk); n += len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, kube.ErrBodyTooLarge},
	}
	for _, c := range cases {
		kc, _ := clusterPeer(t, c.resource, c.h)
		cl, err := readCluster(kc)
		if !errors.Is(err, c.want) || cl != nil {
			t.Errorf("ReadCluster(%s) = %v, %v; want an error wrapping %v", c.name, cl, err, c.want)
		}
	}
	kc, seen := clusterPeer(t, "persistentvolumes", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"message":"persistentvolumes is forbidden"}`)
	})
	cl, err := readCluster(kc)
	if err != nil || len(cl.Denied) != 1 || cl.Denied[0].Resource != "persistentvolumes" {
		t.Fatalf("ReadCluster(PersistentVolumes refused) = %+v, %v; want read, the refusal recorded", cl, err)
	}
	if len(*seen) != 10 {
		t.Errorf("ReadCluster sent %d requests, want one list per kind (10): %q", len(*seen), *seen)
	}
	for _, s := range *seen {
		if !strings.HasPrefix(s, "GET ") || !strings.Contains(s, "limit=250") {
			t.Errorf("ReadCluster sent %q, want GET with limit=250", s)
		}
	}
}
