package kube_test

import (
	"context"
	"encoding/pem"
	"errors"
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
	"github.com/preflight-sqlite/preflight/internal/peak"
	"github.com/preflight-sqlite/preflight/probe/kube"
	"github.com/preflight-sqlite/preflight/probe/mounts"
)

// peer is an httptest TLS server standing in for a hostile or broken API
// server, and a kubeconfig that points at it.
func peer(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return writeKubeconfig(t, srv.URL, "", "tok")
}

func writeKubeconfig(t testing.TB, server, user, token string) string {
	t.Helper()
	if user == "" {
		user = "    token: " + token + "\n"
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: c
clusters:
- name: k
  cluster:
    server: %s
    insecure-skip-tls-verify: true
contexts:
- name: c
  context: {cluster: k, user: u, namespace: app}
users:
- name: u
  user:
%s`, server, user)
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const podJSON = `{"metadata":{"name":"me","namespace":"app","uid":"u1"},"spec":{"nodeName":"n1","volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"data"}}],"containers":[{"name":"app","volumeMounts":[{"name":"data","mountPath":"/data"}]}]},"status":{"phase":"Running"}}`

// api answers our pod and claim, and hands pod lists to list.
func api(list http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/namespaces/app/pods/me":
			fmt.Fprint(w, podJSON)
		case "/api/v1/namespaces/app/persistentvolumeclaims/data":
			fmt.Fprint(w, `{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteMany"],"storageClassName":"x"}}`)
		case "/apis/storage.k8s.io/v1/storageclasses/x":
			fmt.Fprint(w, `{"metadata":{"name":"x"},"provisioner":"nfs.csi.k8s.io"}`)
		case "/api/v1/namespaces/app/pods":
			list(w, r)
		default:
			http.NotFound(w, r)
		}
	}
}

func probe(t *testing.T, kc string, timeout time.Duration) kube.Result {
	t.Helper()
	return kube.Probe(context.Background(), []string{"/data"}, kube.Options{Kubeconfig: kc, Pod: "app/me", Timeout: timeout})
}

func TestHugeBody(t *testing.T) {
	kc := peer(t, api(func(w http.ResponseWriter, r *http.Request) {
		// One pod whose name is longer than the bound.
		fmt.Fprint(w, `{"metadata":{},"items":[{"metadata":{"name":"`)
		chunk := []byte(strings.Repeat("a", 64<<10))
		for n := 0; n < kube.MaxBody+len(chunk); n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	res := probe(t, kc, 20*time.Second)
	if res.Sure || !strings.Contains(res.Err, "longer than 16 MiB") {
		t.Fatalf("Probe(huge list) = status %s sure %v err %q, want not sure with the body bound named", res.Status, res.Sure, res.Err)
	}
	if len(res.Paths) != 1 || res.Paths[0].Sure {
		t.Errorf("Probe(huge list) paths = %+v, want one path not sure", res.Paths)
	}
}

func TestHungAPI(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // accepted, never answered
		}
	}()
	kc := writeKubeconfig(t, "https://"+ln.Addr().String(), "", "tok")
	start := time.Now()
	res := probe(t, kc, 300*time.Millisecond)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Probe(hung API) took %s with a 300ms timeout", took)
	}
	if res.Status != kube.StatusTimeout || res.Sure {
		t.Errorf("Probe(hung API) = status %s sure %v (%s), want timeout, not sure", res.Status, res.Sure, res.Err)
	}
}

func TestRepeatedContinue(t *testing.T) {
	kc := peer(t, api(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"metadata":{"continue":"again"},"items":[]}`)
	}))
	res := probe(t, kc, 5*time.Second)
	if res.Sure || !strings.Contains(res.Err, "continue token repeats") {
		t.Errorf("Probe(endless paging) = status %s sure %v err %q, want not sure, the loop named", res.Status, res.Sure, res.Err)
	}
}

func TestPagingFindsWriterOnLastPage(t *testing.T) {
	var limits []string
	kc := peer(t, api(func(w http.ResponseWriter, r *http.Request) {
		limits = append(limits, r.URL.Query().Get("limit"))
		if r.URL.Query().Get("continue") == "" {
			fmt.Fprint(w, `{"metadata":{"continue":"p2"},"items":[`+podJSON+`]}`)
			return
		}
		other := strings.NewReplacer(`"name":"me"`, `"name":"other"`, `"uid":"u1"`, `"uid":"u2"`, `"n1"`, `"n2"`).Replace(podJSON)
		fmt.Fprint(w, `{"metadata":{},"items":[`+other+`]}`)
	}))
	res := probe(t, kc, 5*time.Second)
	if res.Status != kube.StatusRan || !res.Sure {
		t.Fatalf("Probe = status %s sure %v err %q, want ran, sure", res.Status, res.Sure, res.Err)
	}
	ws := res.Paths[0].Writers
	if len(ws) != 1 || ws[0].Name != "other" || ws[0].SameNode || ws[0].Node != "n2" {
		t.Errorf("Probe writers = %+v, want pod other on node n2", ws)
	}
	if len(limits) != 2 || limits[0] != fmt.Sprint(kube.PageSize) {
		t.Errorf("list requests with limit %v, want two pages of limit %d", limits, kube.PageSize)
	}
	if got := res.Paths[0].Storage.Class; got != "network" {
		t.Errorf("class from StorageClass nfs.csi.k8s.io = %s, want network", got)
	}
}

func TestOnlyGET(t *testing.T) {
	kc := peer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			t.Errorf("request %s %s, want GET only", r.Method, r.URL.Path)
		}
		api(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"items":[]}`) })(w, r)
	})
	probe(t, kc, 5*time.Second)
}

func TestExecPluginUnsupported(t *testing.T) {
	kc := writeKubeconfig(t, "https://127.0.0.1:1", "    exec:\n      command: aws\n      apiVersion: client.authentication.k8s.io/v1\n", "")
	_, err := kube.LoadKubeconfig(kc)
	if !errors.Is(err, kube.ErrExecUnsupported) || !strings.Contains(err.Error(), "use a token") {
		t.Errorf("LoadKubeconfig(exec user) = %v, want ErrExecUnsupported naming a token", err)
	}
	res := probe(t, kc, time.Second)
	if res.Status != kube.StatusFailed || !strings.Contains(res.Err, "unsupported") {
		t.Errorf("Probe(exec kubeconfig) = %s %q, want failed, unsupported", res.Status, res.Err)
	}
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	res := probe(t, writeKubeconfig(t, "https://"+addr, "", "tok"), 2*time.Second)
	if res.Status != kube.StatusUnreachable || res.Sure {
		t.Errorf("Probe(closed port) = %s sure %v (%s), want unreachable", res.Status, res.Sure, res.Err)
	}
}

func TestNotInCluster(t *testing.T) {
	res := kube.Probe(context.Background(), []string{"/data"}, kube.Options{Env: func(string) string { return "" }})
	if res.Status != kube.StatusNotInCluster {
		t.Errorf("Probe(no env, no kubeconfig) = %s, want not-in-cluster", res.Status)
	}
	res = kube.Probe(context.Background(), []string{"/data"}, kube.Options{Mode: kube.ModeRequired, Env: func(string) string { return "" }})
	if res.Status != kube.StatusFailed || res.Sure {
		t.Errorf("Probe(required, no env, no kubeconfig) = %s, want failed", res.Status)
	}
}

func TestInCluster(t *testing.T) {
	srv := httptest.NewTLSServer(api(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"items":[]}`) }))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	for name, b := range map[string][]byte{"ca.crt": ca, "namespace": []byte("app"), "token": []byte("tok\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
	env := map[string]string{"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port, "POD_NAME": "me"}
	opts := kube.Options{ServiceAccountDir: dir, Env: func(k string) string { return env[k] }, Timeout: 5 * time.Second}
	res := kube.Probe(context.Background(), []string{"/data"}, opts)
	if res.Status != kube.StatusRan || res.Pod == nil || res.Pod.Namespace != "app" || res.Pod.How != "downward-api" {
		t.Fatalf("Probe(in-cluster) = %s %q pod %+v, want ran, pod app/me from the downward API and the namespace file", res.Status, res.Err, res.Pod)
	}
	if p := res.Paths[0]; p.Claim != "data" || len(p.Containers) != 1 || p.Containers[0] != "app" {
		t.Errorf("Probe(in-cluster) path = %+v, want claim data in container app", p)
	}
	delete(env, "POD_NAME")
	opts.Hostname = func() (string, error) { return "me", nil }
	res = kube.Probe(context.Background(), []string{"/data"}, opts)
	if res.Status != kube.StatusRan || res.Pod == nil || res.Pod.How != "hostname" {
		t.Errorf("Probe(in-cluster, no POD_NAME) = %s %q pod %+v, want ran, pod found by the hostname in the namespace file's namespace", res.Status, res.Err, res.Pod)
	}
}

// TestKubeletPathInMountTable: a data path that no volumeMount names (the
// application resolved a symlink to it) is still mapped to its volume by
// the kubelet directory in the mount's root.
func TestKubeletPathInMountTable(t *testing.T) {
	kc := peer(t, api(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"items":[]}`) }))
	table, err := mounts.Parse(strings.NewReader("1 0 254:1 / / rw - overlay overlay rw\n" +
		"2 1 254:1 /var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/data /srv/real rw - ext4 /dev/vda1 rw\n"))
	if err != nil {
		t.Fatal(err)
	}
	res := kube.Probe(context.Background(), []string{"/srv/real/app.db"}, kube.Options{Kubeconfig: kc, Pod: "app/me", Timeout: 5 * time.Second, MountTable: table})
	p := res.Paths[0]
	if p.KubeletPath != "/var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/data" || p.Volume != "data" || p.Claim != "data" {
		t.Errorf("Probe(/srv/real/app.db) path = %+v, want volume data from the kubelet path, claim data", p)
	}
}

// manyLabels is n distinct JSON object members "lN":"".
func manyLabels(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"l%d":""`, i)
	}
	return b.String()
}

// TestHostileShapes: a server that stays under the byte bound but answers
// what would decode into millions of structs (16 MiB of {} items in one
// page, 16 MiB of {} volumes in our pod), or a page of more items than
// the limit asked for, makes the probe not sure, within a second and a
// few tens of MiB of heap.
func TestHostileShapes(t *testing.T) {
	other := strings.NewReplacer(`"name":"me"`, `"name":"other"`, `"uid":"u1"`, `"uid":"u2"`).Replace(podJSON)
	overLimit := `{"metadata":{},"items":[` + strings.TrimSuffix(strings.Repeat(other+",", kube.PageSize+1), ",") + `]}`
	empties := func(head, tail string) func() []byte {
		return func() []byte { return fakeengine.Empties(head, tail, kube.MaxBody) }
	}
	// A claim bound to an NFS volume: the probe then lists every PV.
	nfs := map[string]string{
		"/api/v1/namespaces/app/persistentvolumeclaims/data": `{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteMany"],"volumeName":"pv1"},"status":{"phase":"Bound"}}`,
		"/api/v1/persistentvolumes/pv1":                      `{"metadata":{"name":"pv1"},"spec":{"nfs":{"server":"nas","path":"/export"},"claimRef":{"namespace":"app","name":"data"}}}`,
	}
	for _, tc := range []struct {
		name, path string
		body       func() []byte
		answers    map[string]string
		want       string
	}{
		{"page of 16 MiB of {}", "/api/v1/namespaces/app/pods", empties(`{"metadata":{},"items":`, `}`), nil, "a page of more than the 250 items asked for"},
		{"page of 16 MiB of items keys of 250 {} each", "/api/v1/namespaces/app/pods", func() []byte {
			group := `"items":[` + strings.TrimSuffix(strings.Repeat("{},", kube.PageSize), ",") + `]`
			return []byte(`{"metadata":{},` + strings.TrimSuffix(strings.Repeat(group+",", kube.MaxBody/(len(group)+1)-1), ",") + `}`)
		}, nil, "a page of more than the 250 items asked for"},
		{"page of 251 pods", "/api/v1/namespaces/app/pods", func() []byte { return []byte(overLimit) }, nil, "a page of more than the 250 items asked for"},
		{"PV page of 16 MiB of {}", "/api/v1/persistentvolumes", empties(`{"metadata":{},"items":`, `}`), nfs, "list persistentvolumes: a page of more than the 250 items asked for"},
		{"a pod in the page with 16 MiB of {} volumes", "/api/v1/namespaces/app/pods", empties(`{"metadata":{},"items":[{"metadata":{"name":"x"},"spec":{"volumes":`, `}}]}`), nil, "an array of more than 10000 entries"},
		{"a pod in the page with 300,000 labels", "/api/v1/namespaces/app/pods", func() []byte {
			return []byte(`{"metadata":{},"items":[{"metadata":{"name":"x","labels":{` + manyLabels(300_000) + `}}}]}`)
		}, nil, "more than 262144 values"},
		{"our pod with 16 MiB of {} volumes", "/api/v1/namespaces/app/pods/me", empties(`{"metadata":{"name":"me","namespace":"app"},"spec":{"volumes":`, `}}`), nil, "an array of more than 10000 entries"},
		{"claim with 16 MiB of {} access modes", "/api/v1/namespaces/app/persistentvolumeclaims/data", empties(`{"metadata":{"name":"data"},"spec":{"accessModes":`, `}}`), nil, "an array of more than 10000 entries"},
		{"StorageClass with 16 MiB of {} mount options", "/apis/storage.k8s.io/v1/storageclasses/x", empties(`{"metadata":{"name":"x"},"provisioner":"nfs.csi.k8s.io","mountOptions":`, `}`), nil, "an array of more than 10000 entries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body()
			kc := peer(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == tc.path {
					w.Write(body)
					return
				}
				if a, ok := tc.answers[r.URL.Path]; ok {
					fmt.Fprint(w, a)
					return
				}
				api(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"items":[]}`) })(w, r)
			})
			var res kube.Result
			took, heap := peak.Measure(func() { res = probe(t, kc, 10*time.Second) })
			t.Logf("%s: %s, heap growth %d MiB: status %s, sure %v, err %q", tc.name, took, heap>>20, res.Status, res.Sure, res.Err)
			if res.Sure || res.Status == kube.StatusRan || !strings.Contains(res.Err, tc.want) {
				t.Errorf("Probe(%s) = status %s sure %v err %q, want not sure, naming %q", tc.name, res.Status, res.Sure, res.Err, tc.want)
			}
			if took > 2*time.Second {
				t.Errorf("Probe(%s) took %s, want at most 2s", tc.name, took)
			}
			if heap > 32<<20 {
				t.Errorf("Probe(%s) heap growth %d MiB, want at most 32 MiB", tc.name, heap>>20)
			}
		})
	}
}

// BenchmarkEmptiesPage is the worst page under the byte bound: a server
// that ignores limit=250 and answers the pod list with 16 MiB of {} items,
// one whole Probe per op. heap-MB is the most the heap grew while it ran
// (peak.Measure: the server's 16 MiB answer, made once, is not counted).
func BenchmarkEmptiesPage(b *testing.B) {
	body := fakeengine.Empties(`{"metadata":{},"items":`, `}`, kube.MaxBody)
	srv := httptest.NewTLSServer(api(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	b.Cleanup(srv.Close)
	kc := writeKubeconfig(b, srv.URL, "", "tok")
	b.ReportAllocs()
	var most uint64
	for b.Loop() {
		_, heap := peak.Measure(func() {
			res := kube.Probe(context.Background(), []string{"/data"}, kube.Options{Kubeconfig: kc, Pod: "app/me", Timeout: 2 * time.Second})
			if res.Sure || !strings.Contains(res.Err, "a page of more than the 250 items asked for") {
				b.Fatalf("Probe(empties page) = sure %v err %q, want not sure, the page bound named", res.Sure, res.Err)
			}
		})
		most = max(most, heap)
	}
	b.ReportMetric(float64(most)/(1<<20), "heap-MB")
}

// TestFullPageAccepted: a page of exactly the limit asked for is read,
// also when its pods are heavy (1,500 labels each: 375,000 values in the
// page, more than one answer's bound, which a page counts per item).
func TestFullPageAccepted(t *testing.T) {
	var labels strings.Builder
	for i := range 1500 {
		fmt.Fprintf(&labels, `"l%d":"v",`, i)
	}
	other := strings.NewReplacer(`"name":"me"`, `"name":"other","labels":{`+strings.TrimSuffix(labels.String(), ",")+`}`, `"uid":"u1"`, `"uid":"u2"`, `"claimName":"data"`, `"claimName":"elsewhere"`).Replace(podJSON)
	page := `{"metadata":{},"items":[` + strings.TrimSuffix(strings.Repeat(other+",", kube.PageSize), ",") + `]}`
	kc := peer(t, api(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, page) }))
	if res := probe(t, kc, 5*time.Second); res.Status != kube.StatusRan || !res.Sure {
		t.Errorf("Probe(a page of %d pods, %d bytes) = status %s sure %v err %q, want ran, sure", kube.PageSize, len(page), res.Status, res.Sure, res.Err)
	}
}
