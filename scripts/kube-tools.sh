#!/usr/bin/env bash
# Build the real Kubernetes API server and its etcd for the tests that need
# them (internal/kubetest), once, into a cache kept between runs:
#
#   scripts/kube-tools.sh        # prints the directory holding both binaries
#
# Versions are pinned by tools/kube/go.mod and go.sum (a module of its own:
# k8s.io/kubernetes needs replace lines for its staging modules, which must
# never enter the main go.mod, where they would break `go install`):
# kube-apiserver v1.37.2 and etcd v3.7.0, built with CGO_ENABLED=0 into
# $PREFLIGHT_TOOLS_DIR/kube-v1.37.2 (default ~/.cache/preflight-tools).
# When both binaries are there it only prints the directory (well under a
# second). A build goes to DIR.partial first and is renamed when both
# binaries are made, so an interrupted build never leaves a half cache;
# a lock (flock on DIR.lock) makes a second caller wait for the first
# instead of building twice. On 2 cores the build takes about 8 minutes
# for kube-apiserver when the machine is idle (38 minutes were measured
# under a load average near 20) and under a minute for etcd.
#
# Tests find the binaries through PREFLIGHT_KUBE_BIN or this same default
# directory (internal/kubetest).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
KUBE_VERSION=v1.37.2
tools=${PREFLIGHT_TOOLS_DIR:-$HOME/.cache/preflight-tools}
dir=$tools/kube-$KUBE_VERSION

say() { echo "kube-tools: $*" >&2; }

grep -q "k8s.io/kubernetes $KUBE_VERSION\$" "$root/tools/kube/go.mod" || {
	say "tools/kube/go.mod does not require k8s.io/kubernetes $KUBE_VERSION: change both together"
	exit 1
}

cached() { [ -x "$dir/kube-apiserver" ] && [ -x "$dir/etcd" ]; }

if ! cached; then
	mkdir -p "$tools"
	exec 9>"$dir.lock"
	flock 9
	if ! cached; then
		say "building kube-apiserver $KUBE_VERSION and etcd into $dir (8 to 40 minutes on 2 cores)"
		start=$(date +%s)
		rm -rf "$dir.partial"
		mkdir -p "$dir.partial"
		(
			cd "$root/tools/kube"
			export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"
			go build -trimpath -o "$dir.partial/etcd" ./etcd
			# Stamp the version as the release build does (else /version
			# and --version say v0.0.0-master).
			v=k8s.io/component-base/version
			go build -trimpath -ldflags "-X $v.gitVersion=$KUBE_VERSION -X $v.gitMajor=1 -X $v.gitMinor=37 -X $v.gitTreeState=clean" \
				-o "$dir.partial/kube-apiserver" ./kube-apiserver
		)
		rm -rf "$dir"
		mv "$dir.partial" "$dir"
		say "built in $(($(date +%s) - start)) s"
	fi
fi
"$dir/kube-apiserver" --version >&2
"$dir/etcd" --version | sed -n 1p >&2
echo "$dir"
