#!/usr/bin/env bash
# mcp-gateway benchmark: one command, never part of the test suite.
#   bash bench/run.sh
# Installs wrk, nginx-light, haproxy and gnuplot-nox when missing (Debian packages), builds the
# gateway (RelWithDebInfo, build-bench) and the SSE upstream and client (bench/sse_*.c, plain C,
# into build-bench), runs bench/bench.py, which starts the upstreams and the proxies on 127.0.0.1
# (ports chosen at run time), measures, stops them all, and writes
# bench/results/<YYYY-MM-DD-HHMM>.md plus a PNG chart beside it.
# Environment: BENCH_SECONDS, BENCH_LATENCY_SECONDS, BENCH_RUNS, BENCH_IDLE_CONNS,
# BENCH_SSE_STREAMS, BENCH_SSE_EVENTS, BENCH_SSE_SECONDS (see README.md); BENCH_GATEWAY=BINARY
# measures that gateway binary instead of building this checkout (BENCH_GATEWAY_REV names it in
# the report), e.g. an older revision for a before/after comparison; BENCH_BUILD_DIR=DIR builds
# there instead of build-bench (relative paths are taken from the checkout's root).
# After bench.py it runs bench/federation.py (federated vs plain route; report
# bench/results/<YYYY-MM-DD-HHMM>-federation.md): BENCH_FEDERATION=0 skips it, BENCH_MAIN=0
# skips bench.py (only the federation part runs); BENCH_FED_TOOLS sets its tools per upstream.
# Then bench/tls.py (issue #17: TLS termination and JWT; the handshake client bench/tls_handshake.c,
# OpenSSL, is built beside the SSE tools; report bench/results/<YYYY-MM-DD-HHMM>-tls.md):
# BENCH_TLS=0 skips it; BENCH_TLS_CONNS, BENCH_TLS_VERSION (see README.md).
# Between the two, bench/bridge.py (issue #26: a 2026-07-28 tools/call bridged into a 2025
# session, era: legacy, against the same gateway with era: modern, nginx and HAProxy; report
# bench/results/<YYYY-MM-DD-HHMM>-bridge.md): BENCH_BRIDGE=0 skips it; BENCH_BRIDGE_RUNS,
# BENCH_BRIDGE_PROFILE, BENCH_BRIDGE_PROFILE_SECONDS (see README.md).
# After the bridge, bench/servers.py (issue #27: a tools/call to the 37th of 50 servers against
# a single-server gateway, nginx and HAProxy; report bench/results/<YYYY-MM-DD-HHMM>-servers.md):
# BENCH_SERVERS=0 skips it; BENCH_SERVERS_RUNS (rounds, default 5).
# After it, bench/upstream_auth.py (issue #28: a tools/call whose upstreams have auth:
# token_exchange, the exchanged token cached, against the same gateway without auth, nginx and
# HAProxy; report bench/results/<YYYY-MM-DD-HHMM>-upstream-auth.md): BENCH_AUTH=0 skips it;
# BENCH_AUTH_RUNS (rounds, default 5). It needs tests/fixtures/node_modules (scripts/setup.sh).
# After it, bench/health.py (issue #29, failing upstreams: tools/call through upstreams with every
# health block vs none, and a chaos run — two of four endpoints killed in turns — through the
# gateway, HAProxy and nginx; report bench/results/<YYYY-MM-DD-HHMM>-health.md): BENCH_HEALTH=0
# skips it; BENCH_HEALTH_RUNS (rounds, default 5), BENCH_CHAOS_SECONDS (default 60).
# After it, bench/large.py (issue #30, large answers: 90 KB and 356 KB tools/list, the 356 KB
# list from a federated route's cache, 1 MB JSON and 1 MB SSE tools/call results, an 8 MB
# resources/read and the small call, through the gateway, nginx and HAProxy; report
# bench/results/<YYYY-MM-DD-HHMM>-large.md): BENCH_LARGE=0 skips it; BENCH_LARGE_RUNS (rounds,
# default 3); its BENCH_SECONDS default is 5.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
build="${BENCH_BUILD_DIR:-build-bench}"
if [[ "$build" != /* ]]; then build="$root/$build"; fi

driver_pid=""
cleanup() {
  if [[ -n "$driver_pid" ]] && kill -0 "$driver_pid" 2>/dev/null; then
    kill -TERM "$driver_pid" 2>/dev/null || true
  fi
  if [[ -n "$driver_pid" ]]; then
    wait "$driver_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v nginx >/dev/null || missing+=(nginx-light)
command -v haproxy >/dev/null || missing+=(haproxy)
command -v gnuplot >/dev/null || missing+=(gnuplot-nox)
command -v taskset >/dev/null || missing+=(util-linux)
command -v python3 >/dev/null || missing+=(python3)
command -v ninja >/dev/null || missing+=(ninja-build)
command -v gcc >/dev/null || missing+=(gcc)
command -v openssl >/dev/null || missing+=(openssl)
[[ -e /usr/include/openssl/ssl.h ]] || missing+=(libssl-dev)
if ((${#missing[@]})); then
  echo "bench: installing ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q "${missing[@]}"
fi

if [[ $(nproc) -lt 2 ]]; then
  echo "bench: needs at least 2 CPUs (proxy on CPU 0, load on CPU 1)" >&2
  exit 1
fi

gateway="${BENCH_GATEWAY:-$build/mcp-gateway}"
mkdir -p "$build"
if [[ -z "${BENCH_GATEWAY:-}" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DGW_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  ninja -C "$build" mcp-gateway
fi
gcc -O2 -Wall -Wextra -Werror -pthread -o "$build/bench-sse-upstream" "$here/sse_upstream.c"
gcc -O2 -Wall -Wextra -Werror -o "$build/bench-sse-client" "$here/sse_client.c"
if [[ "${BENCH_TLS:-1}" != 0 ]]; then
  gcc -O2 -Wall -Wextra -Werror -o "$build/bench-tls-handshake" "$here/tls_handshake.c" \
    -lssl -lcrypto
fi

# 10k idle connections need more than the usual 1024 descriptors per process.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# Each driver runs in the background so that the EXIT trap can stop it (and it its children).
run_driver() {
  "$@" &
  driver_pid=$!
  local status=0
  wait "$driver_pid" || status=$?
  driver_pid=""
  return "$status"
}

if [[ "${BENCH_MAIN:-1}" != 0 ]]; then
  run_driver python3 "$here/bench.py" "$gateway" "$here/results" \
    "$build/bench-sse-upstream" "$build/bench-sse-client"
fi
# The federation workload (bench/federation.py): federated vs plain route, nginx and HAProxy.
if [[ "${BENCH_FEDERATION:-1}" != 0 ]]; then
  run_driver python3 "$here/federation.py" "$gateway" "$here/results"
fi
# The era bridge (bench/bridge.py): era: legacy vs era: modern, nginx and HAProxy.
if [[ "${BENCH_BRIDGE:-1}" != 0 ]]; then
  run_driver python3 "$here/bridge.py" "$gateway" "$here/results"
fi
# Server selection (bench/servers.py): 50 servers vs one, nginx and HAProxy.
if [[ "${BENCH_SERVERS:-1}" != 0 ]]; then
  run_driver python3 "$here/servers.py" "$gateway" "$here/results"
fi
# Upstream credentials (bench/upstream_auth.py): token_exchange with a warm cache vs no auth.
if [[ "${BENCH_AUTH:-1}" != 0 ]]; then
  run_driver python3 "$here/upstream_auth.py" "$gateway" "$here/results"
fi
# Failing upstreams (bench/health.py): health blocks vs none, then the chaos run.
if [[ "${BENCH_HEALTH:-1}" != 0 ]]; then
  run_driver python3 "$here/health.py" "$gateway" "$here/results"
fi
# Large answers (bench/large.py): lists, 1 MB results, 1 MB SSE, 8 MB read vs nginx and HAProxy.
if [[ "${BENCH_LARGE:-1}" != 0 ]]; then
  run_driver python3 "$here/large.py" "$gateway" "$here/results"
fi
# TLS termination (gateway, nginx, HAProxy) and the JWT identity path (bench/tls.py).
if [[ "${BENCH_TLS:-1}" != 0 ]]; then
  run_driver python3 "$here/tls.py" "$gateway" "$here/results" "$build/bench-tls-handshake"
fi
