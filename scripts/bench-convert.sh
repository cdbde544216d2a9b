#!/usr/bin/env bash
# Benchmark of `preflight convert` behind the convert figures of docs/performance.md:
# a database whose 1 GiB WAL holds every row (copied while the writer was
# connected, as a crash leaves it), converted side by side on identical
# copies by Debian's sqlite3 (PRAGMA wal_checkpoint(TRUNCATE);
# PRAGMA journal_mode=DELETE;) and by preflight convert (guard, WAL scan,
# checkpoint, conversion, quick_check and row counts before and after),
# with wall time and peak memory from /usr/bin/time -v; then the backup
# copy's throughput against cp. Needs sqlite3 and GNU time (installed from
# Debian's packages when missing) and about 5 GiB free in $TMPDIR.
#
#   scripts/bench-convert.sh            # prints a markdown table
#   WAL_MIB=256 RUNS=3 scripts/bench-convert.sh
#   PREFLIGHT_BIN=bin/preflight scripts/bench-convert.sh
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null; }; }
need sqlite3 sqlite3
[ -x /usr/bin/time ] || need /usr/bin/time time

wal_mib=${WAL_MIB:-1024}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -n "${PREFLIGHT_BIN:-}" ]; then # a prebuilt static binary
  cp "$PREFLIGHT_BIN" "$work/preflight"
else
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=bench" -o "$work/preflight" ./cmd/preflight
fi

# The fixture: one row per 4 KiB page, wal_autocheckpoint off, copied with
# .system while the connection is open.
rows=$((wal_mib * 256))
mkdir -p "$work/src" "$work/tmpl"
echo "bench-convert: making a database with a ${wal_mib} MiB WAL ($rows rows)" >&2
sqlite3 "$work/src/app.db" >/dev/null <<SQL
PRAGMA page_size=4096;
PRAGMA journal_mode=WAL;
PRAGMA wal_autocheckpoint=0;
CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<$rows) INSERT INTO t(v) SELECT randomblob(3900) FROM c;
.system cp $work/src/app.db $work/src/app.db-wal $work/tmpl/
SQL
wal_bytes=$(stat -c %s "$work/tmpl/app.db-wal")

fresh() { rm -rf "${work:?}/${1:?}"; mkdir -p "$work/$1"; cp "$work/tmpl/app.db" "$work/tmpl/app.db-wal" "$work/$1/"; sync; }
# measure LABEL CMD...: wall seconds and max RSS KiB into $work/LABEL.time
measure() {
  local label=$1; shift
  /usr/bin/time -v -o "$work/$label.time" "$@" >"$work/$label.out" 2>"$work/$label.err" || { cat "$work/$label.out" "$work/$label.err" >&2; exit 1; }
}
secs() { awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$work/$1.time"; }
rss() { awk -F': ' '/Maximum resident set size/ {print $2}' "$work/$1.time"; }

runs=${RUNS:-2}
sq=() pf=()
for r in $(seq 1 "$runs"); do
  fresh sq
  measure "sq$r" sqlite3 "$work/sq/app.db" "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE;"
  grep -qx delete "$work/sq$r.out" || { echo "sqlite3 did not convert: $(cat "$work/sq$r.out")" >&2; exit 1; }
  fresh pf
  measure "pf$r" "$work/preflight" convert --docker off --allow-unverified --no-backup --format json "$work/pf/app.db"
  sq+=("$(secs "sq$r")") pf+=("$(secs "pf$r") $r")
done
best() { printf '%s\n' "$@" | sort -g | head -1; }
sq_best=$(best "${sq[@]}")
read -r pf_best pf_run < <(best "${pf[@]}")
# Where the best run's time went (the JSON's per-database times).
read -r scan_s conv_s verify_s < <(python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))["databases"][0]
print(d.get("wal_scan_ns",0)/1e9, d["conversion_ns"]/1e9, d["verified"]["duration_ns"]/1e9)' "$work/pf$pf_run.out")
dump_same=no
[ "$(sqlite3 "$work/sq/app.db" 'select count(*), sum(length(v)) from t')" = "$(sqlite3 "$work/pf/app.db" 'select count(*), sum(length(v)) from t')" ] && dump_same=yes

# With the backup (default): its copy throughput against cp on the same files.
fresh bk
measure bk "$work/preflight" convert --docker off --allow-unverified --format json "$work/bk/app.db"
read -r bk_bytes bk_ns < <(python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))["databases"][0]["backup"]
print(d["bytes"], d["duration_ns"])' "$work/bk.out")
fresh cp
mkdir -p "$work/cpdst"
measure cp sh -c "cp '$work/cp/app.db' '$work/cp/app.db-wal' '$work/cpdst/' && sync"

ratio=$(python3 -c "print(f'{$pf_best/$sq_best:.2f}')")
mib=$((1024 * 1024))
printf '| measure (WAL %s MiB, %s rows, best of %s) | figure | goal |\n|---|---|---|\n' "$((wal_bytes / mib))" "$rows" "$runs"
# shellcheck disable=SC2016 # backticks are markdown
printf '| sqlite3 3.40.1: `wal_checkpoint(TRUNCATE); journal_mode=DELETE` | %.2f s, max RSS %s MiB | |\n' "$sq_best" "$(($(rss sq1) / 1024))"
# shellcheck disable=SC2016
printf '| `preflight convert --no-backup` (guard, WAL scan, checkpoint, convert, quick_check, row counts) | %.2f s (%sx sqlite3), max RSS %s MiB | <= 1.5x, < 64 MiB |\n' "$pf_best" "$ratio" "$(($(rss "pf$pf_run") / 1024))"
# shellcheck disable=SC2016
printf '| of which: WAL frame-chain scan / conversion (open, recovery, row counts before beside the FULL checkpoint, TRUNCATE, journal_mode=DELETE) / verification (quick_check beside the row counts after) | %.2f s / %.2f s (%sx sqlite3) / %.2f s | |\n' "$scan_s" "$conv_s" "$(python3 -c "print(f'{$conv_s/$sq_best:.2f}')")" "$verify_s"
# shellcheck disable=SC2016
printf '| `preflight convert` with the backup | %.2f s, max RSS %s MiB | < 64 MiB |\n' "$(secs bk)" "$(($(rss bk) / 1024))"
# shellcheck disable=SC2016
printf '| backup copy (fsynced) vs `cp` + `sync` | %.0f MiB/s vs %.0f MiB/s | |\n' "$(python3 -c "print($bk_bytes/$mib/($bk_ns/1e9))")" "$(python3 -c "print($bk_bytes/$mib/$(secs cp))")"
printf '| same rows after both conversions | %s | yes |\n' "$dump_same"
