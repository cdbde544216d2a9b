#!/usr/bin/env bash
# preflight recover side by side with SQLite's own .recover over the test
# corpus (salvage/compare_test.go): builds (once, cached) SQLite's CLI with
# sqlite_dbpage, then prints the table of rows in their own table, rows
# with wrong content, lost_and_found, integrity_check, time and peak RSS.
# docs/recover.md holds a run's figures.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cli=$("$root/scripts/sqlite-recover-cli.sh")
cd "$root"
PREFLIGHT_COMPARE_RECOVER=1 PREFLIGHT_SQLITE_CLI="$cli" go test ./salvage -run '^TestCompareDotRecover$' -count=1 -v |
	sed -n '/side by side/,/^---/p'
