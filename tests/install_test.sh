#!/usr/bin/env bash
# ctest install_into_prefix: scripts/install.sh with PREFIX set to a fresh temp directory
# installs exactly one file, bin/mcp-gateway, and the installed binary runs.
# Usage: tests/install_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PREFIX="$tmp/prefix" BUILD_DIR="$build" bash "$src/scripts/install.sh"
installed=$(cd "$tmp/prefix" && find . \( -type f -o -type l \) | sort)
if [ "$installed" != "./bin/mcp-gateway" ]; then
  echo "FAIL: installed files are not just bin/mcp-gateway:" >&2
  echo "$installed" >&2
  exit 1
fi
test -x "$tmp/prefix/bin/mcp-gateway"
out=$("$tmp/prefix/bin/mcp-gateway" version)
case "$out" in
  "mcp-gateway "*) ;;
  *) echo "FAIL: version printed '$out'" >&2; exit 1 ;;
esac
"$tmp/prefix/bin/mcp-gateway" --help | grep -q '^usage: mcp-gateway'
# The installed binary is the one just built.
cmp -s "$tmp/prefix/bin/mcp-gateway" "$build/mcp-gateway" || {
  echo "FAIL: installed binary differs from $build/mcp-gateway" >&2
  exit 1
}
echo "ok: $out installed into a temp prefix"
