#!/usr/bin/env bash
# The GitHub Action's logic (action.yml runs it): download the preflight
# release archive for this runner's OS and architecture, verify it against
# the release's SHA256SUMS, run preflight with --format sarif, and write the
# SARIF log and the verdict.
#
# Inputs (environment):
#   INPUT_VERSION    release to use: 1.2.3, v1.2.3, or latest; default the
#                    release the Action is used at (action_version)
#   PREFLIGHT_ACTION_REF, GITHUB_ACTION_REF, GITHUB_ACTION_PATH  the ref the
#                    Action is used at (uses: preflight-sqlite/preflight@REF),
#                    in this order (action.yml sets the first: a composite
#                    action's steps may see GITHUB_ACTION_REF empty)
#   INPUT_ARGS       preflight arguments, split into words as xargs(1)
#                    does: on spaces, tabs and line breaks, with '...',
#                    "..." and backslash quoting, nothing expanded; an
#                    unmatched quote is an error (default, also for an
#                    input of only whitespace: compose --check)
#   INPUT_SARIF_FILE where to write the SARIF log (default: preflight.sarif)
#   INPUT_FAIL       true (default): exit with preflight's code on findings
#                    (3 unsafe, 4 warnings with --fail-on warn); false: exit 0
#                    and leave the verdict to the outputs. Exit codes 1 and 2
#                    (preflight could not run, bad usage) always fail.
#   PREFLIGHT_BASE_URL where the release's files are: a URL (https://,
#                    file://) or a local directory; default the GitHub release
#                    of the tag v$VERSION.
#   RUNNER_OS, RUNNER_ARCH  set by GitHub (Linux, macOS, Windows; X64, ARM64);
#                    uname is asked when they are unset.
#   GITHUB_OUTPUT    file the outputs are appended to (verdict, exit-code,
#                    sarif-file, version); skipped when unset.
set -euo pipefail

# Release file names, as the release configuration (goreleaser) writes
# them: VERSION without the leading v, OS linux/darwin/windows, ARCH
# amd64/arm64; .tar.gz, .zip on windows.
# shellcheck disable=SC2016 # expanded in install, once OS and ARCH are known
ARCHIVE_NAME='preflight_${VERSION}_${OS}_${ARCH}'
CHECKSUMS_NAME='SHA256SUMS'
REPO_URL='https://github.com/preflight-sqlite/preflight'

say() { echo "preflight-action: $*" >&2; }
die() {
	echo "preflight-action: error: $*" >&2
	exit 1
}

# runner_os and runner_arch print this runner's goreleaser OS and ARCH.
runner_os() {
	case "${RUNNER_OS:-$(uname -s)}" in
	Linux) echo linux ;;
	macOS | Darwin) echo darwin ;;
	Windows | MINGW* | MSYS* | CYGWIN*) echo windows ;;
	*) die "unsupported runner OS ${RUNNER_OS:-$(uname -s)}" ;;
	esac
}

runner_arch() {
	case "${RUNNER_ARCH:-$(uname -m)}" in
	X64 | x86_64 | amd64) echo amd64 ;;
	ARM64 | aarch64 | arm64) echo arm64 ;;
	*) die "unsupported runner architecture ${RUNNER_ARCH:-$(uname -m)}" ;;
	esac
}

# latest_version prints the tag of the newest release (without the v),
# from the redirect of $REPO_URL/releases/latest.
latest_version() {
	local loc
	loc=$(curl -fsSI --retry 3 "$REPO_URL/releases/latest" | tr -d '\r' | sed -n 's/^[Ll]ocation: *//p' | tail -n 1)
	case "$loc" in
	*/releases/tag/v*) echo "${loc##*/releases/tag/v}" ;;
	*) die "could not find the latest release at $REPO_URL/releases/latest (got '${loc}'); set the version input" ;;
	esac
}

# fetch copies file $1 from $BASE to $2: BASE is a URL or a directory.
fetch() {
	case "$BASE" in
	https://*) curl -fsSL --proto-redir =https --retry 3 -o "$2" "$BASE/$1" || die "download $BASE/$1 failed" ;;
	*://*) curl -fsSL --retry 3 -o "$2" "$BASE/$1" || die "download $BASE/$1 failed" ;;
	*) cp "$BASE/$1" "$2" || die "copy $BASE/$1 failed" ;;
	esac
}

sha256() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d' ' -f1
	else
		shasum -a 256 "$1" | cut -d' ' -f1
	fi
}

# verify checks archive $1 (named $2) against the checksums file $3: it
# must be listed exactly once, with the archive's SHA-256.
verify() {
	local want got lines
	lines=$(awk -v n="$2" '$2 == n || $2 == "*" n' "$3")
	[ -n "$lines" ] || die "$2 is not listed in $CHECKSUMS_NAME"
	[ "$(printf '%s\n' "$lines" | wc -l | tr -d ' ')" = 1 ] || die "$2 is listed more than once in $CHECKSUMS_NAME"
	want=$(printf '%s\n' "$lines" | awk '{print tolower($1)}')
	got=$(sha256 "$1")
	[ "$want" = "$got" ] || die "checksum mismatch for $2: $CHECKSUMS_NAME says $want, the download is $got"
	say "verified $2 (sha256 $got)"
}

# install downloads, verifies and unpacks the release into $1 and prints
# the binary's path.
install() {
	local dir=$1 archive
	OS=$(runner_os)
	# shellcheck disable=SC2034 # used by ARCHIVE_NAME
	ARCH=$(runner_arch)
	archive=$(eval "echo \"$ARCHIVE_NAME\"")
	if [ "$OS" = windows ]; then archive+=.zip; else archive+=.tar.gz; fi
	fetch "$CHECKSUMS_NAME" "$dir/$CHECKSUMS_NAME"
	fetch "$archive" "$dir/$archive"
	verify "$dir/$archive" "$archive" "$dir/$CHECKSUMS_NAME"
	mkdir -p "$dir/x"
	case "$archive" in
	*.zip) if command -v unzip >/dev/null 2>&1; then unzip -q "$dir/$archive" -d "$dir/x"; else tar -xf "$dir/$archive" -C "$dir/x"; fi ;;
	*) tar -xzf "$dir/$archive" -C "$dir/x" ;;
	esac
	local bin="$dir/x/preflight"
	[ "$OS" = windows ] && bin+=.exe
	[ -f "$bin" ] || die "$archive has no preflight binary at its top level"
	chmod +x "$bin"
	echo "$bin"
}

# verdict_of prints the verdict recorded in SARIF log $1 (ok, warn,
# unsafe), or unknown.
verdict_of() {
	local v
	v=$(sed -n 's/.*"verdict": *"\([a-z]*\)".*/\1/p' "$1" 2>/dev/null | head -n 1)
	echo "${v:-unknown}"
}

# split_args writes the words of input $1 to file $2, one a line (xargs
# ends a quote at a line break, so no word holds one): the default
# compose --check when $1 is only whitespace.
split_args() {
	local input=$1
	case "$input" in
	*[![:space:]]*) ;;
	*) input='compose --check' ;;
	esac
	printf '%s\n' "$input" | xargs printf '%s\n' >"$2" 2>"$2.err" ||
		die "args: $(sed 's/^xargs: //' "$2.err" | head -n 1) (the input is split like shell words: quote with '...' or \"...\", and close every quote)"
}

# action_version prints the release the Action is used at: v1.2.3 (or
# v1.2.0-rc.1) as the ref runs 1.2.3; any other ref (a branch, a commit, a
# major tag such as v1) runs latest, and says so.
action_version() {
	local ref=${PREFLIGHT_ACTION_REF:-${GITHUB_ACTION_REF:-}}
	if [ -z "$ref" ]; then
		case "${GITHUB_ACTION_PATH:-}" in
		*/_actions/*/*/*)
			ref=${GITHUB_ACTION_PATH%/}
			ref=${ref##*/}
			;;
		esac
	fi
	if [[ $ref =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
		say "version: ${ref#v}, the release the Action is used at (@$ref)"
		echo "${ref#v}"
		return
	fi
	say "version: latest, since the Action's ref '${ref:-unknown}' is not a release tag (use preflight-sqlite/preflight@vX.Y.Z, or set the version input, to pin one)"
	echo latest
}

main() {
	VERSION=${INPUT_VERSION:-$(action_version)}
	VERSION=${VERSION#v}
	if [ "$VERSION" = latest ]; then VERSION=$(latest_version); fi
	case "$VERSION" in
	'' | *[!0-9A-Za-z.+-]*) die "version '$VERSION': want a release such as 1.2.3 or v1.2.3" ;;
	esac
	BASE=${PREFLIGHT_BASE_URL:-$REPO_URL/releases/download/v$VERSION}
	BASE=${BASE%/}
	local sarif=${INPUT_SARIF_FILE:-preflight.sarif} bin code=0
	# A line break would write outputs of its own to GITHUB_OUTPUT.
	case "$sarif" in
	*$'\n'* | *$'\r'*) die "sarif-file '$sarif': a line break in a file name is refused" ;;
	esac
	WORK=$(mktemp -d)
	trap 'rm -rf "$WORK"' EXIT
	local -a args
	local a
	split_args "${INPUT_ARGS:-}" "$WORK/args"
	while IFS= read -r a; do args+=("$a"); done <"$WORK/args"
	bin=$(install "$WORK")
	say "running preflight $VERSION: preflight$(printf ' %q' "${args[@]}") --format sarif > $sarif"
	"$bin" "${args[@]}" --format sarif >"$sarif" || code=$?
	local verdict
	verdict=$(verdict_of "$sarif")
	say "verdict: $verdict (exit $code); SARIF in $sarif"
	if [ -n "${GITHUB_OUTPUT:-}" ]; then
		{
			echo "verdict=$verdict"
			echo "exit-code=$code"
			echo "sarif-file=$sarif"
			echo "version=$VERSION"
		} >>"$GITHUB_OUTPUT"
	fi
	case "$code" in
	0) return 0 ;;
	3 | 4) if [ "${INPUT_FAIL:-true}" = true ]; then return "$code"; fi ;;
	*) return "$code" ;;
	esac
}

main "$@"
