#!/usr/bin/env bash
# Database-health benchmarks behind the figures in docs/performance.md: WAL validation of a
# 1 GiB WAL against cat, its peak memory, and `check --deep` of a 1 GiB
# healthy database beside sqlite3's own quick_check on the same file.
# Needs about 3 GiB free in $TMPDIR; takes a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v sqlite3 >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sqlite3 >/dev/null; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/preflight" ./cmd/preflight
go test -c -o "$work/wal.test" ./probe/wal/

# A 1 GiB WAL: rows of 4000 random bytes, no checkpoint, copied while the
# connection that wrote it is still open.
sqlite3 "$work/w.db" >/dev/null <<SQL
pragma journal_mode=wal; pragma wal_autocheckpoint=0;
create table t(b blob);
with recursive n(i) as (select 1 union all select i+1 from n where i < 262144)
insert into t select randomblob(4000) from n;
.shell cp $work/w.db-wal $work/big.wal
SQL
walsize=$(stat -c %s "$work/big.wal")
cat "$work/big.wal" >/dev/null # warm the page cache for both readers
t0=$(date +%s.%N); cat "$work/big.wal" >/dev/null; t1=$(date +%s.%N)
catmbs=$(python3 -c "print($walsize/1048576/($t1-$t0))")
out=$(PREFLIGHT_BENCH_WAL="$work/big.wal" /usr/bin/time -f 'maxrss_kb=%M' "$work/wal.test" -test.run '^$' -test.bench BenchmarkValidateFile -test.benchtime 3x 2>&1)
walmbs=$(echo "$out" | awk '/BenchmarkValidateFile/ {for (i=1;i<=NF;i++) if ($(i+1)=="MB/s") print $i}')
rss=$(echo "$out" | sed -n 's/.*maxrss_kb=\([0-9]*\).*/\1/p')

# A 1 GiB healthy rollback-mode database, closed.
mkdir "$work/data"
sqlite3 "$work/data/big.db" >/dev/null <<SQL
pragma journal_mode=delete;
create table t(id integer primary key, v text, b blob);
create index t_v on t(v);
with recursive n(i) as (select 1 union all select i+1 from n where i < 250000)
insert into t(v, b) select hex(randomblob(8)), randomblob(4000) from n;
SQL
dbsize=$(stat -c %s "$work/data/big.db")
cat "$work/data/big.db" >/dev/null
t0=$(date +%s.%N); sqlite3 "$work/data/big.db" 'pragma quick_check' >/dev/null; t1=$(date +%s.%N)
"$work/preflight" check --deep --docker off --format json "$work/data" >"$work/deep.json" || true
t2=$(date +%s.%N); "$work/preflight" check --deep --docker off "$work/data" >/dev/null || true; t3=$(date +%s.%N)
python3 - "$work/deep.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
i = r["data_dirs"][0]["databases"][0]["health"]["integrity"]
assert i["ok"], i
PY

printf '| measure | figure | goal |\n|---|---|---|\n'
printf '| WAL validation, %.0f MiB WAL (page cache warm) | %.0f MB/s (cat: %.0f MB/s, ratio %.2f) | at least half of cat |\n' \
  "$(python3 -c "print($walsize/1048576)")" "$walmbs" "$catmbs" "$(python3 -c "print($walmbs/1.048576/$catmbs)")"
printf '| WAL validation peak memory (whole test binary) | %.1f MiB | under 32 MiB |\n' "$(python3 -c "print($rss/1024)")"
printf '| check --deep, %.0f MiB healthy database | %.2f s (sqlite3 quick_check: %.2f s) | reported side by side |\n' \
  "$(python3 -c "print($dbsize/1048576)")" "$(python3 -c "print($t3-$t2)")" "$(python3 -c "print($t1-$t0)")"
