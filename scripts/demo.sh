#!/usr/bin/env bash
# The run command: installs everything, builds, starts the bundled demo MCP server (the
# TypeScript SDK v2 fixture server on 127.0.0.1:3000) and runs the gateway in the
# foreground with config/gateway.yaml (127.0.0.1:8080 → demo). Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${SKIP_SETUP:-0}" != 1 ]; then
  bash scripts/setup.sh
fi
cmake -S . -B build -G Ninja >/dev/null
ninja -C build mcp-gateway
node tests/fixtures/mcp-server.mjs 3000 > /tmp/mcp-gateway-demo-server.log 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  grep -q LISTENING /tmp/mcp-gateway-demo-server.log 2>/dev/null && break
  sleep 0.1
done
cat <<'TXT'

Demo MCP server on 127.0.0.1:3000, gateway on 127.0.0.1:8080 (admin 127.0.0.1:9901).
Try, from another terminal:

  curl -sS http://127.0.0.1:8080/mcp \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: echo' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'

TXT
./build/mcp-gateway run -c config/gateway.yaml
