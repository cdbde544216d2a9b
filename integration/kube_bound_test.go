package integration_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/internal/fakeengine"
)

// hostileAPI is a TLS Kubernetes API server on this host's loopback that
// answers our pod app/me (its volume data, claim data, at /data) and its
// claim, and answers every pod list with page. It returns a kubeconfig
// for it, readable by the image's user.
func hostileAPI(t *testing.T, page []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/namespaces/app/pods/me":
			fmt.Fprint(w, `{"metadata":{"name":"me","namespace":"app","uid":"u1"},"spec":{"nodeName":"n1","volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"data"}}],"containers":[{"name":"app","volumeMounts":[{"name":"data","mountPath":"/data"}]}]},"status":{"phase":"Running"}}`)
		case "/api/v1/namespaces/app/persistentvolumeclaims/data":
			fmt.Fprint(w, `{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"]}}`)
		case "/api/v1/namespaces/app/pods":
			w.Write(page)
		default:
			http.NotFound(w, r)
		}
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.StartTLS()
	t.Cleanup(srv.Close)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: k, cluster: {server: %s, insecure-skip-tls-verify: true}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\nusers: [{name: u, user: {token: tok}}]\n", srv.URL)
	if err := os.WriteFile(kc, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(kc), 0o755); err != nil {
		t.Fatal(err)
	}
	return kc
}

// An API server that ignores limit=250 and answers the pod list with one
// 16 MiB page of {} items (5.6 million pods to decode), or with 251 pods,
// costs the image's entrypoint under --memory 128m no OOM kill and no
// more than --kube-timeout (2s) and a few seconds: the answer about other
// pods is not sure, the page is refused by name, and the application
// starts.
func TestRunHostileKubePage(t *testing.T) {
	requireDocker(t)
	pod := `{"metadata":{"name":"other","namespace":"app","uid":"u2"},"spec":{"nodeName":"n2","volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"elsewhere"}}],"containers":[{"name":"app"}]}}`
	for _, tc := range []struct {
		name string
		page []byte
	}{
		{"16MiB-of-empties", fakeengine.Empties(`{"metadata":{},"items":`, `}`, 16<<20)},
		{"251-pods", []byte(`{"metadata":{},"items":[` + strings.TrimSuffix(strings.Repeat(pod+",", 251), ",") + `]}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc := hostileAPI(t, tc.page)
			vol := volume(t)
			seed(t, "-v", vol+":/data")
			id := startApp(t, "--memory", "128m", "--memory-swap", "128m", "--network", "host",
				"-v", vol+":/data", "-v", kc+":/run/kubeconfig:ro",
				"-e", "PREFLIGHT_KUBECONFIG=/run/kubeconfig", "-e", "POD_NAMESPACE=app", "-e", "POD_NAME=me",
				"-e", "PREFLIGHT_DOCKER=off", "-e", "DEMO_ROWS=1", "-e", "PREFLIGHT_LOG_FORMAT=json", image)
			wantCode(t, docker(t, "wait", id), 0)
			took := ranFor(t, id)
			if limit := 2*time.Second + 5*time.Second; took > limit {
				t.Errorf("container ran %s (preflight run, then the application), want at most %s (--kube-timeout 2s and 5s)", took, limit)
			}
			logs := docker(t, "logs", id)
			t.Logf("container ran %s; stderr:\n%s", took, logs.stderr)
			wantContains(t, "app stdout", logs.stdout, "demoapp: pid=1 journal_mode=wal db=/data/app.db")
			// The log is JSON (--log-format json): the one-line text log
			// names the finding only, the JSON keeps its message.
			wantContains(t, "preflight stderr", logs.stderr, `{"level":"info","id":"kube-unreachable",`)
			wantContains(t, "preflight stderr", logs.stderr, "other pods not checked")
			wantContains(t, "preflight stderr", logs.stderr, "a page of more than the 250 items asked for")
		})
	}
}
