#!/usr/bin/env bash
# Crash safety of `preflight convert`: SIGKILL the conversion (the built
# static binary) at random moments within its measured run time, 200
# times by default, on a database with a 30 MiB WAL of known committed
# rows. After every kill a copy of the files must open with Debian's
# sqlite3 and with the pure-Go driver, integrity_check ok and every
# committed row there, and convert run again must finish the job
# (integration/convert_test.go, TestConvertCrash/SIGKILL; the normal suite
# runs 20). scripts/signal-test.sh does the same with SIGINT and SIGTERM.
#
#   scripts/crash-test.sh        # 200 kills
#   scripts/crash-test.sh 1000
set -euo pipefail
cd "$(dirname "$0")/.."
command -v sqlite3 >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sqlite3 >/dev/null; }
PREFLIGHT_CRASH_KILLS="${1:-200}" go test -count=1 -timeout 60m -run '^TestConvertCrash$/^SIGKILL$' -v ./integration/ 2>&1 |
	grep -E 'crash test:|fixture:|one conversion|kill [0-9]+|--- (PASS|FAIL)|^(ok|FAIL|panic)'
