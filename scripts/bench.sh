#!/usr/bin/env bash
# Benchmarks behind the README's performance table. Needs root (for a
# private mount namespace with 1,000 tmpfs mounts), hyperfine and sqlite3
# (installed from Debian's packages when missing).
#
#   scripts/bench.sh            # prints a markdown table
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null; }; }
need hyperfine hyperfine
need sqlite3 sqlite3

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=bench" -o "$work/preflight" ./cmd/preflight
size=$(stat -c %s "$work/preflight")

data="$work/data"
mkdir -p "$data"
for i in $(seq 1 10); do
  sqlite3 "$data/db$i.db" 'pragma journal_mode=wal; create table t(a); insert into t values (1);' >/dev/null
done

# run overhead: 1,000 extra tmpfs mounts in a private mount namespace.
cat >"$work/inner.sh" <<INNER
set -eu
for i in \$(seq 1 1000); do mkdir -p "$work/mnt/\$i"; mount -t tmpfs -o size=1m tmpfs "$work/mnt/\$i"; done
lines=\$(wc -l </proc/self/mountinfo)
echo "\$lines" >"$work/lines"
hyperfine -N --warmup 20 --runs 300 --export-json "$work/run.json" \
  '/bin/true' \
  "$work/preflight run --data-dir $data -- /bin/true" >/dev/null
INNER
unshare -m --propagation private bash "$work/inner.sh"
lines=$(cat "$work/lines")
read -r base with < <(python3 -c '
import json,sys
r=json.load(open(sys.argv[1]))["results"]
print(r[0]["median"]*1000, r[1]["median"]*1000)' "$work/run.json")

bench=$(go test -run '^$' -bench 'BenchmarkClassify10000|BenchmarkInspectSparse' -benchtime 2s ./probe/mounts/ ./probe/sqlitefile/ 2>&1)
ns() { echo "$bench" | awk -v n="$1" '$1 ~ n {for (i=1;i<=NF;i++) if ($(i+1)=="ns/op") {print $i; exit}}'; }

printf '| measure | figure | goal |\n|---|---|---|\n'
# shellcheck disable=SC2016
printf '| `preflight run -- /bin/true` median, %s-line mount table, 10 databases | %.2f ms (`/bin/true` alone: %.2f ms; added %.2f ms) | added < 5 ms |\n' "$lines" "$with" "$base" "$(python3 -c "print($with-$base)")"
printf '| parse + classify, 10,000-line mount table | %.2f ms | < 20 ms |\n' "$(python3 -c "print($(ns BenchmarkClassify10000)/1e6)")"
echo "$bench" | grep -E '^BenchmarkInspectSparse' | while read -r name _ v _; do
  printf '| header inspection, %s | %.1f µs | same for 2 GiB sparse and 1 MiB |\n' "${name#BenchmarkInspectSparse/}" "$(python3 -c "print($v/1e3)")"
done
# shellcheck disable=SC2016
printf '| stripped static binary (`-s -w`, CGO off) | %s bytes (%.1f MiB) | |\n' "$size" "$(python3 -c "print($size/1048576)")"
