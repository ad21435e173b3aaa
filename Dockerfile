# mcp-gateway container image: a Debian 12 build stage, then a runtime stage FROM scratch that
# holds only the binary, the shared libraries it loads (glibc and libstdc++ included) with the
# dynamic loader, a passwd entry for the unprivileged user (uid/gid 10001), Debian's CA bundle
# (the "system store" for upstreams[].tls and jwks_url without their own CA file) and the
# default config (deploy/gateway.yaml). About 15 MB; README.md ("Docker sidecar") says what weighs
# what. There is no shell, package manager or coreutils inside (the HEALTHCHECK is the
# binary's own `healthcheck` command): debug from outside (`docker cp`, the admin endpoints)
# or build FROM ${BASE} instead. No secret is baked in: the default config's admin listener
# (0.0.0.0:9901) needs its token mounted at /run/secrets/admin_token, and the HTTPS variant
# (deploy/gateway-tls.yaml) its certificate and key mounted under /run/secrets/tls.
#
#   docker build -t mcp-gateway .                 (or: podman build --format docker ...)
#   openssl rand -hex 32 > admin.token
#   docker run -p 8080:8080 -p 9901:9901 \
#     -v "$PWD/admin.token:/run/secrets/admin_token:ro" mcp-gateway
#
# BASE is debian:bookworm-slim; deploy/check-image.sh passes a locally made equivalent when
# that image cannot be pulled.
#
# GW_BINARY says where the binary comes from. `source` (the default, for release images): it is
# compiled here from CMakeLists.txt and gateway/. `prebuilt`: build/mcp-gateway from the build
# context, as scripts/build.sh made it (CI's image check takes the binary the test suite just
# ran instead of compiling it again). A prebuilt binary must come from Debian 12 (bookworm) with
# the same -dev packages, so that the libraries it was linked against are the ones copied below.
#   bash scripts/build.sh && docker build --build-arg GW_BINARY=prebuilt -t mcp-gateway .
ARG BASE=debian:bookworm-slim

# --- build ------------------------------------------------------------------------------------
FROM ${BASE} AS build
# The -dev packages CMakeLists.txt needs (scripts/setup.sh's list without the test, fuzz and
# bench tools); prometheus-cpp-dev brings its own civetweb, curl and zlib -dev dependencies.
# A prebuilt binary needs them too: its runtime libraries are found below with ldd and dpkg.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      g++ cmake ninja-build pkg-config libevent-dev libsimdjson-dev libyaml-cpp-dev \
      libspdlog-dev node-llhttp libssl-dev libhiredis-dev prometheus-cpp-dev ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY gateway ./gateway
# build/mcp-gateway when the context has it (.dockerignore lets only that file of build/ in);
# the pattern matches nothing on a clean checkout, and CMakeLists.txt keeps the COPY valid.
COPY CMakeLists.txt build/mcp-gatewa[y] /prebuilt/
ARG GW_BINARY=source
# RelWithDebInfo (-O2), the build type the test suite runs, stripped. Release (-O3) and -O3
# with LTO measured no faster on the capacity benchmark (within its run-to-run spread).
RUN set -eu; \
    mkdir -p /build; \
    case "${GW_BINARY}" in \
      source) \
        cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGW_TESTS=OFF > /dev/null; \
        ninja -C /build mcp-gateway ;; \
      prebuilt) \
        if [ ! -x /prebuilt/mcp-gateway ]; then \
          echo "GW_BINARY=prebuilt: no build/mcp-gateway in the build context" >&2; exit 1; \
        fi; \
        cp /prebuilt/mcp-gateway /build/mcp-gateway ;; \
      *) echo "GW_BINARY must be source or prebuilt, not '${GW_BINARY}'" >&2; exit 1 ;; \
    esac; \
    strip --strip-unneeded /build/mcp-gateway
# /out becomes the runtime image's root: the binary, every shared library ldd reports for it
# plus the loader, each at its real path with the symlinks that lead to it (the
# merged-/usr links /bin, /lib, /lib64 too), and the copyright file of each package they came
# from (or of a package built from the same source, when its own doc link was trimmed away).
RUN set -eu; \
    mkdir -p /out/usr/local/bin /out/etc/mcp-gateway /out/tmp /out/usr/share/doc; \
    chmod 1777 /out/tmp; \
    cp /build/mcp-gateway /out/usr/local/bin/; \
    for d in /bin /lib /lib64; do \
      if [ -L "$d" ]; then cp -P "$d" "/out$d"; fi; \
    done; \
    copyright() { \
      src="$(dpkg-query -W -f '${source:Package}' "$1" 2> /dev/null || true)"; \
      for q in "$1" $(dpkg-query -W -f '${source:Package} ${Package}\n' | \
                      awk -v s="$src" '$1 == s { print $2 }'); do \
        if [ -f "/usr/share/doc/$q/copyright" ]; then \
          mkdir -p "/out/usr/share/doc/$1"; \
          cp "/usr/share/doc/$q/copyright" "/out/usr/share/doc/$1/"; \
          return 0; \
        fi; \
      done; \
      echo "no copyright file for $1" >&2; \
    }; \
    keep() { \
      p="$1"; \
      for _ in 1 2 3 4 5 6 7 8; do \
        dir="$(readlink -f "$(dirname "$p")")"; f="$dir/$(basename "$p")"; \
        mkdir -p "/out$dir"; \
        if [ -L "$f" ]; then \
          cp -P "$f" "/out$f"; t="$(readlink "$f")"; \
          case "$t" in /*) p="$t" ;; *) p="$dir/$t" ;; esac; \
        else \
          cp "$f" "/out$f"; \
          pkg="$(dpkg -S "$f" 2> /dev/null || dpkg -S "$1" 2> /dev/null || echo '?:')"; \
          pkg="${pkg%%:*}"; \
          echo "runtime file: $1 $(stat -c %s "$f") ${pkg}"; \
          copyright "${pkg}"; \
          return 0; \
        fi; \
      done; \
      echo "symlink chain too long: $1" >&2; return 1; \
    }; \
    ldd /build/mcp-gateway | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | \
      sort -u | while read -r lib; do keep "$lib"; done; \
    printf '%s\n' 'root:x:0:0:root:/root:/usr/sbin/nologin' \
      'mcp-gateway:x:10001:10001:mcp-gateway:/nonexistent:/usr/sbin/nologin' > /out/etc/passwd; \
    printf '%s\n' 'root:x:0:' 'mcp-gateway:x:10001:' > /out/etc/group; \
    printf '%s\n' 'passwd: files' 'group: files' 'hosts: files dns' > /out/etc/nsswitch.conf; \
    mkdir -p /out/etc/ssl/certs /out/usr/lib/ssl; \
    cp /etc/ssl/certs/ca-certificates.crt /out/etc/ssl/certs/; \
    ln -s /etc/ssl/certs/ca-certificates.crt /out/usr/lib/ssl/cert.pem; \
    ln -s /etc/ssl/certs /out/usr/lib/ssl/certs; \
    copyright ca-certificates

# --- runtime ----------------------------------------------------------------------------------
FROM scratch
COPY --from=build /out/ /
COPY deploy/gateway.yaml deploy/gateway-tls.yaml /etc/mcp-gateway/
USER 10001:10001
EXPOSE 8080 8443 9901
# GW_ADMIN_PORT: the admin port the health check asks (default 9901); set it when a mounted
# config moves it.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["/usr/local/bin/mcp-gateway", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/mcp-gateway"]
CMD ["run", "-c", "/etc/mcp-gateway/gateway.yaml"]
