# syntax=docker/dockerfile:1
#
# A small image of the rlockd binary, for CI jobs and testcontainers in any
# language:
#
#   docker build -t rlockd .
#   docker run --rm -p 6379:6379 rlockd                  # or: rlockd --requirepass secret
#
# The binary is statically linked (glibc, `-C target-feature=+crt-static`,
# random seeds from the getrandom system call), built by the official Rust
# image's cargo; the final image is busybox (about 4 MB) for the entry
# point's shell and the health check's `nc`. To package a static binary
# built on the host instead (README, "A static binary"), copy it to
# ./rlockd and add `--build-arg BINARY=prebuilt`.

ARG BINARY=source

FROM rust:1-bookworm AS source
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /src
COPY . .
# The registry and the target directory are cache mounts, so a rebuild after
# a source change recompiles rlockd only; the binary is copied out of them.
# No debug info in the image. readelf refuses a binary that would need a
# loader or shared libraries at run time.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    set -eu; \
    triple="$(uname -m)-unknown-linux-gnu"; \
    RUSTFLAGS='-C target-feature=+crt-static --cfg getrandom_backend="linux_getrandom"' \
    CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=symbols \
        cargo build --release --locked --bin rlockd --target "$triple"; \
    cp "target/$triple/release/rlockd" /rlockd; \
    if readelf -l /rlockd | grep -q 'program interpreter'; then \
        echo "rlockd is not statically linked" >&2; exit 1; \
    fi

FROM scratch AS prebuilt
COPY rlockd /rlockd

FROM ${BINARY} AS binary

FROM busybox:1.36
COPY --from=binary /rlockd /usr/local/bin/rlockd
COPY docker/entrypoint.sh /usr/local/bin/docker-entrypoint.sh
# rlockd writes nothing to disk: it runs as nobody.
USER 65534:65534
EXPOSE 6379
# PING on the default port; a server started with --requirepass answers
# NOAUTH, which is alive too. With another --port, give your own check.
HEALTHCHECK --interval=2s --timeout=3s --start-period=1s --retries=5 \
    CMD ["sh", "-c", "printf 'PING\\r\\nQUIT\\r\\n' | nc -w 2 127.0.0.1 6379 | grep -q -e PONG -e NOAUTH"]
# `docker stop` sends SIGTERM: rlockd logs its shutdown and exits 0 at once.
STOPSIGNAL SIGTERM
ENTRYPOINT ["docker-entrypoint.sh"]
CMD []
