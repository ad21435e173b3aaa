#!/usr/bin/env bash
# Builds the libFuzzer targets in build-fuzz (or $FUZZ_BUILD_DIR) and runs each for
# $FUZZ_SECONDS (default 30) over a scratch copy of its committed seed corpus (the committed
# corpus never grows).
# Exits non-zero if the build fails or any target finds a crash, leak or timeout.
#   FUZZ_SECONDS=5 tests/fuzz/run.sh            # all targets
#   tests/fuzz/run.sh http_request_fuzz         # just some
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds="${FUZZ_SECONDS:-30}"

# Through ccache as scripts/build.sh does (paths relative to the checkout's parent).
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(cd "$root/.." && pwd)}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DGW_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for src in "$root"/tests/fuzz/*_fuzz.cc; do
    targets+=("$(basename "$src" .cc)")
  done
fi
ninja -C "$build" "${targets[@]}"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

failed=()
for t in "${targets[@]}"; do
  corpus="$scratch/corpus-$t"
  mkdir -p "$corpus"
  if [ -d "$root/tests/fuzz/corpus/$t" ]; then
    cp -r "$root/tests/fuzz/corpus/$t/." "$corpus/"
  fi
  dict=()
  prefix="${t%%_*}"
  if [ -f "$root/tests/fuzz/$prefix.dict" ]; then
    dict=("-dict=$root/tests/fuzz/$prefix.dict")
  fi
  echo "== $t: ${seconds}s"
  if ! (cd "$scratch" && "$build/tests/fuzz/$t" "$corpus" "${dict[@]}" -max_total_time="$seconds" \
        -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$scratch/$t-" >"$scratch/$t.log" 2>&1); then
    tail -n 60 "$scratch/$t.log"
    mkdir -p "$build/artifacts"
    cp "$scratch/$t"-* "$build/artifacts/" 2>/dev/null || true
    echo "!! $t failed (artifacts in $build/artifacts)"
    failed+=("$t")
  else
    grep -E "^stat::number_of_executed_units|^Done" "$scratch/$t.log" || true
  fi
done

if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz failures: ${failed[*]}"
  exit 1
fi
echo "all fuzz targets ran clean"
