#!/usr/bin/env bash
# The test command: installs everything (scripts/setup.sh), builds, and runs the whole test
# suite (unit + integration, slow tests included) with ctest, which prints the summary.
#   scripts/test.sh          everything (the README's test command, and CI's)
#   scripts/test.sh --fast   the unit tier without its slow tests (`ctest -L unit -LE slow`)
# ctest labels: `unit` (unit_tests), `integration` (integration_tests and the script tests),
# `slow` (TEST_CASEs tagged [slow]: a second or more); e.g. `ctest -L integration -LE slow`.
#   SKIP_SETUP=1   skip scripts/setup.sh (already done)
#   BUILD_DIR=dir  build directory (default build/)
#   CMAKE_ARGS=... extra cmake arguments (e.g. -DGW_SANITIZE=ON)
#   CTEST_JOBS=n   tests run at once (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
labels=()
case "${1:-}" in
  "") ;;
  --fast) labels=(-L unit -LE slow) ;;
  *)
    echo "usage: scripts/test.sh [--fast]" >&2
    exit 2
    ;;
esac
if [ "${SKIP_SETUP:-0}" != 1 ]; then
  bash scripts/setup.sh
fi
dir=${BUILD_DIR:-build}
# shellcheck disable=SC2086
bash scripts/build.sh "$dir" ${CMAKE_ARGS:-}
cd "$dir"
ctest --output-on-failure --timeout 180 -j "${CTEST_JOBS:-2}" "${labels[@]}"
