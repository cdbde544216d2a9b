#!/usr/bin/env bash
# Live-writer benchmarks behind the figures in docs/performance.md: a /proc scan over
# about 2,000 processes, the Docker container lookup with 200 containers on
# the engine, and what the Docker probe adds to `preflight run`. Needs root,
# a running Docker engine and hyperfine; takes a few minutes (200 containers
# are started and removed).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hyperfine >/dev/null; }
command -v sqlite3 >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sqlite3 >/dev/null; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/preflight" ./cmd/preflight
mkdir "$work/data"
sqlite3 "$work/data/app.db" 'pragma journal_mode=wal; create table t(a);' >/dev/null

hyperfine -N --warmup 10 --runs 100 --export-json "$work/run.json" \
  '/bin/true' \
  "$work/preflight run --docker off --data-dir $work/data -- /bin/true" \
  "$work/preflight run --data-dir $work/data -- /bin/true" >/dev/null
read -r base off on < <(python3 -c '
import json,sys
r=json.load(open(sys.argv[1]))["results"]
print(*(x["median"]*1000 for x in r))' "$work/run.json")

scan=$(go test -run '^$' -bench BenchmarkScan -benchtime 20x ./probe/procfs/ 2>&1 | awk '/BenchmarkScan/ {for (i=1;i<=NF;i++) if ($(i+1)=="ns/op") print $i}')
probe=$(PREFLIGHT_REQUIRE_DOCKER=1 go test -run '^$' -bench BenchmarkProbe200 -benchtime 20x -timeout 20m ./probe/docker/ 2>&1 | grep BenchmarkProbe200)

# shellcheck disable=SC2016
printf '| measure | figure | goal |\n|---|---|---|\n'
# shellcheck disable=SC2016
printf '| `/proc` scan, about 2,000 processes | %.0f ms | under 50 ms |\n' "$(python3 -c "print($scan/1e6)")"
echo "$probe" | while read -r name _ v _; do
  # shellcheck disable=SC2016
  printf '| container lookup, 200 containers (%s) | %.0f ms | under 300 ms |\n' "${name#BenchmarkProbe200/}" "$(python3 -c "print($v/1e6)")"
done
# shellcheck disable=SC2016
printf '| `preflight run -- /bin/true` median, Docker probe on (daemon reachable) | %.1f ms (off: %.1f ms; `/bin/true`: %.1f ms; added by the probe: %.1f ms; in all: %.1f ms) | under 30 ms added |\n' \
  "$on" "$off" "$base" "$(python3 -c "print($on-$off)")" "$(python3 -c "print($on-$base)")"
