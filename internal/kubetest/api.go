package kubetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// APIError is a request the API server answered with a status other than
// 2xx. Reason and Message come from the metav1.Status body the server
// sends with it (empty when the body was not one).
type APIError struct {
	Method string // GET, POST, PATCH, DELETE
	Path   string // the request path and query, e.g. /api/v1/namespaces/a/pods
	Code   int    // the HTTP status code, e.g. 403
	// Reason is the Status reason: Forbidden, NotFound, AlreadyExists,
	// Conflict, Invalid, Unauthorized, ...
	Reason string
	// Message is the server's text, e.g. `pods is forbidden: User
	// "system:serviceaccount:a:reader" cannot list resource "pods" in API
	// group "" in the namespace "a"`.
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.Path, e.Code, e.Reason, e.Message)
}

// do sends one request with token as bearer (none when empty) and body as
// JSON (nil: no body; []byte: sent as is), and decodes a 2xx answer into
// out (unless nil). Other answers are *APIError; the body read is bounded
// by maxBody.
func (c *Cluster) do(method, path, token, contentType string, body, out any) error {
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		r = bytes.NewReader(data)
	}
	ctx, cancel := c.ctx()
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, r)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if r != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		e := &APIError{Method: method, Path: path, Code: resp.StatusCode}
		var status struct{ Reason, Message string }
		if json.Unmarshal(data, &status) == nil {
			e.Reason, e.Message = status.Reason, status.Message
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode: %w", method, path, err)
	}
	return nil
}

// Get sends GET path (e.g. "/api/v1/namespaces/a/pods?limit=10") with
// token as the bearer (c.AdminToken for everything; "" for anonymous) and
// decodes the JSON answer into out (a pointer; nil to discard it). A
// status other than 2xx is an *APIError.
func (c *Cluster) Get(path, token string, out any) error {
	return c.do(http.MethodGet, path, token, "", nil, out)
}

// PatchPodPhase sets status.phase of pod ns/name (e.g. "Pending",
// "Running", "Succeeded", "Failed") through the status subresource, as
// the kubelet would (a JSON merge patch as admin). No kubelet runs, so
// the phase stays as set. Errors are *APIError (NotFound for a pod that is
// not there) or transport errors.
func (c *Cluster) PatchPodPhase(ns, name, phase string) error {
	path := "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods/" + url.PathEscape(name) + "/status"
	patch := map[string]any{"status": map[string]any{"phase": phase}}
	return c.do(http.MethodPatch, path, c.AdminToken, "application/merge-patch+json", patch, nil)
}

// Token returns a bearer token of ServiceAccount ns/serviceAccount made
// with the TokenRequest API (valid one hour, audience the API server), as
// the kubelet projects into a pod at
// /var/run/secrets/kubernetes.io/serviceaccount/token. The ServiceAccount
// must exist (create it with Apply): else an *APIError NotFound. Requests
// with the token are authorized by RBAC as
// system:serviceaccount:NS:NAME.
func (c *Cluster) Token(ns, serviceAccount string) (string, error) {
	path := "/api/v1/namespaces/" + url.PathEscape(ns) + "/serviceaccounts/" + url.PathEscape(serviceAccount) + "/token"
	req := map[string]any{
		"apiVersion": "authentication.k8s.io/v1",
		"kind":       "TokenRequest",
		"spec":       map[string]any{"expirationSeconds": 3600},
	}
	var resp struct {
		Status struct {
			Token string `json:"token"`
		} `json:"status"`
	}
	if err := c.do(http.MethodPost, path, c.AdminToken, "application/json", req, &resp); err != nil {
		return "", err
	}
	if resp.Status.Token == "" {
		return "", fmt.Errorf("POST %s: no token in the answer", path)
	}
	return resp.Status.Token, nil
}

// Response is an answer Send read: its status, Warning headers (the
// admission warnings kubectl prints as "Warning: ...") and body (at most
// maxBody bytes).
type Response struct {
	Status   int
	Warnings []string
	Body     []byte
}

// Send sends one request as admin, with body of contentType (none when
// body is nil), and returns the answer whatever its status; errors are
// transport errors.
func (c *Cluster) Send(method, path, contentType string, body []byte) (*Response, error) {
	ctx, cancel := c.ctx()
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+c.AdminToken)
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	return &Response{Status: resp.StatusCode, Warnings: resp.Header.Values("Warning"), Body: b}, nil
}
