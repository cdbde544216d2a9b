// Command kube-apiserver is the Kubernetes API server v1.37.2, built from
// the module proxy for the tests that need a real API server
// (internal/kubetest). scripts/kube-tools.sh builds it.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
