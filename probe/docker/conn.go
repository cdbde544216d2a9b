package docker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"runtime"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"

	"github.com/preflight-sqlite/preflight/internal/bodylimit"
)

// errNotGET is returned by the request hook for any method but GET, before
// the request leaves the process.
var errNotGET = errors.New("refusing a non-GET request: this probe only reads")

// MaxBody is the most the probe reads of one engine response body, in
// bytes (16 MiB: a container list of several thousand containers with
// their mounts and labels is a few MiB). A longer body is an error
// wrapping ErrBodyTooLarge, never a silently truncated answer.
const MaxBody = 16 << 20

// ErrBodyTooLarge is returned (wrapped) when an engine response body is
// longer than MaxBody; the call's answer is then not sure.
var ErrBodyTooLarge = fmt.Errorf("docker API response body longer than %d MiB", MaxBody>>20)

// limitTransport bounds every response body to max bytes and to
// bodylimit.PeerShape (a list of more than 10,000 entries, or an answer
// that would decode into more objects or values, is an error wrapping
// bodylimit.ErrTooManyValues, before moby's client decodes any of it),
// and fails its reads once the request's context is done.
type limitTransport struct {
	base http.RoundTripper
	max  int64
}

func (t limitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = bodylimit.NewJSON(r.Context(), resp.Body, t.max, ErrBodyTooLarge, bodylimit.PeerShape)
	return resp, nil
}

// conn is one engine connection for one call.
type conn struct {
	ep      Endpoint
	cli     *client.Client
	tr      *http.Transport
	timeout time.Duration
	// rootDir is the engine's data root (GET /info DockerRootDir,
	// /var/lib/docker by default); "" when /info did not say.
	rootDir string
	// swarm is GET /info Swarm: this engine's node in a swarm, if any.
	swarm swarm.Info

	mu      sync.Mutex
	dialErr error // the last dial error, for classifying failures
}

// connect builds a GET-only client for ep whose every response body is
// bounded by MaxBody and every request by timeout. It contacts nothing
// yet. Supported schemes: unix, tcp (plain HTTP) and npipe (a Windows named
// pipe; dialling one works only on Windows); TLS and ssh are not.
func connect(ep Endpoint, timeout time.Duration) (*conn, error) {
	u, err := client.ParseHostURL(ep.Host)
	if err != nil {
		return nil, fmt.Errorf("parse docker host %q: %w", ep.Host, err)
	}
	c := &conn{ep: ep, timeout: timeout, tr: &http.Transport{MaxIdleConns: 6, IdleConnTimeout: 30 * time.Second}}
	d := &net.Dialer{Timeout: timeout}
	// The client's own host: for npipe, a stand-in (moby's client refuses
	// npipe outside Windows); the dialler below reaches the pipe either way.
	clientHost := ep.Host
	var dial func(ctx context.Context, network, addr string) (net.Conn, error)
	switch u.Scheme {
	case "unix":
		sock := u.Host
		c.tr.DisableCompression = true
		dial = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return c.record(d.DialContext(ctx, "unix", sock))
		}
	case "npipe":
		pipe, err := pipePath(u.Host)
		if err != nil {
			return nil, fmt.Errorf("connect to docker at %s: %w", ep.Host, err)
		}
		c.tr.DisableCompression = true
		clientHost = "tcp://npipe"
		dial = func(ctx context.Context, _, _ string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			return c.record(dialPipe(ctx, pipe))
		}
	case "tcp", "http":
		c.tr.Proxy = http.ProxyFromEnvironment
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return c.record(d.DialContext(ctx, network, addr))
		}
	default:
		return nil, fmt.Errorf("connect to docker at %s: scheme %q not supported (unix, tcp and npipe are)", ep.Host, u.Scheme)
	}
	c.tr.DialContext = dial
	cli, err := client.New(
		client.WithHost(clientHost),
		// After WithHost, which only configures the default transport.
		client.WithHTTPClient(&http.Client{Transport: limitTransport{base: c.tr, max: MaxBody}}),
		client.WithTimeout(timeout),
		client.WithUserAgent("preflight"),
		client.WithHTTPRequestHook(func(r *http.Request) error {
			if r.Method != http.MethodGet {
				return errNotGET
			}
			return nil
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("connect to docker at %s: %w", ep.Host, err)
	}
	c.cli = cli
	return c, nil
}

func (c *conn) record(nc net.Conn, err error) (net.Conn, error) {
	if err != nil {
		c.mu.Lock()
		c.dialErr = err
		c.mu.Unlock()
	}
	return nc, err
}

func (c *conn) close() {
	c.cli.Close()
	c.tr.CloseIdleConnections()
}

// classify maps a failed call to a status. A missing socket is
// "no-daemon" (a host without an engine) only at the default address on a
// host: inside a container the socket may just not be mounted, and an
// address someone configured (Options.Host, DOCKER_HOST, a context) names
// an engine that should be there; a daemon that is down removes its
// socket, and with live-restore its containers keep running. Both are
// "unreachable".
func (c *conn) classify(err error, inContainer bool) string {
	c.mu.Lock()
	dialErr := c.dialErr
	c.mu.Unlock()
	switch {
	case dialErr != nil && errors.Is(dialErr, fs.ErrNotExist):
		if inContainer || c.ep.Source != SourceDefault {
			return StatusUnreachable
		}
		return StatusNoDaemon
	case dialErr != nil && (errors.Is(dialErr, fs.ErrPermission) || errors.Is(dialErr, syscall.EPERM)):
		return StatusDenied
	case dialErr != nil:
		return StatusUnreachable
	case errors.Is(err, context.DeadlineExceeded), client.IsErrConnectionFailed(err):
		return StatusUnreachable
	case cerrdefs.IsPermissionDenied(err), cerrdefs.IsUnauthorized(err):
		return StatusDenied
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return StatusUnreachable
	}
	return StatusFailed
}

// sentinel returns the sentinel error for a status, or nil.
func sentinel(status string) error {
	switch status {
	case StatusNoDaemon:
		return ErrNoDaemon
	case StatusDenied:
		return ErrDenied
	case StatusUnreachable:
		return ErrUnreachable
	}
	return nil
}

// engine negotiates the API version (GET /_ping) and reads GET /version
// and GET /info. A 401/403 on /info alone (a proxy with INFO=0) is not
// fatal: the engine is then recognised from /version only.
func (c *conn) engine(ctx context.Context) (*Engine, error) {
	if _, err := c.cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return nil, fmt.Errorf("ping docker at %s: %w", c.ep.Host, err)
	}
	v, err := c.cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return nil, fmt.Errorf("get docker version at %s: %w", c.ep.Host, err)
	}
	info, err := c.cli.Info(ctx, client.InfoOptions{})
	if err != nil && !cerrdefs.IsPermissionDenied(err) && !cerrdefs.IsUnauthorized(err) {
		return nil, fmt.Errorf("get docker info at %s: %w", c.ep.Host, err)
	}
	e := Recognize(info.Info, v)
	c.rootDir = info.Info.DockerRootDir
	c.swarm = info.Info.Swarm
	if runtime.GOOS != "linux" && e.OS == "linux" {
		e.CrossesVM = true
	}
	return &e, nil
}
