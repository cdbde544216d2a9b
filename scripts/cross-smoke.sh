#!/usr/bin/env bash
# Cross-platform smoke test, run by .ci/run as root on Debian 12 (amd64).
#
#   scripts/cross-smoke.sh
#
# 1. Builds preflight for windows/amd64, darwin/arm64, linux/arm64 and
#    linux/arm/v7 (`go vet` for windows too).
# 2. Runs the linux/arm64 and linux/arm/v7 binaries under qemu-user
#    (Debian's qemu-user-static, registered with binfmt_misc so that the
#    exec of `run -- CMD` is emulated too): --version; mounts; check
#    --format json of a WAL database that a sqlite3 process holds open,
#    whose writer entry must equal the one the amd64 binary reports; and
#    `run -- exitwith 7`, a static program of the same architecture, whose
#    exit code must pass through.
# 3. Builds the image for linux/amd64, linux/arm64 and linux/arm/v7 from
#    the prebuilt preflight-nocompose binaries (legacy builder, FROM
#    scratch), checks each image's architecture, user and labels, and runs
#    the amd64 one.
#
# Idempotent: what it installs stays (qemu-user-static, binfmt-support,
# jq); what it registers, mounts, builds and tags is removed on exit.
# About two minutes on 2 cores with a warm Go build cache.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
work=$(mktemp -d /tmp/preflight-cross-smoke.XXXXXX)
image=preflight-plat-smoke
registered=()
mounted_binfmt=false
holder=

cleanup() {
	set +e
	[ -n "$holder" ] && { exec 3>&-; wait "$holder"; }
	for e in "${registered[@]}"; do echo -1 >"/proc/sys/fs/binfmt_misc/$e"; done
	$mounted_binfmt && umount /proc/sys/fs/binfmt_misc
	for a in amd64 arm64 armv7; do docker rmi -f "$image:$a" >/dev/null 2>&1; done
	rm -rf "$work"
}
trap cleanup EXIT

fail() {
	echo "cross-smoke: $SECONDS s: FAIL: $*" >&2
	exit 1
}

install_tools() {
	local pkgs=()
	command -v qemu-aarch64-static >/dev/null || pkgs+=(qemu-user-static)
	command -v update-binfmts >/dev/null || pkgs+=(binfmt-support)
	command -v jq >/dev/null || pkgs+=(jq)
	[ ${#pkgs[@]} -eq 0 ] && return
	DEBIAN_FRONTEND=noninteractive apt-get install -y "${pkgs[@]}" >&2 ||
		{ apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y "${pkgs[@]}" >&2; }
}

# register_binfmt makes the kernel run aarch64 and arm ELF files through
# Debian's qemu-user-static (/usr/lib/binfmt.d/qemu-*.conf). qemu-user
# alone does not follow execve, so `preflight run -- CMD` needs this.
register_binfmt() {
	local dir=/proc/sys/fs/binfmt_misc e
	if ! mountpoint -q "$dir"; then
		mount -t binfmt_misc binfmt_misc "$dir"
		mounted_binfmt=true
	fi
	for e in qemu-aarch64 qemu-arm; do
		[ -e "$dir/$e" ] && continue
		cat "/usr/lib/binfmt.d/$e.conf" >"$dir/register"
		registered+=("$e")
	done
}

build() { # GOOS GOARCH GOARM OUT [TAGS]
	GOOS=$1 GOARCH=$2 GOARM=$3 CGO_ENABLED=0 go build -tags "${5:-}" -trimpath \
		-ldflags "-s -w -X main.version=$version" -o "$4" ./cmd/preflight
}

# writer_of prints the writer entry (kind, pid, files, locks) that the
# report in file $1 gives for process $2.
writer_of() {
	jq -c --argjson pid "$2" '[.data_dirs[].databases[]?.writers[]? | select(.pid == $pid)
		| {kind, pid, comm, files, locks}]' "$1"
}

smoke_arch() { # NAME GOARCH GOARM
	local name=$1 bin=$work/preflight-$1 exe=$work/exitwith-$1 out code
	build linux "$2" "$3" "$bin"
	GOOS=linux GOARCH=$2 GOARM=$3 CGO_ENABLED=0 go build -o "$exe" ./internal/testdb/cmd/exitwith
	file -b "$bin" | grep -q "$([ "$2" = arm64 ] && echo aarch64 || echo ARM)" || fail "$bin: $(file -b "$bin")"

	out=$("$bin" --version) || fail "$name --version"
	[ "$out" = "$("$work/preflight-amd64" --version)" ] || fail "$name --version printed $out"
	"$bin" mounts "$work/data" >"$work/mounts-$name.txt" || fail "$name mounts"
	diff -u "$work/mounts-amd64.txt" "$work/mounts-$name.txt" || fail "$name mounts differs from amd64"

	code=0
	"$bin" check --ignore wal-reset-bug --format json "$work/data" >"$work/check-$name.json" || code=$?
	[ "$code" -eq 0 ] || fail "$name check: exit $code"
	[ "$(writer_of "$work/check-$name.json" "$holder")" = "$want" ] ||
		fail "$name check: writer $(writer_of "$work/check-$name.json" "$holder"), want $want"

	code=0
	out=$("$bin" run --data-dir "$work/empty" -- "$exe" 7 2>"$work/run-$name.err") || code=$?
	[ "$code" -eq 7 ] || fail "$name run -- exitwith 7: exit $code: $(cat "$work/run-$name.err")"
	[ "$out" = "exitwith $2 7" ] || fail "$name run -- exitwith 7 printed $out"
	echo "cross-smoke: $SECONDS s: linux/$name: --version, mounts, check (writer $holder found), run -- CMD (exit 7): ok" >&2
}

image_arch() { # NAME PLATFORM GOARCH GOARM
	local ctx=$work/ctx-$1 arch
	mkdir -p "$ctx/bin" "$ctx/rootfs/tmp"
	build linux "$3" "$4" "$ctx/bin/preflight-nocompose" nocompose
	cp entrypoint.sh "$ctx/entrypoint.sh"
	# --no-cache: the legacy builder's cache of FROM scratch steps does not
	# key on the platform (an arm64 build would reuse amd64 layers).
	DOCKER_BUILDKIT=0 docker build -q --no-cache --platform "$2" -f Dockerfile -t "$image:$1" \
		--build-arg VERSION="$version" --build-arg REVISION="$revision" "$ctx" \
		>/dev/null 2>"$work/build-$1.err" || fail "docker build $2: $(cat "$work/build-$1.err")"
	arch=$(docker image inspect -f '{{.Os}}/{{.Architecture}}{{with .Variant}}/{{.}}{{end}}' "$image:$1")
	[ "$arch" = "$2" ] || [ "$arch/v7" = "$2" ] || fail "image $1: platform $arch, want $2"
	[ "$(docker image inspect -f '{{.Config.User}}' "$image:$1")" = 65532:65532 ] || fail "image $1: user"
	docker image inspect -f '{{json .Config.Labels}}' "$image:$1" | jq -e --arg v "$version" --arg r "$revision" '
		.["org.opencontainers.image.source"] == "https://github.com/preflight-sqlite/preflight" and
		.["org.opencontainers.image.version"] == $v and .["org.opencontainers.image.revision"] == $r and
		(.["org.opencontainers.image.licenses"] == "Apache-2.0") and
		(.["org.opencontainers.image.description"] | length > 0)' >/dev/null || fail "image $1: labels"
	echo "cross-smoke: $SECONDS s: image $1 ($arch): ok" >&2
}

install_tools
version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)

GOOS=windows go vet ./...
build windows amd64 "" "$work/preflight.exe"
build darwin arm64 "" "$work/preflight-darwin"
echo "cross-smoke: $SECONDS s: windows/amd64 (vet, build), darwin/arm64 (build): ok" >&2

register_binfmt
mkdir -p "$work/data" "$work/empty"
# Debian's sqlite3 (3.40.1) has the WAL-reset bug, so each check ignores
# wal-reset-bug: the warning is right, and not what is tested here.
sqlite3 "$work/data/app.db" 'pragma journal_mode=wal; create table t(a); insert into t values (1);' >/dev/null
mkfifo "$work/sql"
sqlite3 "$work/data/app.db" <"$work/sql" >/dev/null &
holder=$!
exec 3>"$work/sql"
echo 'select count(*) from t;' >&3
build linux amd64 "" "$work/preflight-amd64"
"$work/preflight-amd64" mounts "$work/data" >"$work/mounts-amd64.txt"
"$work/preflight-amd64" check --ignore wal-reset-bug --format json "$work/data" >"$work/check-amd64.json"
want=$(writer_of "$work/check-amd64.json" "$holder")
[ "$want" != "[]" ] || fail "amd64 check: writer $holder not found"
smoke_arch arm64 arm64 ""
smoke_arch armv7 arm 7

image_arch amd64 linux/amd64 amd64 ""
image_arch arm64 linux/arm64 arm64 ""
image_arch armv7 linux/arm/v7 arm 7
docker run --rm "$image:amd64" --version | grep -qx "preflight $version" || fail "image amd64: --version"
docker run --rm "$image:amd64" mounts >/dev/null || fail "image amd64: mounts"
echo "cross-smoke: $SECONDS s: ok" >&2
