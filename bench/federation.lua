-- wrk script for the federation benchmark (bench/federation.py, run from bench/run.sh).
--   wrk ... -s bench/federation.lua URL -- list                 tools/list (no Mcp-Name)
--   wrk ... -s bench/federation.lua URL -- call NAME [NAME ...] tools/call, Mcp-Name rotating
--                                                              over the NAMEs (federation.py
--                                                              passes one tool per upstream,
--                                                              prefixed for a `names: prefix`
--                                                              route)
-- Every request carries the 2026-07-28 mirrored headers; a call's body is 250 bytes and its
-- params.name always equals Mcp-Name. done() prints one machine-readable BENCH line that
-- bench/federation.py parses (the same format as bench/mcp_call.lua).

local kBodyBytes = 250
local requests = {}
local next_index = 0

local function callBody(name)
  local head = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"' .. name
      .. '","arguments":{"q":"'
  local tail = '"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
  return head .. string.rep("x", kBodyBytes - #head - #tail) .. tail
end

local kListBody = '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":'
    .. '{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
    .. '"io.modelcontextprotocol/clientCapabilities":{}}}}'

function init(args)
  local mode = args[1] or "list"
  local base = {
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream",
    ["MCP-Protocol-Version"] = "2026-07-28",
  }
  if mode == "list" then
    base["Mcp-Method"] = "tools/list"
    requests[1] = wrk.format("POST", "/mcp", base, kListBody)
    return
  end
  if mode ~= "call" then
    error("unknown mode " .. mode)
  end
  assert(#args >= 2, "call needs at least one tool name")
  for i = 2, #args do
    local name = args[i]
    local body = callBody(name)
    assert(#body == kBodyBytes, "body is " .. #body .. " bytes")
    local headers = {}
    for k, v in pairs(base) do headers[k] = v end
    headers["Mcp-Method"] = "tools/call"
    headers["Mcp-Name"] = name
    requests[#requests + 1] = wrk.format("POST", "/mcp", headers, body)
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
