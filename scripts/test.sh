#!/usr/bin/env bash
# The test command: installs everything (scripts/setup.sh), builds, and runs the whole test
# suite (unit + integration) with ctest, which prints the summary.
#   SKIP_SETUP=1   skip scripts/setup.sh (already done)
#   BUILD_DIR=dir  build directory (default build/)
#   CMAKE_ARGS=... extra cmake arguments (e.g. -DGW_SANITIZE=ON)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${SKIP_SETUP:-0}" != 1 ]; then
  bash scripts/setup.sh
fi
dir=${BUILD_DIR:-build}
# shellcheck disable=SC2086
bash scripts/build.sh "$dir" ${CMAKE_ARGS:-}
cd "$dir"
ctest --output-on-failure --timeout 180 -j "${CTEST_JOBS:-2}"
