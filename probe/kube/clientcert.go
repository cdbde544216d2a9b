package kube

import "crypto/tls"

// clientCertificate parses a kubeconfig's PEM client certificate and key.
func clientCertificate(certPEM, keyPEM []byte) (tls.Certificate, error) {
	return tls.X509KeyPair(certPEM, keyPEM)
}
