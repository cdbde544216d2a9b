#!/usr/bin/env bash
# Builds the docs site (mkdocs.yml, docs/) into $1 (default site/) with
# mkdocs build --strict, which fails on a broken link, and fails too when
# a page under docs/ is not in the nav (mkdocs 1.4 only logs that). On a
# Debian machine without mkdocs it installs Debian's mkdocs and
# mkdocs-material first (needs root); elsewhere (the Pages workflow) mkdocs
# must already be on PATH. The generated reference pages are checked by
# go test ./cmd/preflight -run TestDocs, not here.
#
#   scripts/docs.sh [SITE_DIR]
set -euo pipefail

cd "$(dirname "$0")/.."
site=${1:-site}

install() {
	echo "docs: installing mkdocs mkdocs-material" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq mkdocs mkdocs-material >/dev/null
}
command -v mkdocs >/dev/null 2>&1 || install

log=$(mktemp)
trap 'rm -f "$log"' EXIT
build() { mkdocs build --strict --site-dir "$site" >"$log" 2>&1; }
status=0
build || status=$?
if [ "$status" != 0 ] && grep -q "Unrecognised theme name: 'material'" "$log"; then
	install
	status=0
	build || status=$?
fi
if [ "$status" != 0 ]; then
	cat "$log" >&2
	echo "docs: error: mkdocs build --strict failed" >&2
	exit 1
fi
if grep -q 'exist in the docs directory, but are not included in the "nav"' "$log"; then
	sed -n '/but are not included in the "nav"/,/^INFO/p' "$log" >&2
	echo "docs: error: every page under docs/ must be in mkdocs.yml's nav" >&2
	exit 1
fi
# A fence Markdown did not take as code (one inside a list item without
# pymdownx.superfences) reaches the page as literal backquotes.
if unrendered=$(grep -rl --include='*.html' '```' "$site"); then
	echo "docs: error: fenced code rendered as text in: $unrendered" >&2
	exit 1
fi
echo "docs: built $(find "$site" -name '*.html' | wc -l) pages into $site" >&2
