# preflight itself, as a minimal image, with the binary built without
# `preflight compose` (scripts/build.sh writes it as bin/preflight-nocompose:
# it starts about 5 ms faster; compose files are read on the host with the
# full bin/preflight). Build the static binaries first:
#
#   scripts/build.sh && docker build -t preflight .
#   docker run --rm preflight --version
#
# To guard an application, copy the binary into its image instead:
#
#   COPY --from=preflight /preflight /preflight
#   ENTRYPOINT ["/preflight", "run", "--data-dir", "/data", "--"]
FROM scratch
COPY bin/preflight-nocompose /preflight
# A writable /tmp for `check --deep`, which checks a database across a share
# on a private copy there (--tmp-dir, PREFLIGHT_TMP_DIR, to put it
# elsewhere). scratch has no mkdir, so copy an empty directory
# (.dockerignore leaves out its .keep).
COPY --chown=65532:65532 rootfs/tmp /tmp
ENV TMPDIR=/tmp
USER 65532:65532
ENTRYPOINT ["/preflight"]
