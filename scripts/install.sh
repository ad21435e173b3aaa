#!/usr/bin/env bash
# Installs mcp-gateway on PATH: builds the binary when it is missing or out of date (an
# up-to-date build is left as it is), then `cmake --install` copies it, and only it, to
# $PREFIX/bin (default /usr/local/bin; that needs root or sudo).
#   PREFIX=dir     install prefix (default /usr/local)
#   BUILD_DIR=dir  build directory (default build/; configured as scripts/build.sh does)
# The packages the build needs come from scripts/setup.sh (run it first on a fresh machine).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${BUILD_DIR:-build}
prefix=${PREFIX:-/usr/local}
if [ ! -f "$dir/CMakeCache.txt" ]; then
  cmake -S . -B "$dir" -G Ninja >/dev/null
fi
cmake --build "$dir" --target mcp-gateway
cmake --install "$dir" --prefix "$prefix"
echo "installed $prefix/bin/mcp-gateway ($("$prefix/bin/mcp-gateway" version))"
