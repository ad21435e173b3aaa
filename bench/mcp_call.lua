-- wrk script for the mcp-gateway benchmark (bench/run.sh): a 250-byte JSON-RPC tools/call POST
-- with the 2026-07-28 mirrored headers, rotating Mcp-Name over tool_a, tool_b, tool_c (the three
-- routes of every routing setup). The body's params.name always equals Mcp-Name, so verify mode
-- accepts it. Headers given with `wrk -H` are added to every request (`-H "Host: …"` replaces the
-- URL's), and the path is the URL's. done() prints one
-- machine-readable BENCH line that bench/bench.py parses.

local kBodyBytes = 250
local names = { "tool_a", "tool_b", "tool_c" }
local requests = {}
local next_index = 0

local function makeBody(name)
  local head = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"' .. name
      .. '","arguments":{"q":"'
  local tail = '"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
  local pad = kBodyBytes - #head - #tail
  return head .. string.rep("x", pad) .. tail
end

-- `wrk ... -- legacy`: the same body without the MCP headers (a 2025-era client; the gateway
-- routes it on the parsed body, issue #13).
function init(args)
  local legacy = args[1] == "legacy"
  for i, name in ipairs(names) do
    local body = makeBody(name)
    assert(#body == kBodyBytes, "body is " .. #body .. " bytes")
    local headers = {
      ["Content-Type"] = "application/json",
      ["Accept"] = "application/json, text/event-stream",
    }
    -- Headers given with `wrk -H` (bench/tls.py: Authorization); wrk.format does not add them
    -- to a request built with its own header table.
    for k, v in pairs(wrk.headers) do
      if k ~= "Host" then
        headers[k] = v
      end
    end
    if not legacy then
      headers["MCP-Protocol-Version"] = "2026-07-28"
      headers["Mcp-Method"] = "tools/call"
      headers["Mcp-Name"] = name
    end
    -- The URL's path (/mcp for every workload but bench/servers.py's /s37/mcp).
    requests[i] = wrk.format("POST", wrk.path, headers, body)
  end
end

function request()
  next_index = next_index % #requests + 1
  return requests[next_index]
end

function done(summary, latency, reqs)
  local e = summary.errors
  io.write(string.format(
    "BENCH requests=%d duration_us=%d connect=%d read=%d write=%d status=%d timeout=%d " ..
    "p50_us=%d p90_us=%d p99_us=%d mean_us=%.1f\n",
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean))
end
