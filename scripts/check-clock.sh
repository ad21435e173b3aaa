#!/usr/bin/env bash
# Fails when code in gateway/ outside gateway/core/ reads std::chrono's clocks directly
# (steady_clock::now, system_clock::now, high_resolution_clock::now, or X::now() where X is a
# local alias of one of them). Such code asks core/clock.h instead (core::steadyNow(),
# core::wallNow(), or an injected core::Clock), so every read of the time is in one place.
# Prints each offender as file:line: text and exits 1 when there is any.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files 'gateway/*.cc' 'gateway/*.h' | grep -v '^gateway/core/' || true)
status=0
report() {
  if [ -n "$1" ]; then
    printf '%s\n' "$1"
    status=1
  fi
}
# Direct reads.
report "$(printf '%s\n' $files | xargs grep -nE '\b(steady|system|high_resolution)_clock::now\b' || true)"
# Reads through an alias: `using Clock = std::chrono::steady_clock;` then `Clock::now()`.
for f in $files; do
  for alias in $(sed -nE 's/.*using ([A-Za-z_][A-Za-z0-9_]*) = (std::)?(chrono::)?(steady|system|high_resolution)_clock;.*/\1/p' "$f"); do
    report "$(grep -nE "\\b${alias}::now\\(" "$f" | sed "s|^|$f:|" || true)"
  done
done
if [ "$status" -ne 0 ]; then
  echo "check-clock: read the time through gateway/core/clock.h (core::steadyNow, core::wallNow)" >&2
fi
exit "$status"
