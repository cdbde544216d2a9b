#!/usr/bin/env bash
# Build the real Kubernetes API server, its etcd and kubectl for the tests
# that need them (internal/kubetest; kubectl runs the `kubectl patch` lines
# preflight prints, as printed), once, into a cache kept between runs:
#
#   scripts/kube-tools.sh        # prints the directory holding the binaries
#
# Versions are pinned by tools/kube/go.mod and go.sum (a module of its own:
# k8s.io/kubernetes needs replace lines for its staging modules, which must
# never enter the main go.mod, where they would break `go install`):
# kube-apiserver and kubectl v1.37.2 and etcd v3.7.0, built with
# CGO_ENABLED=0 into $PREFLIGHT_TOOLS_DIR/kube-v1.37.2 (default
# ~/.cache/preflight-tools). When all three are there it only prints the
# directory (well under a second). Each binary is built to NAME.partial and
# renamed when made, so an interrupted build never leaves a half binary and
# the next run builds only what is missing; a lock (flock on DIR.lock)
# makes a second caller wait for the first instead of building twice. On 2
# cores the build takes about 8 minutes for kube-apiserver when the machine
# is idle (38 minutes were measured under a load average near 20), a few
# more for kubectl (most of its packages are kube-apiserver's) and under a
# minute for etcd.
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

cached() { [ -x "$dir/kube-apiserver" ] && [ -x "$dir/etcd" ] && [ -x "$dir/kubectl" ]; }

# build NAME [LDFLAGS]: one binary of tools/kube into $dir, through
# NAME.partial, so an interrupted build leaves no half binary.
build() {
	(
		cd "$root/tools/kube"
		export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"
		go build -trimpath -ldflags "${2:-}" -o "$dir/$1.partial" "./$1"
	)
	mv "$dir/$1.partial" "$dir/$1"
}

if ! cached; then
	mkdir -p "$tools"
	exec 9>"$dir.lock"
	flock 9
	if ! cached; then
		say "building the missing ones of kube-apiserver $KUBE_VERSION, etcd and kubectl into $dir (kube-apiserver: 8 to 40 minutes on 2 cores; kubectl: 3 to 10 more)"
		start=$(date +%s)
		mkdir -p "$dir"
		[ -x "$dir/etcd" ] || build etcd
		# Stamp the version as the release build does (else /version
		# and --version say v0.0.0-master).
		v=k8s.io/component-base/version
		stamp="-X $v.gitVersion=$KUBE_VERSION -X $v.gitMajor=1 -X $v.gitMinor=37 -X $v.gitTreeState=clean"
		[ -x "$dir/kube-apiserver" ] || build kube-apiserver "$stamp"
		[ -x "$dir/kubectl" ] || build kubectl "$stamp"
		say "built in $(($(date +%s) - start)) s"
	fi
fi
"$dir/kube-apiserver" --version >&2
"$dir/etcd" --version | sed -n 1p >&2
"$dir/kubectl" version --client 2>/dev/null | sed -n 1p >&2
echo "$dir"
