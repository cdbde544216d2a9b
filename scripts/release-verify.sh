#!/usr/bin/env bash
# Check a goreleaser dist directory (scripts/release-check.sh runs it on the
# snapshot build; on a real release's dist it checks the same things):
#   - SHA256SUMS lists every archive and SBOM, and each sum matches
#   - each archive holds LICENSE, README.md, entrypoint.sh (executable),
#     the man pages (man/man1/preflight.1, preflight-check.1, ...; each
#     tar.gz's preflight-check.1 renders with man -l when man is here) and
#     preflight (preflight.exe), and on Linux preflight-nocompose; each has
#     its CycloneDX SBOM
#     (ARCHIVE.cdx.json) naming the Go standard library it was built with
#   - every binary is static (no ELF interpreter), its mtime is the
#     commit time (mod_timestamp: reproducible archives), and it is within
#     its size budget (budgets, below)
#   - the host's binaries report the build's version; the image binary has
#     no compose command
#   - every release file name docs/install.md mentions is one this build
#     made (with the version put in)
# Prints each binary's size with its budget.
#
#   scripts/release-verify.sh [DIST]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dist=${1:-$root/dist}
fail=0
say() { echo "release-verify: $*" >&2; }
bad() {
	echo "release-verify: FAIL: $*" >&2
	fail=1
}

# Size budgets of the stripped binaries, in bytes, one per line: BINARY
# GOOS/GOARCH BYTES; the first line whose binary and platform match
# applies (* is any platform). docs/performance.md's size table has each target's
# figure. The image's binary (preflight-nocompose) has 16 MiB on every
# architecture and, on linux/amd64, 300,000 bytes over the 15,696,034 it
# had before SARIF, so that the in-pod Kubernetes probe still fits. The
# full binary has 16 MiB on Linux (met since the command line is parsed
# by cobra instead of kong, whose method lookups kept every exported
# method) and 17 MiB on macOS and Windows since recover, audit, locks,
# bundle and kube policy/audit landed (their binaries are 140 to 330 KB
# larger than linux/amd64's for the same code; most of those commands
# need Linux there and say so).
budgets='
preflight-nocompose linux/amd64 15996034
preflight-nocompose * 16777216
preflight.exe windows/amd64 17825792
preflight darwin/amd64 17825792
preflight darwin/arm64 17825792
preflight * 16777216
'

# budget BINARY GOOS/GOARCH: prints the budget in bytes, or nothing when
# no line matches.
budget() {
	local name platform bytes
	while read -r name platform bytes; do
		if [ "$name" = "$1" ] && { [ "$platform" = "*" ] || [ "$platform" = "$2" ]; }; then
			echo "$bytes"
			return
		fi
	done <<<"$budgets"
}

# check_binaries: every binary of the build is static, stamped with the
# commit time and within its size budget; prints the size table (target,
# binary, bytes, MiB, budget).
check_binaries() {
	local commit_time path goos goarch target size name limit
	commit_time=$(git -C "$root" log -1 --format=%ct HEAD)
	printf '%-28s %-20s %12s %7s %12s\n' target binary bytes MiB budget >&2
	while IFS=$'\t' read -r path goos goarch target; do
		path=$root/$path
		name=$(basename "$path")
		size=$(stat -c %s "$path")
		limit=$(budget "$name" "$goos/$goarch")
		printf '%-28s %-20s %12d %7.2f %12s\n' "$target" "$name" "$size" "$(echo "$size / 1048576" | bc -l)" "${limit:--}" >&2
		if [ -z "$limit" ]; then
			bad "$path: no size budget for $name on $goos/$goarch"
		elif [ "$size" -gt "$limit" ]; then
			bad "$path: $size bytes, over its budget of $limit ($((size - limit)) bytes over)"
		fi
		[ "$(stat -c %Y "$path")" = "$commit_time" ] || bad "$path: mtime is not the commit time"
		if [ "$goos" = linux ] && readelf -l "$path" | grep -q 'program interpreter'; then
			bad "$path: dynamically linked"
		fi
	done < <(jq -r '.[] | select(.type == "Binary") | [.path, .goos, .goarch, .target] | @tsv' "$dist/artifacts.json")
}

# check_host_binaries: the linux/amd64 binaries (on such a host) report the
# version, and the image binary refuses compose.
check_host_binaries() {
	local dir got code=0
	[ "$(uname -s)/$(uname -m)" = Linux/x86_64 ] || return 0
	for dir in "$dist"/preflight_linux_amd64_v1 "$dist"/preflight-nocompose_linux_amd64_v1; do
		[ -d "$dir" ] || {
			bad "no $dir"
			return
		}
	done
	got=$("$dist/preflight_linux_amd64_v1/preflight" --version)
	[ "$got" = "preflight v$version" ] || bad "preflight --version = $got, want preflight v$version"
	got=$("$dist/preflight-nocompose_linux_amd64_v1/preflight-nocompose" --version)
	[ "$got" = "preflight v$version" ] || bad "preflight-nocompose --version = $got, want preflight v$version"
	"$dist/preflight-nocompose_linux_amd64_v1/preflight-nocompose" compose 2>"$dist/nocompose.err" || code=$?
	if [ "$code" != 1 ] || ! grep -q "without compose support" "$dist/nocompose.err"; then
		bad "preflight-nocompose compose: exit $code, $(cat "$dist/nocompose.err")"
	fi
	rm -f "$dist/nocompose.err"
}

# check_docs: the archive, SBOM and checksum names docs/install.md tells a
# user to download are made by this build (${VERSION} put in). Archives of
# targets the snapshot left out are skipped.
check_docs() {
	local ref file target
	while read -r ref; do
		file=${ref//"\${VERSION}"/$version}
		target=${file#preflight_"$version"_}
		target=${target%%.*}
		case $file in
		preflight_*) ls "$dist"/preflight_"$version"_"${target%%_*}"_* >/dev/null 2>&1 || continue ;;
		esac
		[ -e "$dist/$file" ] || bad "docs/install.md names $ref, the build made no $file"
	done < <(grep -oE 'preflight_\$\{VERSION\}_[a-z0-9_]+\.(tar\.gz|zip)(\.cdx\.json)?|SHA256SUMS\b' "$root/docs/install.md" | grep -v '\.sigstore' | sort -u)
}

version=$(jq -r .version "$dist/metadata.json")
if [ -z "$version" ] || [ "$version" = null ]; then
	bad "no version in $dist/metadata.json"
	exit 1
fi
say "version $version"

(cd "$dist" && sha256sum --quiet -c SHA256SUMS) || bad "SHA256SUMS does not match"

archives=()
for a in "$dist"/*.tar.gz "$dist"/*.zip; do
	[ -e "$a" ] && archives+=("$a")
done
[ ${#archives[@]} -gt 0 ] || bad "no archives in $dist"
for a in "${archives[@]}"; do
	name=$(basename "$a")
	grep -q "  $name\$" "$dist/SHA256SUMS" || bad "$name: not in SHA256SUMS"
	grep -q "  $name.cdx.json\$" "$dist/SHA256SUMS" || bad "$name.cdx.json: not in SHA256SUMS"
	sbom=$a.cdx.json
	if [ "$(jq -r .bomFormat "$sbom" 2>/dev/null)" != CycloneDX ]; then
		bad "$name: no CycloneDX SBOM at $sbom"
	elif ! jq -e '[.components[]? | select(.name == "std")] | length == 1' "$sbom" >/dev/null; then
		bad "$name: SBOM names no Go standard library (std)"
	fi
	case $a in
	*.zip) list=$(unzip -Z1 "$a") mode=$(unzip -Z "$a" entrypoint.sh 2>/dev/null | awk '{print $1}') ;;
	*) list=$(tar -tzf "$a") mode=$(tar -tvzf "$a" entrypoint.sh 2>/dev/null | awk '{print $1}') ;;
	esac
	want="LICENSE README.md entrypoint.sh preflight"
	case $name in
	*_windows_*) want="LICENSE README.md entrypoint.sh preflight.exe" ;;
	*_linux_*) want="LICENSE README.md entrypoint.sh preflight preflight-nocompose" ;;
	esac
	want="$want man/man1/preflight.1 man/man1/preflight-check.1 man/man1/preflight-run.1"
	case $a in
	*.tar.gz)
		if command -v man >/dev/null; then
			page=$(tar -xzOf "$a" man/man1/preflight-check.1 2>/dev/null | MANWIDTH=100 man -l - 2>/dev/null | sed 's/.\x08//g') || true
			grep -q 'preflight check \[PATH\]' <<<"$page" || bad "$name: man/man1/preflight-check.1 does not render with man -l"
			grep -q "preflight v$version" <<<"$page" || bad "$name: man/man1/preflight-check.1 does not name version v$version"
		fi
		;;
	esac
	for f in $want; do
		grep -qx "$f" <<<"$list" || bad "$name: no $f (has: ${list//$'\n'/ })"
	done
	case $mode in
	-rwxr-xr-x) ;;
	*) bad "$name: entrypoint.sh has mode '${mode}', want -rwxr-xr-x" ;;
	esac
done

check_binaries
check_host_binaries
check_docs
[ "$fail" -eq 0 ] || exit 1
say "ok: ${#archives[@]} archives"
