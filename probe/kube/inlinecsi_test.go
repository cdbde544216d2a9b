package kube_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestInlineCSINFSWriter: our pod mounts an NFS export inline; another
// pod mounts the same share through an inline volume of the CSI NFS
// driver (nfs.csi.k8s.io, server and share attributes), read-write. It is
// a writer; one whose CSI volume is readOnly is not.
func TestInlineCSINFSWriter(t *testing.T) {
	me := `{"metadata":{"name":"me","namespace":"app","uid":"u1"},"spec":{"nodeName":"n1","volumes":[{"name":"data","nfs":{"server":"nfs.example.com","path":"/export/app"}}],"containers":[{"name":"app","volumeMounts":[{"name":"data","mountPath":"/data"}]}]},"status":{"phase":"Running"}}`
	other := func(name, ro string) string {
		return `{"metadata":{"name":"` + name + `","namespace":"app","uid":"` + name + `"},"spec":{"nodeName":"n2","volumes":[{"name":"share","csi":{"driver":"nfs.csi.k8s.io",` + ro + `"volumeAttributes":{"server":"nfs.example.com","share":"/export"}}}],"containers":[{"name":"c","volumeMounts":[{"name":"share","mountPath":"/s"}]}]},"status":{"phase":"Running"}}`
	}
	kc := peer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/namespaces/app/pods/me":
			fmt.Fprint(w, me)
		case "/api/v1/namespaces/app/pods":
			fmt.Fprint(w, `{"metadata":{},"items":[`+me+`,`+other("writer", "")+`,`+other("reader", `"readOnly":true,`)+`]}`)
		case "/api/v1/persistentvolumes":
			fmt.Fprint(w, `{"metadata":{},"items":[]}`)
		default:
			http.NotFound(w, r)
		}
	})
	res := probe(t, kc, 5*time.Second)
	if len(res.Paths) != 1 {
		t.Fatalf("Probe = %+v, want one path", res)
	}
	var names []string
	for _, w := range res.Paths[0].Writers {
		names = append(names, w.Name)
	}
	if strings.Join(names, ",") != "writer" {
		t.Errorf("Probe writers = %v (status %s, sure %v, err %q), want [writer]", names, res.Status, res.Sure, res.Err)
	}
}
