#!/usr/bin/env bash
# The demo: run preflight over the bundled example (examples/) in each kind
# of data directory and show what it finds.
#
#   scripts/demo.sh
#
# It builds the static binaries (scripts/build.sh), builds the example image
# (tag preflight-demo), then for each case starts the demo app on a data
# directory, runs `preflight check /data` inside the container, and runs the
# image as shipped (ENTRYPOINT preflight run ... -- /demoapp):
#
#   bind mount    a host directory bind-mounted on /data (local: ok)
#   named volume  a docker volume on /data (local: ok)
#   no volume     /data in the container's writable layer (ephemeral: warn)
#   grpcfuse      a FUSE loopback mount named grpcfuse, as Docker Desktop's
#                 file sharing shows up (cross-vm: unsafe); needs root and
#                 /dev/fuse
#
# Every container and volume gets a name unique to this run
# (preflight-demo-RUN-...), and on exit the script removes only what it
# made: its containers, its volume and its FUSE mount. The image is kept as
# preflight-demo (docker rmi preflight-demo); while the run lasts it uses
# its own tag, so runs side by side do not use each other's image. Without a
# reachable Docker daemon it checks a database on this host instead.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# One id per run: names and the label value are this run's alone.
run_id="$(date -u +%Y%m%d%H%M%S)-$$"
prefix="preflight-demo-$run_id"
image="preflight-demo:$run_id"
volume="$prefix-data"
label="preflight-demo=$run_id"

say() { printf '%s\n' "$*" >&2; }

scripts/build.sh bin

# On a fresh machine, as root: Debian's docker.io and a running dockerd.
if [ "$(id -u)" = 0 ] && ! timeout 20 docker info >/dev/null 2>&1; then
	scripts/setup-docker.sh || say "demo: note: could not set up docker"
fi

if ! reason=$(timeout 20 docker info 2>&1 >/dev/null); then
	say ""
	say "demo: note: docker is not reachable (${reason:-docker info failed}); checking on this host instead"
	mkdir -p examples/data
	DATA_DIR=examples/data DEMO_ROWS=5 bin/demoapp >/dev/null
	set +e
	bin/preflight check examples/data
	code=$?
	set -e
	say "demo: preflight check examples/data: exit code $code"
	exit 0
fi

work=$(mktemp -d)
fuse_pid=""
containers=() # the names of the containers this run started
made_volume=""
made_image=""
cleanup() {
	set +e
	if [ ${#containers[@]} -gt 0 ]; then
		docker rm -f "${containers[@]}" >/dev/null 2>&1
	fi
	if [ -n "$made_volume" ]; then
		docker volume rm -f "$made_volume" >/dev/null 2>&1
	fi
	if [ -n "$made_image" ]; then
		docker tag "$made_image" preflight-demo >/dev/null 2>&1
		docker rmi "$made_image" >/dev/null 2>&1 # the run's tag only
	fi
	if [ -n "$fuse_pid" ]; then
		kill -TERM "$fuse_pid" 2>/dev/null
		wait "$fuse_pid" 2>/dev/null
	fi
	if grep -q " $work/fuse " /proc/mounts 2>/dev/null; then
		umount -l "$work/fuse"
	fi
	rm -rf --one-file-system "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say "demo: building image $image"
mkdir -p "$work/context/bin" "$work/context/rootfs/data"
cp examples/Dockerfile examples/.dockerignore "$work/context/"
cp bin/preflight-nocompose bin/demoapp "$work/context/bin/"
docker build -q -t "$image" "$work/context" >/dev/null 2>"$work/build.log" || {
	cat "$work/build.log" >&2
	exit 1
}
made_image=$image

summary=()

# demo_case TITLE [DOCKER RUN OPTIONS...]: start the app on /data, check
# /data from inside its container, then run the image as shipped.
demo_case() {
	local title=$1 cid code run_code i logs name
	shift
	printf '\n== %s ==\n' "$title"
	name="$prefix-${#containers[@]}"
	containers+=("$name" "$name-run")
	cid=$(docker run -d --name "$name" --label "$label" "$@" --entrypoint /demoapp -e DEMO_INTERVAL=200ms "$image")
	for i in $(seq 50); do
		logs=$(docker logs "$cid" 2>&1)
		case $logs in *"demoapp: pid="*) break ;; esac
		if [ "$i" = 50 ]; then
			say "demo: the app did not start; its logs:"
			say "$logs"
		fi
		sleep 0.2
	done
	printf '%s\n' "${logs%%$'\n'*}"
	printf -- '-- preflight check /data (the app running)\n'
	set +e
	docker exec "$cid" /preflight check /data
	code=$?
	set -e
	printf -- '-> exit code %s\n' "$code"
	docker rm -f "$cid" >/dev/null

	printf -- '-- docker run %s (ENTRYPOINT preflight run, then the app)\n' "$image"
	set +e
	docker run --rm --name "$name-run" --label "$label" "$@" -e DEMO_ROWS=2 "$image" 2>&1
	run_code=$?
	set -e
	printf -- '-> exit code %s\n' "$run_code"
	summary+=("$(printf '%-14s check=%-3s run=%s' "$title" "$code" "$run_code")")
}

mkdir -m 0777 "$work/bind"
chmod 0777 "$work/bind" # whatever the umask: the app runs as uid 65532
demo_case "bind mount" -v "$work/bind:/data"

docker volume create --label "$label" "$volume" >/dev/null
made_volume=$volume
demo_case "named volume" -v "$volume:/data"

demo_case "no volume"

if [ "$(id -u)" = 0 ] && [ -c /dev/fuse ]; then
	mkdir -m 0777 "$work/fuse-backing" "$work/fuse"
	chmod 0777 "$work/fuse-backing"
	bin/fuseloop -name grpcfuse "$work/fuse-backing" "$work/fuse" 2>"$work/fuseloop.log" &
	fuse_pid=$!
	for _ in $(seq 50); do
		grep -q " $work/fuse fuse.grpcfuse " /proc/mounts && break
		sleep 0.2
	done
	if grep -q " $work/fuse fuse.grpcfuse " /proc/mounts; then
		demo_case "grpcfuse" -v "$work/fuse:/data"
	else
		say "demo: note: FUSE mount failed; skipping the grpcfuse case"
		cat "$work/fuseloop.log" >&2
	fi
else
	say ""
	say "demo: note: skipping the grpcfuse case (needs root and /dev/fuse)"
fi

printf '\n== summary (exit codes: 0 ok, 3 unsafe, 4 warnings) ==\n'
printf '%s\n' "${summary[@]}"
