#!/bin/sh
# entrypoint.sh: put preflight in front of an image whose ENTRYPOINT is
# already a shell script. Use it as the ENTRYPOINT, or exec it at the end of
# your own entrypoint script:
#
#   exec /entrypoint.sh "$@"
#
# It runs `preflight run $PREFLIGHT_ARGS -- "$@"`: preflight checks the data
# directories, logs its findings on stderr, then execs the command, which
# keeps the PID and receives the container's signals. preflight also reads
# PREFLIGHT_DATA_DIR, PREFLIGHT_ON_UNSAFE, PREFLIGHT_LOG_FORMAT and
# PREFLIGHT_EXPORT_ENV from the environment.
#
#   PREFLIGHT_BIN   the preflight binary (default: preflight on PATH)
#   PREFLIGHT_ARGS  extra arguments for `preflight run`, split on whitespace,
#                   e.g. "--data-dir /data --on-unsafe fail"
#
# If preflight is missing, it warns on stderr and execs the command unchecked.
set -eu

if [ "$#" -eq 0 ]; then
	echo "entrypoint.sh: error: no command given" >&2
	echo "entrypoint.sh: hint: entrypoint.sh CMD [ARGS...]" >&2
	exit 2
fi

bin=${PREFLIGHT_BIN:-preflight}
if command -v "$bin" >/dev/null 2>&1; then
	set -f # split PREFLIGHT_ARGS on whitespace, but do not glob it
	# shellcheck disable=SC2086 # word splitting is wanted here
	exec "$bin" run ${PREFLIGHT_ARGS:-} -- "$@"
fi

echo "entrypoint.sh: warning: $bin not found; starting $1 without preflight's checks" >&2
exec "$@"
