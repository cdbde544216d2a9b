#!/usr/bin/env bash
# Discovery on a slow share, behind the figure in docs/performance.md: a WAL database
# beside cache/ with 100,000 one-byte files, checked through a FUSE
# loopback mount typed fuse.grpcfuse (internal/fuseloop, Docker Desktop's
# share as a container sees it) and on the local filesystem. Needs Linux,
# root, /dev/fuse and sqlite3; takes a minute or two.
#
#   scripts/bench-discover.sh [FILES]
set -euo pipefail
cd "$(dirname "$0")/.."
files=${1:-100000}
command -v sqlite3 >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sqlite3 >/dev/null; }

work=$(mktemp -d)
fuse_pid=
cleanup() {
  if [ -n "$fuse_pid" ]; then kill -TERM "$fuse_pid" 2>/dev/null || true; wait "$fuse_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/preflight" ./cmd/preflight
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/fuseloop" ./internal/fuseloop/cmd/fuseloop

mkdir -p "$work/backing/cache" "$work/mnt"
sqlite3 "$work/backing/app.db" 'pragma journal_mode=wal; create table t(x); insert into t values (1);' >/dev/null
python3 - "$work/backing/cache" "$files" <<'PY'
import os, sys
for i in range(int(sys.argv[2])):
    with open(os.path.join(sys.argv[1], "f%d" % i), "w") as f:
        f.write("x")
PY

"$work/fuseloop" -name grpcfuse "$work/backing" "$work/mnt" 2>"$work/fuseloop.log" &
fuse_pid=$!
for _ in $(seq 100); do grep -q mounted "$work/fuseloop.log" && break; sleep 0.1; done
grep -q mounted "$work/fuseloop.log" || { cat "$work/fuseloop.log" >&2; exit 1; }

# judge DIR: time one check, print "seconds verdict finding-ids".
judge() {
  local t0 t1
  t0=$(date +%s.%N)
  "$work/preflight" check --docker off --format json "$1" >"$work/out.json" || true
  t1=$(date +%s.%N)
  python3 - "$work/out.json" "$(python3 -c "print($t1-$t0)")" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ids = sorted({f["id"] for f in r["findings"]})
dbs = sum(len(d["databases"]) for d in r["data_dirs"])
print("%.2f s, verdict %s, %d database(s), findings %s" % (float(sys.argv[2]), r["verdict"], dbs, ",".join(ids)))
PY
}

# lsdir DIR: the time a bare listing of DIR takes (ls -f: no sort, no stat),
# the floor under any search of it.
lsdir() {
  local t0 t1
  t0=$(date +%s.%N); ls -f "$1" >/dev/null; t1=$(date +%s.%N)
  python3 -c "print('%.2f s' % ($t1-$t0))"
}
load=$(cut -d' ' -f1 /proc/loadavg)
printf '| tree (load average %s) | check, 3 runs | ls -f cache/ |\n|---|---|---|\n' "$load"
for where in mnt backing; do
  label="app.db (WAL) + cache/ with $files one-byte files, FUSE share (fuse.grpcfuse)"
  [ "$where" = backing ] && label="the same, local filesystem"
  runs=$(for _ in 1 2 3; do judge "$work/$where"; done | paste -sd ';' | sed 's/;/; /g')
  printf '| %s | %s | %s |\n' "$label" "$runs" "$(lsdir "$work/$where/cache")"
done
