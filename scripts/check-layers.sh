#!/usr/bin/env bash
# Fails when a module in gateway/ includes a header of a module above it (DESIGN's layers):
# the pure parsers (core, http, sse, mcp) include no module with I/O; downstream/ (the
# client connections and their codec) sees a request only through downstream/stream.h and
# includes nothing of proxy/, server/ or admin/; proxy/ includes nothing of server/ or
# admin/. Prints each offender as file:line: text and exits 1 when there is any.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
# check FOLDER FORBIDDEN...: no file of gateway/FOLDER includes gateway/<forbidden>/.
check() {
  local folder=$1
  shift
  local pattern
  pattern=$(printf '|%s' "$@")
  pattern="#include \"gateway/(${pattern:1})/"
  local hits
  hits=$(git ls-files "gateway/$folder/*.cc" "gateway/$folder/*.h" |
    xargs -r grep -nE "$pattern" || true)
  if [ -n "$hits" ]; then
    printf '%s\n' "$hits"
    echo "check-layers: gateway/$folder/ must not include $*" >&2
    status=1
  fi
}
io=(event upstream downstream proxy server admin client ratelimit)
check core http sse mcp "${io[@]}" filters policy settings
check http sse mcp "${io[@]}" filters policy settings
check mcp "${io[@]}" filters policy
check trace "${io[@]}" filters policy settings mcp http
check downstream proxy server admin
check proxy server admin
exit "$status"
