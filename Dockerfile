# preflight itself, as a minimal image, with the binary built without
# `preflight compose` (scripts/build.sh writes it as bin/preflight-nocompose:
# it starts about 5 ms faster; compose files are read on the host with the
# full bin/preflight). Build the static binaries first:
#
#   scripts/build.sh && docker build -t preflight .
#   docker run --rm preflight --version
#
# For another architecture, build the binary for it and name the platform
# (the legacy builder does this FROM scratch; no emulation is needed):
#
#   GOARCH=arm64 scripts/build.sh && docker build --platform linux/arm64 -t preflight:arm64 .
#
# The OCI labels take VERSION and REVISION (scripts/cross-smoke.sh passes
# git describe and the commit); LICENSES is the SPDX expression of the
# licence (Apache-2.0):
#
#   docker build --build-arg VERSION=v1.0.0 --build-arg REVISION=$(git rev-parse HEAD) .
#
# To guard an application, copy the binary into its image instead:
#
#   COPY --from=preflight /preflight /preflight
#   ENTRYPOINT ["/preflight", "run", "--data-dir", "/data", "--"]
#
# or, in an image whose entrypoint is a shell script (or that has a shell),
# entrypoint.sh too, which puts preflight in front of the command:
#
#   COPY --from=ghcr.io/preflight-sqlite/preflight:VERSION /preflight /entrypoint.sh /usr/local/bin/
#   ENTRYPOINT ["/usr/local/bin/entrypoint.sh"]
FROM scratch
COPY bin/preflight-nocompose /preflight
# Not run here (scratch has no shell): for images that copy it.
COPY entrypoint.sh /entrypoint.sh
# A writable /tmp for `check --deep`, which checks a database across a share
# on a private copy there (--tmp-dir, PREFLIGHT_TMP_DIR, to put it
# elsewhere). scratch has no mkdir, so copy an empty directory
# (.dockerignore leaves out its .keep).
COPY --chown=65532:65532 rootfs/tmp /tmp
ENV TMPDIR=/tmp
USER 65532:65532
# After the COPY steps: with --platform, the legacy builder takes the
# platform from the first layer, and a metadata step straight after FROM
# scratch would be the daemon's.
ARG VERSION=dev
ARG REVISION=unknown
ARG LICENSES=Apache-2.0
LABEL org.opencontainers.image.title="preflight" \
      org.opencontainers.image.description="Keeps SQLite databases safe inside containers: checks data directories for unsafe mounts and live writers, then execs the application." \
      org.opencontainers.image.source="https://github.com/preflight-sqlite/preflight" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="${LICENSES}"
ENTRYPOINT ["/preflight"]
