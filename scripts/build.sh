#!/usr/bin/env bash
# Build the static binaries into OUTDIR (default ./bin): preflight (every
# command), preflight-nocompose (the same without `preflight compose`, for
# images: it leaves out compose-go's loader, whose JSON-schema package init
# costs about 5 ms at every container start), the example demoapp and the
# fuseloop test helper.
#
#   scripts/build.sh [OUTDIR]
#
# VERSION (default: git describe, else "dev") is stamped into preflight.
# GOOS/GOARCH pass through to go build.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-bin}
case $out in /*) ;; *) out=$PWD/$out ;; esac
version=${VERSION:-$(git -C "$root" describe --tags --always --dirty 2>/dev/null || echo dev)}

mkdir -p "$out"
cd "$root"
export CGO_ENABLED=0
go build -trimpath -ldflags "-s -w -X main.version=$version" -o "$out/preflight" ./cmd/preflight
go build -tags nocompose -trimpath -ldflags "-s -w -X main.version=$version" -o "$out/preflight-nocompose" ./cmd/preflight
go build -trimpath -ldflags "-s -w" -o "$out/demoapp" ./examples/demoapp
go build -trimpath -ldflags "-s -w" -o "$out/fuseloop" ./internal/fuseloop/cmd/fuseloop
echo "build: preflight $version, preflight-nocompose, demoapp, fuseloop in $out" >&2
