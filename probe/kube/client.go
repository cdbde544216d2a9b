package kube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/preflight-sqlite/preflight/internal/bodylimit"
	"github.com/preflight-sqlite/preflight/internal/rawfile"
)

// MaxBody is the most the probe reads of one API response body, in bytes
// (16 MiB, as the Docker probe: a page of PageSize pods is well under
// 1 MiB). A longer body is an error wrapping ErrBodyTooLarge, never a
// silently truncated answer.
const MaxBody = 16 << 20

// PageSize is the limit= of every list request: memory is bounded by one
// page, whatever the namespace holds.
const PageSize = 250

// MaxPages bounds how many pages one list follows (PageSize*MaxPages
// objects); a server that hands out continue tokens for ever makes the
// list an error (ErrTooManyPages), not an endless loop.
const MaxPages = 400

// MaxContinue is the longest continue token a list follows, in bytes (an
// API server's are a few hundred): every token is kept to spot a repeat
// and sent back in a URL, so a longer one is an error (ErrTooManyPages).
const MaxContinue = 16 << 10

// ErrBodyTooLarge is returned (wrapped) when a response body is longer
// than MaxBody.
var ErrBodyTooLarge = fmt.Errorf("kubernetes API response body longer than %d MiB", MaxBody>>20)

// ErrPageTooLarge is returned (wrapped) when a list page holds more items
// than the PageSize the request asked for: the server broke the protocol,
// and the list is not sure.
var ErrPageTooLarge = errors.New("kubernetes API list page larger than its limit")

// ErrTooManyPages is returned (wrapped) when a list has more than
// MaxPages pages, or a continue token repeats.
var ErrTooManyPages = errors.New("kubernetes API list did not end")

// APIError is a response with a status code other than 200: 401
// (Unauthorized), 403 (Forbidden: RBAC denied Verb on Resource), 404, or
// a 3xx redirect (never followed).
type APIError struct {
	Code      int
	Verb      string
	Resource  string
	Namespace string
	Name      string
	Message   string
}

func (e *APIError) Error() string {
	what := e.Resource
	if e.Name != "" {
		what += " " + e.Name
	}
	if e.Namespace != "" {
		what += " in namespace " + e.Namespace
	}
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Verb, what, e.Code, e.Message)
}

// client is a GET-only Kubernetes REST client: one server, a CA pool, and
// a bearer token (re-read from its file when it changes) or a client
// certificate.
type client struct {
	server    *url.URL
	http      *http.Client
	tokenFile string
	mu        sync.Mutex
	token     string
	tokenFI   os.FileInfo
}

// newClient builds the client for cfg; perRequest bounds each request
// (dial, TLS, headers and body).
func newClient(cfg *Config, perRequest time.Duration) (*client, error) {
	u, err := url.Parse(cfg.Server)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("parse server %q: not a URL", cfg.Server)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.Insecure} //nolint:gosec // only when the kubeconfig says insecure-skip-tls-verify
	if len(cfg.CAData) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.CAData) {
			return nil, errors.New("read CA: no PEM certificate")
		}
		tc.RootCAs = pool
	}
	if len(cfg.CertData) > 0 {
		cert, err := clientCertificate(cfg.CertData, cfg.KeyData)
		if err != nil {
			return nil, fmt.Errorf("read client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	d := &net.Dialer{Timeout: perRequest}
	tr := &http.Transport{
		DialContext: d.DialContext, TLSClientConfig: tc, TLSHandshakeTimeout: perRequest,
		ResponseHeaderTimeout: perRequest, MaxIdleConns: 2, IdleConnTimeout: 5 * time.Second,
		Proxy: nil,
	}
	// A redirect is not followed: its answer would come from a server
	// the configuration never named; the 3xx is an APIError.
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &client{server: u, http: &http.Client{Transport: tr, Timeout: perRequest, CheckRedirect: noRedirect},
		tokenFile: cfg.TokenFile, token: cfg.Token}, nil
}

func (c *client) close() { c.http.CloseIdleConnections() }

// bearer returns the token, re-reading TokenFile when it is another file
// or its modification time changed (the kubelet rotates projected tokens
// by swapping the ..data symlink to a new directory).
func (c *client) bearer() (string, error) {
	if c.tokenFile == "" {
		return c.token, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fi, err := os.Stat(c.tokenFile)
	if err != nil {
		return "", fmt.Errorf("read token: %w", err)
	}
	if c.tokenFI != nil && os.SameFile(fi, c.tokenFI) && fi.ModTime().Equal(c.tokenFI.ModTime()) {
		return c.token, nil
	}
	b, err := readBounded(c.tokenFile, 64<<10)
	if err != nil {
		return "", fmt.Errorf("read token: %w", err)
	}
	c.token, c.tokenFI = strings.TrimSpace(string(b)), fi
	return c.token, nil
}

// get decodes the JSON object at apiPath (with query q) into out. verb,
// resource, ns and name describe the request for errors.
func (c *client) get(ctx context.Context, apiPath string, q url.Values, out any, verb, resource, ns, name string) error {
	return c.read(ctx, apiPath, q, bodylimit.PeerShape, func(dec *json.Decoder) error { return dec.Decode(out) }, verb, resource, ns, name)
}

// pageShape bounds a list page: bodylimit.PeerShape, its objects and
// values counted per item (each is decoded and let go before the next).
var pageShape = func() bodylimit.Shape {
	s := bodylimit.PeerShape
	s.ItemDepth = 2
	return s
}()

// read asks for apiPath (with query q) and hands an answer of 200 to
// decode, through a decoder over the body bounded by MaxBody and shape
// (an error wrapping ErrBodyTooLarge or bodylimit.ErrTooManyValues) whose
// reads fail once ctx is done. verb, resource, ns and name describe the
// request for errors.
func (c *client) read(ctx context.Context, apiPath string, q url.Values, shape bodylimit.Shape, decode func(*json.Decoder) error, verb, resource, ns, name string) error {
	u := *c.server
	u.Path = strings.TrimSuffix(u.Path, "/") + apiPath
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "preflight")
	tok, err := c.bearer()
	if err != nil {
		return err
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var st struct {
			Message string `json:"message"`
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if json.Unmarshal(b, &st) != nil || st.Message == "" {
			st.Message = strings.TrimSpace(http.StatusText(resp.StatusCode))
		}
		return &APIError{Code: resp.StatusCode, Verb: verb, Resource: resource, Namespace: ns, Name: name, Message: st.Message}
	}
	body := bodylimit.NewJSON(ctx, resp.Body, MaxBody, ErrBodyTooLarge, shape)
	if err := decode(json.NewDecoder(body)); err != nil {
		if errors.Is(err, ErrBodyTooLarge) || errors.Is(err, ErrPageTooLarge) {
			return err
		}
		return fmt.Errorf("decode %s %s: %w", verb, resource, err)
	}
	return nil
}

// list follows limit/continue over apiPath and calls each for every item
// as it is decoded: memory holds one item, not a page. A page of more
// than PageSize items (the limit asked for) is refused (ErrPageTooLarge);
// the context is checked before each item. Stops at MaxPages, a repeated
// continue token or one longer than MaxContinue (ErrTooManyPages).
func list[T any](ctx context.Context, c *client, apiPath, resource, ns string, each func(*T)) error {
	cont := ""
	seen := map[string]bool{}
	for range MaxPages {
		q := url.Values{"limit": {fmt.Sprint(PageSize)}}
		if cont != "" {
			q.Set("continue", cont)
		}
		var next string
		decode := func(dec *json.Decoder) (err error) {
			next, err = decodePage(ctx, dec, resource, each)
			return err
		}
		if err := c.read(ctx, apiPath, q, pageShape, decode, "list", resource, ns, ""); err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		if len(next) > MaxContinue {
			return fmt.Errorf("list %s: continue token of %d bytes, longer than %d: %w", resource, len(next), MaxContinue, ErrTooManyPages)
		}
		if seen[next] {
			return fmt.Errorf("list %s: continue token repeats: %w", resource, ErrTooManyPages)
		}
		seen[next] = true
		cont = next
	}
	return fmt.Errorf("list %s: more than %d pages: %w", resource, MaxPages, ErrTooManyPages)
}

// decodePage decodes one list page (an object with metadata.continue and
// items) from dec, one item at a time, calling each for every item, and
// returns the continue token. Other members are skipped. The items of
// every "items" member count against the one PageSize (a page that
// repeats the key is still one page).
func decodePage[T any](ctx context.Context, dec *json.Decoder, resource string, each func(*T)) (string, error) {
	var cont string
	var n int
	if err := expect(dec, '{'); err != nil {
		return "", err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", err
		}
		switch key {
		case "metadata":
			var m struct {
				Continue string `json:"continue"`
			}
			if err := dec.Decode(&m); err != nil {
				return "", err
			}
			cont = m.Continue
		case "items":
			if err := decodeItems(ctx, dec, resource, &n, each); err != nil {
				return "", err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return "", err
			}
		}
	}
	return cont, expect(dec, '}')
}

// decodeItems decodes a page's items array (or null), counting them in
// *n, which may not pass PageSize.
func decodeItems[T any](ctx context.Context, dec *json.Decoder, resource string, n *int, each func(*T)) error {
	tok, err := dec.Token()
	if err != nil || tok == nil {
		return err
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("items is %v, not an array", tok)
	}
	for ; dec.More(); *n++ {
		if *n == PageSize {
			return fmt.Errorf("list %s: a page of more than the %d items asked for: %w", resource, PageSize, ErrPageTooLarge)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		var item T
		if err := dec.Decode(&item); err != nil {
			return err
		}
		each(&item)
	}
	return expect(dec, ']')
}

// expect reads the delimiter d from dec.
func expect(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return fmt.Errorf("got %v, want %v", tok, d)
	}
	return nil
}

// readBounded reads at most max bytes of name, which must be a regular
// file (after symlinks); a longer file is an error. It opens with
// rawfile.Open, which never blocks, so a FIFO or a device named by a
// kubeconfig is an error (rawfile.ErrNotRegular), not an open that waits
// for a writer.
func readBounded(name string, max int64) ([]byte, error) {
	f, err := rawfile.Open(name, false) // the kubelet's ..data layout is symlinks
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is longer than %d bytes", name, max)
	}
	return b, nil
}
