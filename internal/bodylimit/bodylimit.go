// Package bodylimit bounds what a peer's HTTP response body can make us
// read: the Docker Engine API and the Kubernetes API are answered by
// whoever owns the socket or the server, so every body is read through a
// ReadCloser that fails once it has given its bound.
package bodylimit

import "io"

// ReadCloser reads at most its bound of an underlying body. A read past
// the bound returns the Err it was made with (wrap it for the caller to
// match with errors.Is), so a JSON decoder fails instead of seeing a
// silently truncated body; a body of exactly the bound reads in full.
type ReadCloser struct {
	rc   io.ReadCloser
	left int64
	err  error
}

// New returns rc bounded to max bytes; err is returned by the first read
// that finds more.
func New(rc io.ReadCloser, max int64, err error) *ReadCloser {
	return &ReadCloser{rc: rc, left: max, err: err}
}

func (b *ReadCloser) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the bound from a longer one.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, b.err
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

// Close closes the underlying body.
func (b *ReadCloser) Close() error { return b.rc.Close() }
