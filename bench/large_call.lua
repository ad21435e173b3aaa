-- wrk script for the large-answer benchmark (bench/large.py, run from bench/run.sh).
--   wrk ... -s bench/large_call.lua URL -- METHOD NAME BODY_FILE
-- METHOD goes in Mcp-Method, NAME in Mcp-Name ("-": none, e.g. tools/list), BODY_FILE is the
-- JSON-RPC request body large.py wrote (the same bytes its curl probe sends: a 2026-07-28
-- request whose params._meta carries protocolVersion, clientInfo and clientCapabilities).
-- Every request is the same POST with MCP-Protocol-Version: 2026-07-28 and Accept:
-- application/json, text/event-stream. done() prints one machine-readable BENCH line that
-- bench/large.py parses (bench/mcp_call.lua's fields plus bytes = everything wrk read, response
-- heads included).

local request_text

function init(args)
  local method = assert(args[1], "usage: -- METHOD NAME BODY_FILE")
  local name = assert(args[2], "usage: -- METHOD NAME BODY_FILE")
  local f = assert(io.open(assert(args[3], "usage: -- METHOD NAME BODY_FILE"), "rb"))
  local body = f:read("*a")
  f:close()
  local headers = {
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream",
    ["MCP-Protocol-Version"] = "2026-07-28",
    ["Mcp-Method"] = method,
  }
  if name ~= "-" then
    headers["Mcp-Name"] = name
  end
  request_text = wrk.format("POST", wrk.path, headers, body)
end

function request()
  return request_text
end

function done(summary, latency, reqs)
  local e = summary.errors
  io.write(string.format(
    "BENCH requests=%d duration_us=%d bytes=%d connect=%d read=%d write=%d status=%d " ..
    "timeout=%d p50_us=%d p90_us=%d p99_us=%d mean_us=%.1f\n",
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status,
    e.timeout, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.mean))
end
