# preflight itself, as a minimal image. Build the static binary first:
#
#   scripts/build.sh && docker build -t preflight .
#   docker run --rm preflight --version
#
# To guard an application, copy the binary into its image instead:
#
#   COPY --from=preflight /preflight /preflight
#   ENTRYPOINT ["/preflight", "run", "--data-dir", "/data", "--"]
FROM scratch
COPY bin/preflight /preflight
USER 65532:65532
ENTRYPOINT ["/preflight"]
