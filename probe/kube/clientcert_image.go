//go:build nocompose

package kube

import (
	"crypto/tls"
	"errors"
)

// ErrClientCertNotBuilt is returned for a kubeconfig user with a client
// certificate by the image's binary (-tags nocompose): parsing private
// keys and signing the TLS handshake links about 190 KB of RSA and ECDSA
// code, which would take the binary that starts every container past
// 16 MiB. In a pod the service account token is used; on a host, the full
// binary (bin/preflight) reads client certificates.
var ErrClientCertNotBuilt = errors.New("client certificates are read by the full preflight binary only, not the image's: use a token (kubectl create token SERVICEACCOUNT)")

func clientCertificate(_, _ []byte) (tls.Certificate, error) {
	return tls.Certificate{}, ErrClientCertNotBuilt
}
