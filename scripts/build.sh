#!/usr/bin/env bash
# Configures and builds mcp-gateway. Usage: scripts/build.sh [BUILD_DIR] [extra cmake args...]
# Default build dir: build/ (RelWithDebInfo). Compiles through ccache when it is installed
# (scripts/setup.sh installs it); paths are hashed relative to the checkout's parent, so
# build dirs and worktrees share cached objects.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(cd .. && pwd)}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
ninja -C "$dir"
