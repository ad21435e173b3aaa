-- wrk script for the failing-upstreams chaos run (bench/health.py, issue #29): a 2026-07-28
-- JSON-RPC tools/list POST (MCP-Protocol-Version and Mcp-Method: tools/list mirrored in the
-- headers; tools/list is one of the methods the gateway retries by default). Modeled on
-- bench/mcp_call.lua. Every response's status is counted (a response() callback): non-2xx
-- answers in all, by status, and per wall-clock second (os.time(), so bench/health.py can line
-- failures up with its fault schedule). done() prints one machine-readable BENCH line: the
-- fields of mcp_call.lua's plus p999_us, max_us, non2xx, statuses=CODE:N,... and
-- series=UNIXSECOND:N,... ("-" when empty). wrk's connect/read/write/timeout errors never reach
-- response(); the driver counts them from the same line.

local threads = {}
local request_text = nil

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  local body = '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{'
      .. '"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
      .. '"io.modelcontextprotocol/clientCapabilities":{}}}}'
  local headers = {
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream",
    ["MCP-Protocol-Version"] = "2026-07-28",
    ["Mcp-Method"] = "tools/list",
  }
  for k, v in pairs(wrk.headers) do
    if k ~= "Host" then
      headers[k] = v
    end
  end
  request_text = wrk.format("POST", wrk.path, headers, body)
  non2xx = 0
  statuses = {}
  series = {}
end

function request()
  return request_text
end

-- Tables do not cross wrk's Lua states reliably: each thread hands them over as strings.
local function encode(t)
  local parts = {}
  for k, v in pairs(t) do
    table.insert(parts, k .. ":" .. v)
  end
  if #parts == 0 then
    return "-"
  end
  return table.concat(parts, ",")
end

function done(summary, latency, reqs)
  local total = 0
  local st, se = {}, {}
  for _, thread in ipairs(threads) do
    total = total + (thread:get("non2xx") or 0)
    for _, pair in ipairs({ { thread:get("statuses_text"), st }, { thread:get("series_text"), se } }) do
      local text, into = pair[1], pair[2]
      if text and text ~= "-" then
        for k, v in string.gmatch(text, "(%d+):(%d+)") do
          into[k] = (into[k] or 0) + tonumber(v)
        end
      end
    end
  end
  local e = summary.errors
  io.write(string.format(
    "BENCH requests=%d duration_us=%d connect=%d read=%d write=%d status=%d timeout=%d " ..
    "p50_us=%d p90_us=%d p99_us=%d p999_us=%d max_us=%d mean_us=%.1f non2xx=%d statuses=%s series=%s\n",
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max, latency.mean, total, encode(st), encode(se)))
end

-- Each thread keeps text copies current for done() (thread:get reads the thread's globals).
function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
    statuses[status] = (statuses[status] or 0) + 1
    local t = os.time()
    series[t] = (series[t] or 0) + 1
    statuses_text = encode(statuses)
    series_text = encode(series)
  end
end
