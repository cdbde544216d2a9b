// Command etcd is the etcd 3.7 server the Kubernetes API server of
// ../kube-apiserver stores its objects in, built from the module proxy.
// scripts/kube-tools.sh builds it.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
