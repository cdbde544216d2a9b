package kubeapi_test

import (
	"encoding/json"
	"testing"

	"github.com/preflight-sqlite/preflight/internal/kubeapi"
)

// TestSameBackingSpellings: one NFS share written in ways that name the
// same files (host name case, a trailing dot, a cleaned path, one export
// inside the other, the CSI nfs driver's server and share attributes)
// is one volume; a sibling export is not.
func TestSameBackingSpellings(t *testing.T) {
	pv := func(js string) kubeapi.Storage {
		t.Helper()
		var p kubeapi.PersistentVolume
		if err := json.Unmarshal([]byte(js), &p); err != nil {
			t.Fatal(err)
		}
		return kubeapi.ClassifyPV(&p)
	}
	ours := pv(`{"spec":{"nfs":{"server":"nfs.example.com","path":"/export/app"}}}`)
	for _, c := range []struct {
		js   string
		want bool
	}{
		{`{"spec":{"nfs":{"server":"NFS.Example.com","path":"/export/app/"}}}`, true},
		{`{"spec":{"nfs":{"server":"nfs.example.com.","path":"//export/./app"}}}`, true},
		{`{"spec":{"nfs":{"server":"nfs.example.com","path":"/export"}}}`, true},
		{`{"spec":{"nfs":{"server":"nfs.example.com","path":"/export/app/db"}}}`, true},
		{`{"spec":{"csi":{"driver":"nfs.csi.k8s.io","volumeHandle":"h1","volumeAttributes":{"server":"nfs.example.com","share":"/export"}}}}`, true},
		{`{"spec":{"csi":{"driver":"nfs.csi.k8s.io","volumeHandle":"h2","volumeAttributes":{"server":"nfs.example.com","share":"/export","subdir":"app"}}}}`, true},
		{`{"spec":{"nfs":{"server":"nfs.example.com","path":"/export/application"}}}`, false},
		{`{"spec":{"nfs":{"server":"other.example.com","path":"/export/app"}}}`, false},
	} {
		if got := kubeapi.SameBacking(ours, pv(c.js)); got != c.want {
			t.Errorf("SameBacking(nfs.example.com:/export/app, %s) = %v, want %v", c.js, got, c.want)
		}
	}
}
