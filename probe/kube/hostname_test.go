package kube_test

import (
	"context"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflight-sqlite/preflight/probe/kube"
)

// TestHostnameNotOurPod: found by the hostname (no POD_NAME), the pod of
// that name is another one: its spec.hostname differs, or its pod IP is
// none of this machine's addresses (our pod set spec.hostname to the
// other's name). Taking it for ours would leave the real other writer out
// as "ourselves"; the answer is not sure instead.
func TestHostnameNotOurPod(t *testing.T) {
	for _, c := range []struct {
		name, extra string
		want        bool // taken as our pod
	}{
		{"other spec.hostname", `"hostname":"elsewhere",`, false},
		{"other pod IP", `"status":{"phase":"Running","podIP":"192.0.2.77"},`, false},
		{"our pod IP", `"status":{"phase":"Running","podIP":"127.0.0.1"},`, true},
	} {
		pod := strings.Replace(podJSON, `"nodeName":"n1",`, `"nodeName":"n1",`+strings.TrimSuffix(c.extra, ",")+`,`, 1)
		if strings.HasPrefix(c.extra, `"status"`) {
			pod = strings.Replace(podJSON, `"status":{"phase":"Running"}`, strings.TrimSuffix(c.extra, ","), 1)
		}
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/api/v1/namespaces/app/pods/me":
				fmt.Fprint(w, pod)
			case "/api/v1/namespaces/app/pods":
				fmt.Fprint(w, `{"metadata":{},"items":[]}`)
			case "/api/v1/namespaces/app/persistentvolumeclaims/data":
				fmt.Fprint(w, `{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"]}}`)
			default:
				http.NotFound(w, r)
			}
		}))
		dir := t.TempDir()
		ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
		for name, b := range map[string][]byte{"ca.crt": ca, "namespace": []byte("app"), "token": []byte("tok\n")} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
		env := map[string]string{"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}
		opts := kube.Options{ServiceAccountDir: dir, Env: func(k string) string { return env[k] }, Timeout: 5 * time.Second,
			Hostname: func() (string, error) { return "me", nil }}
		res := kube.Probe(context.Background(), []string{"/data"}, opts)
		srv.Close()
		if got := res.Pod != nil && res.Sure; got != c.want {
			t.Errorf("%s: Probe = status %s sure %v pod %v err %q; want taken as ours %v", c.name, res.Status, res.Sure, res.Pod != nil, res.Err, c.want)
		}
	}
}
