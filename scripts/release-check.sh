#!/usr/bin/env bash
# Check the release machinery without publishing anything (.ci/run calls
# this): lint every GitHub workflow with actionlint, `goreleaser check`
# .goreleaser.yaml, make a snapshot release (--snapshot: no tag needed,
# nothing published, --skip=sign: no keyless signing here) into dist/, and
# check what it made: archive contents, SHA256SUMS, an SBOM per archive, the
# version stamped into the binaries, that two builds of one commit give the
# same bytes, and that the file names docs/install.md tells users to
# download are the ones the build makes. Prints each binary's size and
# fails when one is over its size budget (scripts/release-verify.sh holds
# the budgets; docs/performance.md's size table has the figures).
#
#   scripts/release-check.sh
#
# Targets: by default the snapshot builds the targets CI needs to see,
# linux amd64, arm64 and armv7 and windows amd64 (RELEASE_TARGETS, a
# space-separated list of goreleaser target names); RELEASE_TARGETS=all
# builds the full matrix of .goreleaser.yaml, which is what
# .github/workflows/release.yml always builds (goreleaser release on a tag
# takes no target filter, and the ci.yml job release-config runs this script
# with RELEASE_TARGETS=all). On this 2-core machine, under load, with the
# tools cached: about 5.5 minutes for the default targets (both builds),
# about 14 minutes for all with a cold Go build cache for darwin and riscv64.
#
# Tools: goreleaser, cyclonedx-gomod and actionlint are built once from the
# Go module proxy into $PREFLIGHT_TOOLS_DIR (default
# $HOME/.cache/preflight-tools), one directory per tool and version, and
# reused; goreleaser takes about 5 minutes to build on 2 cores.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

GORELEASER_VERSION=v2.15.1
CYCLONEDX_GOMOD_VERSION=v1.10.0
ACTIONLINT_VERSION=v1.7.12
tools=${PREFLIGHT_TOOLS_DIR:-$HOME/.cache/preflight-tools}
targets=${RELEASE_TARGETS:-linux_amd64_v1 linux_arm64_v8.0 linux_arm_7 windows_amd64_v1}

say() { echo "release-check: $*" >&2; }

# tool NAME PACKAGE VERSION: put NAME at VERSION on PATH, building it into
# the cache first if it is not there yet.
tool() {
	local name=$1 pkg=$2 version=$3
	local dir=$tools/$name-$version
	if [ ! -x "$dir/$name" ]; then
		say "building $name $version into $dir"
		rm -rf "$dir.partial"
		mkdir -p "$dir.partial"
		(cd /tmp && GOBIN=$dir.partial CGO_ENABLED=0 GOFLAGS='' go install "$pkg@$version")
		rm -rf "$dir"
		mv "$dir.partial" "$dir"
	fi
	PATH=$dir:$PATH
}

tool goreleaser github.com/goreleaser/goreleaser/v2 "$GORELEASER_VERSION"
tool cyclonedx-gomod github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod "$CYCLONEDX_GOMOD_VERSION"
tool actionlint github.com/rhysd/actionlint/cmd/actionlint "$ACTIONLINT_VERSION"
export PATH

# actionlint also runs shellcheck over each run: step where shellcheck is
# installed (ci.yml installs nothing: GitHub's runners have it).
say "actionlint $(actionlint -version | head -1) over .github/workflows"
actionlint -no-color
goreleaser check

say "snapshot build of: $targets"
# goreleaser reads the commit only where `git ls-remote --get-url` answers;
# a clone without a remote gets one for this process alone (no config file
# is changed), else the snapshot would carry no commit and no commit time.
if [ -z "$(git remote)" ]; then
	export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url
	export GIT_CONFIG_VALUE_0=https://github.com/preflight-sqlite/preflight.git
fi
[ "$targets" = all ] && targets=
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# In a linked work tree (.git is a file) cyclonedx-gomod's git library
# finds no HEAD: build the committed HEAD from a clone instead, and bring
# its dist/ back.
out=$root/dist
if [ "$(git rev-parse --git-dir)" != "$(git rev-parse --git-common-dir)" ]; then
	say "linked work tree: building the committed HEAD from a clone in $work/src"
	git clone -q --no-checkout "$root" "$work/src"
	git -C "$work/src" checkout -q --detach "$(git rev-parse HEAD)"
	cd "$work/src"
fi
go run ./scripts/release-targets -targets "$targets" -dist dist <.goreleaser.yaml >"$work/snapshot.yaml"
goreleaser release --snapshot --clean --skip=sign --config "$work/snapshot.yaml"
scripts/release-verify.sh dist

# Reproducible: the same commit built again (into dist-again/, the Go build
# cache warm) gives the same archives and SBOMs, so the same SHA256SUMS.
go run ./scripts/release-targets -targets "$targets" -dist dist-again <.goreleaser.yaml >"$work/again.yaml"
goreleaser release --snapshot --clean --skip=sign,before --config "$work/again.yaml" >"$work/again.log" 2>&1 || {
	cat "$work/again.log" >&2
	exit 1
}
if ! diff dist/SHA256SUMS dist-again/SHA256SUMS >&2; then
	say "FAIL: a second build of the same commit differs (above)"
	exit 1
fi
rm -rf dist-again
say "ok: the second build gave the same SHA256SUMS"
if [ "$PWD" != "$root" ]; then
	rm -rf "$out"
	mv dist "$out"
fi
