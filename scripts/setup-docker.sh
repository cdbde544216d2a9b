#!/usr/bin/env bash
# Installs what the demo and the tests need on a Debian machine when it is
# missing (Debian's docker.io and sqlite3), and starts dockerd in the
# background when its socket does not answer, waiting up to 60 s for it.
# Needs root for the installs; does nothing that is already in place.
#
#   scripts/setup-docker.sh
set -euo pipefail

need=()
command -v docker >/dev/null 2>&1 && command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v sqlite3 >/dev/null 2>&1 || need+=(sqlite3)
if [ "${#need[@]}" -gt 0 ]; then
	echo "setup: installing ${need[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq "${need[@]}" >/dev/null
fi

if ! timeout 10 docker info >/dev/null 2>&1; then
	echo "setup: starting dockerd (log: /tmp/dockerd.log)" >&2
	dockerd >/tmp/dockerd.log 2>&1 &
	for i in $(seq 60); do
		timeout 10 docker info >/dev/null 2>&1 && break
		if [ "$i" = 60 ]; then
			echo "setup: error: dockerd did not answer within 60s; its log:" >&2
			tail -n 50 /tmp/dockerd.log >&2
			exit 1
		fi
		sleep 1
	done
fi
docker version --format 'setup: docker client {{.Client.Version}}, server {{.Server.Version}}' >&2
