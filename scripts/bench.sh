#!/usr/bin/env bash
# Benchmarks behind the performance table of docs/performance.md. Needs root (for private
# PID and mount namespaces with 1,000 tmpfs mounts), hyperfine and sqlite3
# (installed from Debian's packages when missing).
#
#   scripts/bench.sh            # prints a markdown table
#
# Startup is measured the way an ENTRYPOINT runs: in a new PID namespace
# (preflight is PID 1's parent's only sibling there, so the /proc scan sees
# the few processes of a container, not the host's) with its own mount
# namespace holding 1,000 extra tmpfs mounts, and no Docker socket
# (DOCKER_HOST points at a missing one, as in a container that was given
# none: the Docker probe runs and finds nothing to ask). Both builds are
# measured: bin/preflight (every command) and bin/preflight-nocompose (the
# images' binary), plus `--version` of each (process start and flag
# parsing, no check) and a static Go program that only exits.
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null; }; }
need hyperfine hyperfine
need sqlite3 sqlite3

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

export CGO_ENABLED=0
go build -trimpath -ldflags "-s -w -X main.version=bench" -o "$work/preflight" ./cmd/preflight
go build -tags nocompose -trimpath -ldflags "-s -w -X main.version=bench" -o "$work/preflight-nocompose" ./cmd/preflight
mkdir -p "$work/empty"
printf 'package main\n\nfunc main() {}\n' >"$work/empty/main.go"
(cd "$work/empty" && go mod init example.com/empty >/dev/null 2>&1 && go build -trimpath -ldflags "-s -w" -o "$work/goexit" .)
size=$(stat -c %s "$work/preflight")
size_nc=$(stat -c %s "$work/preflight-nocompose")

data="$work/data"
mkdir -p "$data"
for i in $(seq 1 10); do
  sqlite3 "$data/db$i.db" 'pragma journal_mode=wal; create table t(a); insert into t values (1);' >/dev/null
done

cat >"$work/inner.sh" <<INNER
set -eu
for i in \$(seq 1 1000); do mkdir -p "$work/mnt/\$i"; mount -t tmpfs -o size=1m tmpfs "$work/mnt/\$i"; done
lines=\$(wc -l </proc/self/mountinfo)
echo "\$lines" >"$work/lines"
export DOCKER_HOST=unix:///nonexistent/docker.sock
hyperfine -N --warmup 30 --runs 500 --export-json "$work/run.json" \
  '/bin/true' \
  "$work/goexit" \
  "$work/preflight --version" \
  "$work/preflight run --data-dir $data -- /bin/true" \
  "$work/preflight-nocompose --version" \
  "$work/preflight-nocompose run --data-dir $data -- /bin/true" >/dev/null
INNER
unshare -m -p -f --mount-proc --propagation private bash "$work/inner.sh"
lines=$(cat "$work/lines")
read -r base goexit ver run ver_nc run_nc < <(python3 -c '
import json,sys
r=json.load(open(sys.argv[1]))["results"]
print(*[x["median"]*1000 for x in r])' "$work/run.json")
add() { python3 -c "print(f'{$1-$base:.2f}')"; }

bench=$(go test -run '^$' -bench 'BenchmarkClassify10000|BenchmarkInspectSparse' -benchtime 2s ./probe/mounts/ ./probe/sqlitefile/ 2>&1)
ns() { echo "$bench" | awk -v n="$1" '$1 ~ n {for (i=1;i<=NF;i++) if ($(i+1)=="ns/op") {print $i; exit}}'; }

printf '| measure | figure | goal |\n|---|---|---|\n'
# shellcheck disable=SC2016
printf '| `preflight-nocompose run -- /bin/true` (the images'"'"' binary), median, %s-line mount table, 10 WAL databases | %.2f ms: added %s ms over `/bin/true` (%.2f ms) | added < 5 ms |\n' "$lines" "$run_nc" "$(add "$run_nc")" "$base"
# shellcheck disable=SC2016
printf '| `preflight run -- /bin/true` (full build), the same | %.2f ms: added %s ms | added < 5 ms |\n' "$run" "$(add "$run")"
# shellcheck disable=SC2016
printf '| process start and flag parsing alone (`--version`): images'"'"' binary / full build / a static Go program that only exits | %.2f ms / %.2f ms / %.2f ms (added %s / %s / %s ms) | |\n' "$ver_nc" "$ver" "$goexit" "$(add "$ver_nc")" "$(add "$ver")" "$(add "$goexit")"
printf '| parse + classify, 10,000-line mount table | %.2f ms | < 20 ms |\n' "$(python3 -c "print($(ns BenchmarkClassify10000)/1e6)")"
echo "$bench" | grep -E '^BenchmarkInspectSparse' | while read -r name _ v _; do
  printf '| header inspection, %s | %.1f µs | same for 2 GiB sparse and 1 MiB |\n' "${name#BenchmarkInspectSparse/}" "$(python3 -c "print($v/1e3)")"
done
# shellcheck disable=SC2016
printf '| stripped static binary (`-s -w`, CGO off): full / images'"'"' (nocompose) | %s / %s bytes (%.1f / %.1f MiB) | |\n' "$size" "$size_nc" "$(python3 -c "print($size/1048576)")" "$(python3 -c "print($size_nc/1048576)")"
