// Command kubectl is the Kubernetes command-line client v1.37.2, built from
// the module proxy so that tests run the kubectl lines preflight prints, as
// printed, against the real API server. scripts/kube-tools.sh builds it.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
