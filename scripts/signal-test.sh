#!/usr/bin/env bash
# Signal safety of `preflight convert`: SIGINT, then SIGTERM, at random
# moments within its measured run time (with the backup), 50 times each by
# default, on a database with a 30 MiB WAL of known committed rows. After
# every signal: the exit code is 130 (SIGINT) or 143 (SIGTERM), unless the
# conversion had finished (0) or the signal came before the handler was
# installed (the process died of it, nothing started); a copy of the files
# opens with Debian's sqlite3 and with the pure-Go driver, integrity_check
# ok and every committed row there; no .partial backup is left; a database
# still in WAL mode is reported as stopped before the journal mode change,
# one in DELETE mode as stopped after it, saying whether its verification
# finished; convert run again finishes the job
# (integration/convert_test.go, TestConvertCrash/SIGINT and /SIGTERM; the
# normal suite runs 3 of each).
#
#   scripts/signal-test.sh        # 50 SIGINT, 50 SIGTERM
#   scripts/signal-test.sh 200
set -euo pipefail
cd "$(dirname "$0")/.."
command -v sqlite3 >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sqlite3 >/dev/null; }
PREFLIGHT_CRASH_SIGNALS="${1:-50}" go test -count=1 -timeout 90m -run '^TestConvertCrash$/^SIG(INT|TERM)$' -v ./integration/ 2>&1 |
	grep -E 'signal test:|fixture:|SIG(INT|TERM) [0-9]+ after|--- (PASS|FAIL)|^(ok|FAIL|panic)'
