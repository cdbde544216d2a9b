package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/preflight-sqlite/preflight/internal/kubeapi"
)

// Probe finds our pod and, for each data path (absolute, in this
// process's mount namespace), the volume, claim, PV, StorageClass and
// storage class behind it and the other pods that mount the same storage
// read-write, within opts.Timeout.
//
// Outside a cluster (no KUBERNETES_SERVICE_HOST and no opts.Kubeconfig)
// it asks nothing and returns StatusNotInCluster. Failures are values:
// Status and Err say what happened, Denied the requests RBAC refused; a
// denied or failed request makes Sure false, never "no other pods".
func Probe(ctx context.Context, dataPaths []string, opts Options) Result {
	if opts.Mode == ModeOff {
		return Result{Status: StatusOff}
	}
	cfg, err := configure(opts)
	if cfg == nil && err == nil && opts.Mode == ModeRequired {
		err = errors.New("no Kubernetes API configured: no KUBERNETES_SERVICE_HOST (not in a pod) and no kubeconfig")
	}
	if cfg == nil && err == nil {
		return Result{Status: StatusNotInCluster}
	}
	if err != nil {
		return Result{Status: StatusFailed, Err: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, opts.timeout())
	defer cancel()
	per := opts.RequestTimeout
	if per <= 0 {
		per = opts.timeout()
	}
	c, err := newClient(cfg, per)
	if err != nil {
		return Result{Status: StatusFailed, Err: err.Error(), Config: cfg}
	}
	defer c.close()
	p := &prober{c: c, opts: opts, res: Result{Config: cfg, Status: StatusRan, Sure: true}, owners: map[string]*Pod{}}
	p.run(ctx, cfg, dataPaths)
	return p.res
}

// configure returns the kubeconfig's configuration when one is given,
// else the in-cluster one; nil and no error when there is neither.
func configure(opts Options) (*Config, error) {
	if opts.Kubeconfig != "" {
		return LoadKubeconfig(opts.Kubeconfig)
	}
	cfg, ok, err := InCluster(opts.env, opts.ServiceAccountDir)
	if !ok {
		return nil, nil
	}
	return cfg, err
}

// prober carries one Probe call's client and result.
type prober struct {
	c      *client
	opts   Options
	res    Result
	owners map[string]*Pod // "ns/Kind/name" -> resolved owner
	nfail  int             // requests failed so far
	rs     map[string]*kubeapi.ReplicaSet
}

// fail records err: a denial in Denied (status denied unless worse), a
// dial error as unreachable, a deadline as timeout, anything else as
// failed; Sure becomes false.
func (p *prober) fail(err error) {
	p.nfail++
	p.res.Sure = false
	p.res.Err = strings.TrimPrefix(p.res.Err+"; "+err.Error(), "; ")
	var ae *APIError
	var ne net.Error
	st := StatusFailed
	switch {
	case errors.As(err, &ae) && (ae.Code == http.StatusForbidden || ae.Code == http.StatusUnauthorized):
		st = StatusDenied
		if ae.Code == http.StatusForbidden {
			perm := Permission{Verb: ae.Verb, Resource: ae.Resource, Namespace: ae.Namespace}
			if i := strings.IndexByte(ae.Resource, '.'); i > 0 {
				perm.Resource, perm.Group = ae.Resource[:i], ae.Resource[i+1:]
			}
			if !slices.Contains(p.res.Denied, perm) {
				p.res.Denied = append(p.res.Denied, perm)
			}
		}
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		st = StatusTimeout
	case isDialError(err):
		st = StatusUnreachable
	}
	if rank(st) > rank(p.res.Status) {
		p.res.Status = st
	}
}

func rank(s Status) int {
	return slices.Index([]Status{StatusRan, StatusNoPod, StatusDenied, StatusFailed, StatusUnreachable, StatusTimeout}, s)
}

func isDialError(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

func (p *prober) run(ctx context.Context, cfg *Config, dataPaths []string) {
	pod, how, err := p.findSelf(ctx, cfg)
	if err != nil {
		p.fail(err)
		var ae *APIError
		if errors.As(err, &ae) && ae.Code == http.StatusNotFound {
			p.res.Status = StatusNoPod
		}
		return
	}
	if pod == nil {
		p.res.Status, p.res.Sure = StatusNoPod, false
		p.res.Err = "not in a pod: no POD_NAME and no --pod with a kubeconfig"
		return
	}
	self := p.describe(ctx, pod)
	self.How = how
	p.res.Pod = &self
	p.res.Owner = p.ownerOf(ctx, pod)
	for _, dp := range dataPaths {
		p.res.Paths = append(p.res.Paths, p.mapPath(ctx, pod, dp))
	}
	p.findWriters(ctx, pod)
}

// findSelf names our pod: opts.Pod, else POD_NAMESPACE/POD_NAME, else the
// configuration's namespace and the hostname (in-cluster only). A nil
// pod and no error: nothing names a pod.
func (p *prober) findSelf(ctx context.Context, cfg *Config) (*kubeapi.Pod, string, error) {
	ns, name, how := "", "", ""
	switch {
	case p.opts.Pod != "":
		var ok bool
		ns, name, ok = strings.Cut(p.opts.Pod, "/")
		if !ok || ns == "" || name == "" {
			return nil, "", fmt.Errorf("pod %q: want NAMESPACE/NAME", p.opts.Pod)
		}
		how = "option"
	case p.opts.env("POD_NAME") != "":
		ns, name, how = p.opts.env("POD_NAMESPACE"), p.opts.env("POD_NAME"), "downward-api"
	case cfg.Source == "in-cluster":
		host := os.Hostname
		if p.opts.Hostname != nil {
			host = p.opts.Hostname
		}
		h, err := host()
		if err != nil {
			return nil, "", fmt.Errorf("hostname: %w", err)
		}
		name, how = h, "hostname"
	default:
		return nil, "", nil
	}
	if ns == "" {
		ns = cfg.Namespace
	}
	if ns == "" {
		ns = "default"
	}
	var pod kubeapi.Pod
	err := p.c.get(ctx, "/api/v1/namespaces/"+esc(ns)+"/pods/"+esc(name), nil, &pod, "get", "pods", ns, name)
	if err != nil {
		return nil, "", err
	}
	if how == "hostname" {
		if err := hostnamePodIsOurs(&pod, name); err != nil {
			return nil, "", err
		}
	}
	return &pod, how, nil
}

// hostnamePodIsOurs returns an error when pod, found by our host name,
// is another pod: its spec.hostname is another name, or it has pod IPs and
// none is an address of this machine (a pod whose spec.hostname is the
// other's name). No addresses to compare (none assigned yet, or the
// interfaces unreadable) is no evidence either way.
func hostnamePodIsOurs(pod *kubeapi.Pod, host string) error {
	if h := pod.Spec.Hostname; h != "" && h != host {
		return fmt.Errorf("pod %s/%s found by the host name %s is not this pod: its spec.hostname is %s; set POD_NAME and POD_NAMESPACE through the downward API", pod.Metadata.Namespace, pod.Metadata.Name, host, h)
	}
	ips := []string{pod.Status.PodIP}
	for _, a := range pod.Status.PodIPs {
		ips = append(ips, a.IP)
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	assigned := false
	for _, ip := range ips {
		if ip == "" {
			continue
		}
		assigned = true
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(net.ParseIP(ip)) {
				return nil
			}
		}
	}
	if assigned {
		return fmt.Errorf("pod %s/%s found by the host name %s is not this pod: its IP %s is none of this machine's addresses; set POD_NAME and POD_NAMESPACE through the downward API", pod.Metadata.Namespace, pod.Metadata.Name, host, pod.Status.PodIP)
	}
	return nil
}

func esc(s string) string { return strings.ReplaceAll(s, "/", "%2F") }

// describe reports pod with its owner resolved (best effort).
func (p *prober) describe(ctx context.Context, pod *kubeapi.Pod) Pod {
	out := Pod{Namespace: pod.Metadata.Namespace, Name: pod.Metadata.Name, UID: pod.Metadata.UID,
		Node: pod.Spec.NodeName, Phase: pod.Status.Phase}
	if ref, ok := pod.Metadata.ControllerRef(); ok {
		out.OwnerKind, out.OwnerName = ref.Kind, ref.Name
		if ref.Kind == "ReplicaSet" {
			if d := p.replicaSetOwner(ctx, out.Namespace, ref.Name); d != nil {
				out.OwnerKind, out.OwnerName = d.OwnerKind, d.OwnerName
			}
		}
	}
	return out
}

// replicaSetOwner returns the ReplicaSet's controller (a Deployment), or
// nil when it has none or could not be read (recorded).
func (p *prober) replicaSetOwner(ctx context.Context, ns, name string) *Pod {
	key := ns + "/ReplicaSet/" + name
	if o, ok := p.owners[key]; ok {
		return o
	}
	var o *Pod
	if rs, err := p.replicaSet(ctx, ns, name); err != nil {
		p.fail(err)
	} else if ref, ok := rs.Metadata.ControllerRef(); ok {
		o = &Pod{OwnerKind: ref.Kind, OwnerName: ref.Name}
	}
	p.owners[key] = o
	return o
}

// kubeletVolume returns the kubelet volume directory in a mount root
// ("/var/lib/kubelet/pods/UID/volumes/kubernetes.io~nfs/NAME"), with the
// pod UID and the volume directory name; ok false when root is none.
func kubeletVolume(root string) (dir, uid, name string, ok bool) {
	i := strings.Index(root, "/pods/")
	if i < 0 {
		return "", "", "", false
	}
	parts := strings.Split(root[i+len("/pods/"):], "/")
	if len(parts) < 4 || parts[1] != "volumes" {
		return "", "", "", false
	}
	return root[:i] + "/pods/" + path.Join(parts[:4]...), parts[0], parts[3], true
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	dir = path.Clean(dir)
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// replicaSet gets a ReplicaSet once per call (our pod's owner is asked for
// both its name and its replicas).
func (p *prober) replicaSet(ctx context.Context, ns, name string) (*kubeapi.ReplicaSet, error) {
	key := ns + "/" + name
	if rs, ok := p.rs[key]; ok {
		return rs, nil
	}
	var rs kubeapi.ReplicaSet
	if err := p.c.get(ctx, "/apis/apps/v1/namespaces/"+esc(ns)+"/replicasets/"+esc(name), nil, &rs, "get", "replicasets.apps", ns, name); err != nil {
		return nil, err
	}
	if p.rs == nil {
		p.rs = map[string]*kubeapi.ReplicaSet{}
	}
	p.rs[key] = &rs
	return &rs, nil
}
