#!/usr/bin/env python3
"""Large-answer benchmark behind bench/run.sh (issue #30 item 1; never part of the test suite).

What relaying large MCP answers costs mcp-gateway next to nginx and HAProxy, all three measured
in the same round against the same upstream:

  list90   tools/list, 100 tools (~90 KB of JSON), plain route
  list356  tools/list, 400 tools (~356 KB), plain route
  cached   the same 400-tool list (the upstream adds "ttlMs": 60000, "cacheScope": "public")
           answered by the gateway from a federated route's merged cache (`upstreams: [direct]`,
           one upstream); nginx and HAProxy relay the same bytes from the upstream
  json1m   tools/call whose result is 1 MiB of JSON (one text content item)
  sse1m    tools/call answered with 1 MiB of SSE: 16 events of 64 KiB (15 notifications, then
           the JSON-RPC response), Content-Type text/event-stream
  read8m   resources/read of 8 MiB (JSON)
  small    bench.py's 250-byte tools/call and 300-byte answer (bench/mcp_call.lua), so that
           regressions of the common case show

Every workload has its own upstream listener (one nginx, one worker, CPU 1, serving the answers
as static files written by this script; the small one with bench.py's `return 200`), its own
gateway process (`workers: 1`, access log off, one plain route to one upstream, as bench.py's;
`cached`: the federated route) and its own listener in the one nginx (`proxy_buffers 32 16k`,
keepalive upstream) and the one HAProxy (`http-reuse always`) process. Proxies on CPU 0 (B.kProxyCpu),
wrk and the upstream on CPU 1 (B.kLoadCpu). Each request is a correct 2026-07-28 POST
(bench/large_call.lua; the small workload bench/mcp_call.lua). Before anything is measured,
curl checks that every proxy answers every workload with 200, the right Content-Type and every
byte of the expected answer (the gateway's cached list: the same 400 tools), and fails loudly
otherwise; the same probe runs again after the rounds.

Usage: large.py GATEWAY_BINARY RESULTS_DIR
Environment: BENCH_SECONDS (capacity run length, default 5), BENCH_LATENCY_SECONDS (the -c1
latency runs, default BENCH_SECONDS), BENCH_LARGE_RUNS (rounds, default 3, min 3),
BENCH_LARGE_WORKLOADS (a comma list of workloads to run, default all).
"""

import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402  (spawn, stopAll, waitPort, CPU readers, med, fmt, rotated)
import federation as F  # noqa: E402  (the tool lists, /metrics reader, environment lines)

kHere = B.kHere
kProtocol = "2026-07-28"
kSetups = ["gateway", "nginx", "haproxy"]
kRefs = ["nginx", "haproxy"]
kMiB = 1 << 20
kMeta = ('"_meta":{"io.modelcontextprotocol/protocolVersion":"' + kProtocol + '",'
         '"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},'
         '"io.modelcontextprotocol/clientCapabilities":{}')
kResourceUri = "file:///data/exports/events-2026-12.json"
kSseEvents = 16
kSseEventBytes = 64 * 1024

# Workloads: method, Mcp-Name, answer file (None: bench.py's `return 200`), Content-Type,
# wrk connections, goal.
kAllWorkloads = ["list90", "list356", "cached", "json1m", "sse1m", "read8m", "small"]
# BENCH_LARGE_WORKLOADS (comma list): a subset, for a quick look at one path.
kWorkloads = [w for w in os.environ.get("BENCH_LARGE_WORKLOADS", ",".join(kAllWorkloads)).split(",")
              if w in kAllWorkloads] or kAllWorkloads
kSpec = {
    "list90": {"method": "tools/list", "name": None, "file": "list90.json", "conns": 50,
               "goal": "list", "what": "tools/list, 100 tools, plain route"},
    "list356": {"method": "tools/list", "name": None, "file": "list356.json", "conns": 50,
                "goal": "list", "what": "tools/list, 400 tools, plain route"},
    "cached": {"method": "tools/list", "name": None, "file": "list356-cached.json", "conns": 50,
               "goal": "cached", "what": "tools/list, 400 tools: gateway from a federated "
                                         "route's cache; nginx/HAProxy relay the upstream's"},
    "json1m": {"method": "tools/call", "name": "export_events", "file": "call1m.json",
               "conns": 10, "goal": "large", "what": "tools/call, 1 MiB JSON result"},
    "sse1m": {"method": "tools/call", "name": "export_events_stream", "file": "call1m.sse",
              "conns": 10, "goal": "large", "what": "tools/call, 1 MiB SSE (16 × 64 KiB events)"},
    "read8m": {"method": "resources/read", "name": kResourceUri, "file": "read8m.json",
               "conns": 4, "goal": "large", "what": "resources/read, 8 MiB JSON"},
    "small": {"method": "tools/call", "name": "tool_a", "file": None, "conns": 50,
              "goal": "small", "what": "bench.py's 250-byte tools/call, 300-byte answer"},
}
kGoalText = {
    "list": "gateway CPU/req ≤ 1.2× the cheaper peer's and req/s ≥ 0.9× it",
    "cached": "gateway CPU/req ≤ 1.2× the cheaper peer's (relaying the same bytes)",
    "large": "gateway CPU/req ≤ 1.0× the cheaper peer's",
    "small": "gateway user CPU/req ≤ 0.8× nginx's",
}


# ---- answers and requests ---------------------------------------------------------------------

def filler(n, salt=0):
    """n characters of JSON-string-safe text that reads like an export: CSV rows separated by
    the two-character escape \\n (never cut inside an escape)."""
    rows, i = [], salt
    size = 0
    while size < n + 200:
        row = (f"2026-12-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:{(i * 7) % 60:02d}Z,"
               f"host-{i % 97:03d},GET /api/v2/items/{(i * 7919) % 100000},"
               f"{200 if i % 13 else 404},{3 + (i * 31) % 400}ms,"
               f"user-{(i * 131) % 5000:04d}\\n")
        rows.append(row)
        size += len(row)
        i += 1
    text = "".join(rows)[:n]
    if text.endswith("\\") and not text.endswith("\\\\"):
        text = text[:-1] + " "
    return text


def padded(head, tail, total, salt=0):
    out = head + filler(total - len(head) - len(tail), salt) + tail
    assert len(out) == total, (len(out), total)
    return out


def call1m():
    return padded('{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"',
                  '"}],"isError":false}}', kMiB)


def call1mSse():
    """16 events of exactly 64 KiB each (`data: <json>` + blank line): 15 notifications
    (progress and log messages, alternating), then the tools/call response."""
    events = []
    for i in range(1, kSseEvents):
        if i % 2:
            head = ('data: {"jsonrpc":"2.0","method":"notifications/progress","params":'
                    '{"progressToken":"bench-1","progress":' + str(i) + ',"total":'
                    + str(kSseEvents) + ',"message":"')
        else:
            head = ('data: {"jsonrpc":"2.0","method":"notifications/message","params":'
                    '{"level":"info","logger":"export","data":"')
        events.append(padded(head, '"}}\n\n', kSseEventBytes, i * 1000))
    events.append(padded('data: {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text",'
                         '"text":"', '"}],"isError":false}}\n\n', kSseEventBytes, 99999))
    body = "".join(events)
    assert len(body) == kMiB
    for e in events:  # each event's JSON parses
        json.loads(e[len("data: "):-2])
    return body


def read8m():
    return padded('{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"' + kResourceUri
                  + '","mimeType":"application/json","text":"', '"}]}}', 8 * kMiB)


def answers():
    """{file name: bytes} of every static answer."""
    out = {
        "list90.json": F.listBodyOf([F.kUps[0]], False, 100),
        "list356.json": F.listBodyOf(F.kUps, False, 100),
        "list356-cached.json": F.listBodyOf(F.kUps, True, 100),
        "call1m.json": call1m(),
        "call1m.sse": call1mSse(),
        "read8m.json": read8m(),
    }
    for name, text in out.items():
        if name.endswith(".json"):
            json.loads(text)
    return {k: v.encode() for k, v in out.items()}


def requestBody(workload):
    s = kSpec[workload]
    if s["method"] == "tools/list":
        params = "{" + kMeta + "}}"
    elif s["method"] == "tools/call":
        params = ('{"name":"' + s["name"] + '","arguments":{"query":"select * from events '
                  'where month = 12","format":"json"},' + kMeta + ',"progressToken":"bench-1"}}')
    else:
        params = '{"uri":"' + s["name"] + '",' + kMeta + "}}"
    body = '{"jsonrpc":"2.0","id":1,"method":"' + s["method"] + '","params":' + params + "}"
    json.loads(body)
    return body


def smallRequestBody():
    """bench/mcp_call.lua's body for tool_a (the curl probe of the small workload)."""
    head = ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tool_a",'
            '"arguments":{"q":"')
    tail = ('"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
            '"io.modelcontextprotocol/clientCapabilities":{}}}}')
    return head + "x" * (250 - len(head) - len(tail)) + tail


def contentType(workload):
    f = kSpec[workload]["file"]
    return "text/event-stream" if f and f.endswith(".sse") else "application/json"


# ---- configs ----------------------------------------------------------------------------------

def writeConfigs(tmp, ports):
    os.makedirs(f"{tmp}/files", exist_ok=True)
    temps = f"""client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy;
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 300s;"""
    common = """daemon off;
worker_processes 1;
worker_rlimit_nofile 16384;
events { worker_connections 4096; }
"""
    # The upstream: one listener per workload. nginx's static module answers a POST for a file
    # with 405, so `location = /mcp` rewrites to the workload's file and the 405 is turned into
    # an internal GET of the same file (`error_page 405 =200 $uri`; the POST body is discarded,
    # the connection kept).
    servers = []
    for w in kWorkloads:
        f = kSpec[w]["file"]
        if f is None:
            loc = f"""        location / {{
            default_type application/json;
            return 200 '{B.responseBody()}';
        }}"""
        else:
            loc = f"""        location = /mcp {{
            rewrite ^ /files/{f} last;
        }}
        location /files/ {{
            internal;
            alias {tmp}/files/;
            error_page 405 =200 $uri;
        }}"""
        servers.append(f"""    server {{
        listen 127.0.0.1:{ports['up-' + w]} backlog=4096;
{loc}
    }}""")
    with open(f"{tmp}/upstream.conf", "w") as fh:
        fh.write(common + f"""pid {tmp}/upstream.pid;
error_log {tmp}/upstream-error.log warn;
http {{
    {temps}
    types {{ application/json json; text/event-stream sse; }}
    default_type application/json;
    sendfile on;
    tcp_nopush on;
    etag off;
    open_file_cache max=64 inactive=3600s;
    open_file_cache_valid 3600s;
{chr(10).join(servers)}
}}
""")

    ups, srv = [], []
    for w in kWorkloads:
        ups.append(f"    upstream u_{w} {{ server 127.0.0.1:{ports['up-' + w]}; keepalive 64; }}")
        srv.append(f"""    server {{
        listen 127.0.0.1:{ports['nginx-' + w]} backlog=4096;
        location / {{
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffer_size 16k;
            proxy_buffers 32 16k;
            proxy_busy_buffers_size 64k;
            proxy_max_temp_file_size 0;
            proxy_pass http://u_{w};
        }}
    }}""")
    with open(f"{tmp}/nginx.conf", "w") as fh:
        fh.write(common + f"""pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
http {{
    {temps}
{chr(10).join(ups)}
{chr(10).join(srv)}
}}
""")

    fes = []
    for w in kWorkloads:
        fes.append(f"""frontend fe_{w}
    bind 127.0.0.1:{ports['haproxy-' + w]}
    default_backend be_{w}

backend be_{w}
    server s1 127.0.0.1:{ports['up-' + w]}
""")
    with open(f"{tmp}/haproxy.cfg", "w") as fh:
        fh.write("""global
    nbthread 1
    maxconn 4096

defaults
    mode http
    timeout connect 5s
    timeout client 300s
    timeout server 60s
    timeout http-keep-alive 300s
    http-reuse always

""" + "\n".join(fes))

    for w in kWorkloads:
        if w == "cached":
            route = """  - name: federated
    upstreams: [direct]
    names: keep"""
        else:
            route = """  - name: plain
    upstream: direct"""
        with open(f"{tmp}/gateway-{w}.yaml", "w") as fh:
            fh.write(f"""listen: 127.0.0.1:{ports['gateway-' + w]}
endpoint: /mcp
workers: 1
admin: 127.0.0.1:{ports['admin-' + w]}
limits:
  max_connections: 4096
  max_connections_per_client: 0
  keepalive_timeout: 300s
mcp:
  protocol_versions: [{kProtocol}]
upstreams:
  - name: direct
    endpoints: [127.0.0.1:{ports['up-' + w]}]
    max_idle_connections: 64
routes:
{route}
access_log:
  path: "off"
log_level: warn
drain_timeout: 1s
""")


# ---- probes -----------------------------------------------------------------------------------

def curl(tmp, port, workload, out):
    """One POST of the workload's request with curl; (status, Content-Type, body bytes)."""
    s = kSpec[workload]
    body = f"{tmp}/req-{workload}.json" if workload != "small" else f"{tmp}/req-small.json"
    argv = ["curl", "-sS", "--max-time", "30", "-o", out, "-w",
            "%{http_code} %{content_type}", "-X", "POST",
            "-H", "Content-Type: application/json",
            "-H", "Accept: application/json, text/event-stream",
            "-H", f"MCP-Protocol-Version: {kProtocol}",
            "-H", f"Mcp-Method: {s['method']}"]
    if s["name"]:
        argv += ["-H", f"Mcp-Name: {s['name']}"]
    argv += ["--data-binary", f"@{body}", f"http://127.0.0.1:{port}/mcp"]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        return None, f"curl failed ({p.returncode}): {p.stderr.strip()}", b""
    status, _, ctype = p.stdout.partition(" ")
    with open(out, "rb") as f:
        data = f.read()
    return int(status), ctype, data


def probe(tmp, ports, setup, workload, files):
    """Problems (empty = as expected) and the answer's size. Everyone must answer 200 with the
    workload's Content-Type and exactly the upstream's bytes; the gateway's cached federated
    list is its own merged answer: the same 400 tools (names and objects), ttlMs, public."""
    out = f"{tmp}/probe-{setup}-{workload}.out"
    status, ctype, data = curl(tmp, ports[f"{setup}-{workload}"], workload, out)
    if status is None:
        return [ctype], 0
    problems = []
    if status != 200:
        problems.append(f"HTTP {status}: {data[:300]!r}")
    if not ctype.startswith(contentType(workload)):
        problems.append(f"Content-Type {ctype!r}, expected {contentType(workload)}")
    f = kSpec[workload]["file"]
    want = files[f] if f else B.responseBody().encode()
    if setup == "gateway" and workload == "cached":
        try:
            got = json.loads(data)
            exp = json.loads(want)
            if got.get("id") != 1:
                problems.append(f"id {got.get('id')!r}, expected 1")
            if got["result"]["tools"] != exp["result"]["tools"]:
                problems.append(f"{len(got['result']['tools'])} tools, not the upstream's "
                                f"{len(exp['result']['tools'])} as listed")
            if got["result"].get("cacheScope") != "public" or not got["result"].get("ttlMs"):
                problems.append(f"ttlMs {got['result'].get('ttlMs')!r}, cacheScope "
                                f"{got['result'].get('cacheScope')!r}")
        except (ValueError, KeyError, TypeError) as e:
            problems.append(f"not a tools/list result ({e}): {data[:300]!r}")
    elif data != want:
        problems.append(f"{len(data):,} bytes, expected {len(want):,}"
                        + ("" if len(data) != len(want) else " (same length, different bytes)"))
    try:
        os.remove(out)
    except OSError:
        pass
    return problems, len(data)


def probeAll(tmp, ports, files, strict):
    bad, sizes = {}, {}
    for w in kWorkloads:
        for s in kSetups:
            p, n = probe(tmp, ports, s, w, files)
            sizes[(s, w)] = n
            if p:
                bad[(s, w)] = p
    if strict and bad:
        raise RuntimeError("setups do not answer as expected:\n" + "\n".join(
            f"{w} via {s}: " + "; ".join(p) for (s, w), p in bad.items()))
    return bad, sizes


# ---- measurement ------------------------------------------------------------------------------

def wrkArgv(tmp, port, workload, seconds, conns, latency):
    argv = ["taskset", "-c", B.kLoadCpu, "wrk", "-t1", f"-c{conns}", f"-d{seconds}s",
            "--timeout", "30s"]
    if workload == "small":
        argv += ["-s", os.path.join(kHere, "mcp_call.lua")]
    else:
        argv += ["-s", os.path.join(kHere, "large_call.lua")]
    if latency:
        argv.append("--latency")
    argv.append(f"http://127.0.0.1:{port}/mcp")
    if workload != "small":
        s = kSpec[workload]
        argv += ["--", s["method"], s["name"] or "-", f"{tmp}/req-{workload}.json"]
    return argv


def runWrk(tmp, port, workload, seconds, conns, latency):
    p = subprocess.run(wrkArgv(tmp, port, workload, seconds, conns, latency),
                       capture_output=True, text=True, timeout=seconds + 90)
    m = re.search(r"^BENCH (.*)$", p.stdout, re.M)
    if not m:
        raise RuntimeError(f"wrk printed no BENCH line:\n{p.stdout}\n{p.stderr}")
    r = {k: float(v) for k, v in (kv.split("=") for kv in m.group(1).split())}
    r["rps"] = r["requests"] / (r["duration_us"] / 1e6)
    r["errors"] = r["connect"] + r["read"] + r["write"] + r["status"] + r["timeout"]
    return r


def measure(tmp, procs, ports, setup, workload, seconds, conns, latency, answerBytes):
    pid = procs[setup if setup != "gateway" else f"gateway-{workload}"].pid
    admin = ports.get(f"admin-{workload}") if setup == "gateway" else None
    m0 = F.metrics(admin) if admin else None
    u0, s0 = B.cpuTicksSplit(pid)
    f0 = minorFaults(pid)
    l0 = B.cpuBusyTicks(B.kLoadCpu)
    seg0 = B.tcpOutSegs()
    r = runWrk(tmp, ports[f"{setup}-{workload}"], workload, seconds, conns, latency)
    seg1 = B.tcpOutSegs()
    l1 = B.cpuBusyTicks(B.kLoadCpu)
    u1, s1 = B.cpuTicksSplit(pid)
    f1 = minorFaults(pid)
    m1 = F.metrics(admin) if admin else None
    tick = os.sysconf("SC_CLK_TCK")
    n = r["requests"]
    r["user_s"] = (u1 - u0) / tick
    r["sys_s"] = (s1 - s0) / tick
    r["cpu_s"] = r["user_s"] + r["sys_s"]
    r["cpu_us"] = r["cpu_s"] / n * 1e6 if n else None
    r["user_us"] = r["user_s"] / n * 1e6 if n else None
    r["sys_us"] = r["sys_s"] / n * 1e6 if n else None
    r["busy_pct"] = 100 * r["cpu_s"] / (r["duration_us"] / 1e6)
    r["load_busy_pct"] = 100 * (l1[0] - l0[0]) / max(1, sum(l1) - sum(l0))
    r["segs_per_req"] = (seg1 - seg0) / n if n else None
    r["faults_per_req"] = (f1 - f0) / n if n else None
    # Answer bytes relayed (bodies of the completed requests) per proxy CPU second, in MB.
    r["mb_per_cpu_s"] = n * answerBytes / r["cpu_s"] / 1e6 if r["cpu_s"] > 0 else None
    r["mb_per_s"] = n * answerBytes / (r["duration_us"] / 1e6) / 1e6
    # Everything wrk read per completed request: the answer plus its head (plus the part of the
    # answers it cut at the end); below the answer's size means answers came short.
    # (bench/mcp_call.lua, the small workload, does not report bytes.)
    r["read_per_req"] = r["bytes"] / n if n and "bytes" in r else None
    r["short"] = "bytes" in r and bool(n) and r["bytes"] < n * answerBytes
    if m0 is not None:
        r["fetches"] = m1[0] - m0[0]
        reasons = {k: v - m0[2].get(k, 0.0) for k, v in m1[2].items()}
        r["reasons"] = {k: v for k, v in reasons.items() if v}
    return r


def minorFaults(pid):
    """Minor page faults of the process tree (/proc/PID/stat field 10): a proxy that takes
    fresh memory (mmap) for every large answer pays its first touch of each page here."""
    total = 0
    for p in B.processTree(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                total += int(f.read().rsplit(")", 1)[1].split()[7])
        except OSError:
            pass
    return total


def perRun(data, key, a, b):
    return [x[key] / y[key] if x.get(key) and y.get(key) else None
            for x, y in zip(data[a], data[b])]


def cheaperRatios(d, key):
    """Per round: the gateway's `key` ÷ that of the peer with the lower CPU per request in the
    same round, and which peer that was."""
    out, who = [], []
    for g, n, h in zip(d["gateway"], d["nginx"], d["haproxy"]):
        if not (n.get("cpu_us") and h.get("cpu_us")):
            out.append(None)
            who.append("?")
            continue
        peer, name = (n, "nginx") if n["cpu_us"] <= h["cpu_us"] else (h, "haproxy")
        out.append(g[key] / peer[key] if g.get(key) and peer.get(key) else None)
        who.append(name)
    return out, who


def checkoutState(gateway):
    """The checkout's uncommitted changes under gateway/ and CMakeLists.txt when the run starts,
    and how many of those files are newer than the binary (edited after it was built, so not in
    it)."""
    root = os.path.dirname(kHere)
    try:
        p = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "gateway",
                            "CMakeLists.txt"], capture_output=True, text=True, timeout=10)
        built = os.stat(gateway).st_mtime
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    changed = [line[3:].strip() for line in p.stdout.splitlines() if line.strip()]
    if not changed:
        return "working tree clean under gateway/ when the run started"
    newer = 0
    for path in changed:
        try:
            newer += os.stat(os.path.join(root, path)).st_mtime > built
        except OSError:
            pass
    return (f"when the run started: {len(changed)} uncommitted change(s) under gateway/ and "
            f"CMakeLists.txt, {newer} of them newer than the binary (so not built into it)")


# ---- main -------------------------------------------------------------------------------------

def main():
    gateway, resultsDir = sys.argv[1:3]
    # `git status` (the report's environment lines) must not rewrite the checkout's index.
    os.environ["GIT_OPTIONAL_LOCKS"] = "0"
    # The checkout's revision and state as the run starts (the report is written minutes later,
    # when someone may have committed or edited meanwhile): B.versions reads BENCH_GATEWAY_REV.
    global kStartState
    if not os.environ.get("BENCH_GATEWAY_REV"):
        p = subprocess.run(["git", "-C", os.path.dirname(kHere), "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True, timeout=10)
        os.environ["BENCH_GATEWAY_REV"] = p.stdout.strip() or "?"
    if not os.environ.get("BENCH_GATEWAY"):
        kStartState = checkoutState(gateway)
    seconds = int(os.environ.get("BENCH_SECONDS", "5"))
    latSeconds = int(os.environ.get("BENCH_LATENCY_SECONDS", str(seconds)))
    runs = max(3, int(os.environ.get("BENCH_LARGE_RUNS", "3")))
    tmp = tempfile.mkdtemp(prefix="mcp-bench-large-")
    stamp = datetime.datetime.now().strftime("%Y-%m-%d-%H%M")
    loads = [("start", B.loadavg())]
    names = ([f"up-{w}" for w in kWorkloads] + [f"{s}-{w}" for s in kSetups for w in kWorkloads]
             + [f"admin-{w}" for w in kWorkloads])
    ports = {n: B.freePort() for n in names}
    B.log(f"[large] work dir {tmp}")

    files = answers()
    writeConfigs(tmp, ports)
    # nginx's worker (user nobody when started as root) must reach the files: the work
    # directory is mkdtemp's 0700.
    os.chmod(tmp, 0o711)
    os.chmod(f"{tmp}/files", 0o755)
    for name, data in files.items():
        with open(f"{tmp}/files/{name}", "wb") as fh:
            fh.write(data)
        os.chmod(f"{tmp}/files/{name}", 0o644)
    for w in kWorkloads:
        with open(f"{tmp}/req-{w}.json", "w") as fh:
            fh.write(requestBody(w) if w != "small" else smallRequestBody())
    for w in kWorkloads:
        chk = subprocess.run([gateway, "check", "-c", f"{tmp}/gateway-{w}.yaml"],
                             capture_output=True, text=True)
        if chk.returncode != 0:
            raise RuntimeError(f"gateway check failed for {w}:\n{chk.stdout}{chk.stderr}")
    for conf in ("upstream", "nginx"):
        chk = subprocess.run(["nginx", "-t", "-p", tmp, "-e", f"{tmp}/{conf}-error.log", "-c",
                              f"{tmp}/{conf}.conf"], capture_output=True, text=True)
        if chk.returncode != 0:
            raise RuntimeError(f"nginx -t failed for {conf}.conf:\n{chk.stderr}")

    procs = {}
    procs["upstream"] = B.spawn(["nginx", "-p", tmp, "-e", f"{tmp}/upstream-error.log",
                                 "-c", f"{tmp}/upstream.conf"], f"{tmp}/upstream.out", B.kLoadCpu)
    for w in kWorkloads:
        B.waitPort(ports[f"up-{w}"], procs["upstream"], "upstream nginx")
    for w in kWorkloads:
        procs[f"gateway-{w}"] = B.spawn([gateway, "run", "-c", f"{tmp}/gateway-{w}.yaml"],
                                        f"{tmp}/gateway-{w}.log", B.kProxyCpu)
    procs["nginx"] = B.spawn(["nginx", "-p", tmp, "-e", f"{tmp}/nginx-error.log",
                              "-c", f"{tmp}/nginx.conf"], f"{tmp}/nginx.out", B.kProxyCpu)
    procs["haproxy"] = B.spawn(["haproxy", "-db", "-f", f"{tmp}/haproxy.cfg"],
                               f"{tmp}/haproxy.log", B.kProxyCpu)
    for w in kWorkloads:
        B.waitPort(ports[f"gateway-{w}"], procs[f"gateway-{w}"], f"gateway-{w}")
        B.waitPort(ports[f"admin-{w}"], procs[f"gateway-{w}"], f"gateway-{w} admin")
        B.waitPort(ports[f"nginx-{w}"], procs["nginx"], f"nginx ({w})")
        B.waitPort(ports[f"haproxy-{w}"], procs["haproxy"], f"haproxy ({w})")

    # The upstream itself first, then every proxy on every workload.
    for w in kWorkloads:
        ports[f"direct-{w}"] = ports[f"up-{w}"]
        p, _ = probe(tmp, ports, "direct", w, files)
        if p:
            raise RuntimeError(f"the upstream does not answer {w} as expected: " + "; ".join(p))
    _, sizes = probeAll(tmp, ports, files, True)
    B.log("[large] every proxy answers every workload with 200 and the full answer: "
          + ", ".join(f"{w} {sizes[('nginx', w)]:,} B" for w in kWorkloads)
          + (f" (gateway cached: {sizes[('gateway', 'cached')]:,} B)" if "cached" in kWorkloads
             else ""))

    B.log("[large] warm-up")
    for w in kWorkloads:
        for s in kSetups:
            runWrk(tmp, ports[f"{s}-{w}"], w, 1, kSpec[w]["conns"], False)

    cap = {w: {s: [] for s in kSetups} for w in kWorkloads}
    lat = {w: {s: [] for s in kSetups} for w in kWorkloads}
    for phase, data, secs, latency in (("capacity", cap, seconds, False),
                                       ("latency", lat, latSeconds, True)):
        loads.append((phase, B.loadavg()))
        for run in range(runs):
            for w in B.rotated(kWorkloads, run):
                conns = 1 if latency else kSpec[w]["conns"]
                for s in B.rotated(kSetups, run):
                    r = measure(tmp, procs, ports, s, w, secs, conns, latency, sizes[(s, w)])
                    data[w][s].append(r)
                    B.log(f"[large] {phase} run {run + 1} {w} {s}: {r['rps']:,.0f} req/s, "
                          f"{B.fmt(r['cpu_us'], 1)} µs CPU/req (user {B.fmt(r['user_us'], 1)}),"
                          f" busy {r['busy_pct']:.0f}%, p50 {r['p50_us']:.0f}µs, "
                          f"errors {r['errors']:.0f}" + (", SHORT ANSWERS" if r["short"] else "")
                          + (f", rejections {r['reasons']}" if r.get("reasons") else ""))
    loads.append(("end", B.loadavg()))
    rss = {n: B.rssKiB(p.pid) for n, p in procs.items() if n != "upstream"}
    after, _ = probeAll(tmp, ports, files, False)
    logs = {f"gateway-{w}": F.tailOf(f"{tmp}/gateway-{w}.log") for w in kWorkloads}
    B.stopAll()

    os.makedirs(resultsDir, exist_ok=True)
    report = os.path.join(resultsDir, f"{stamp}-large.md")
    summary = writeReport(report, gateway, seconds, latSeconds, runs, cap, lat, loads, sizes,
                          files, after, logs, rss)
    shutil.rmtree(tmp, ignore_errors=True)
    print(summary, flush=True)
    B.log(f"[large] report: {report}")


fmt = B.fmt
med = B.med
kStartState = ""  # the checkout's state under gateway/ when main() started


def verdict(ok):
    if ok is None:
        return "—"
    return "**MET**" if ok else "**NOT MET**"


def goalOf(w, cap):
    """(figures, verdict) for workload w: figures = [(label, per-round ratios, limit, sense)]."""
    d = cap[w]
    goal = kSpec[w]["goal"]
    cpu, who = cheaperRatios(d, "cpu_us")
    rps, _ = cheaperRatios(d, "rps")
    if goal == "list":
        figs = [("CPU/req ÷ cheaper peer", cpu, 1.2, "≤"), ("req/s ÷ cheaper peer", rps, 0.9, "≥")]
    elif goal == "cached":
        figs = [("CPU/req ÷ cheaper peer", cpu, 1.2, "≤")]
    elif goal == "large":
        figs = [("CPU/req ÷ cheaper peer", cpu, 1.0, "≤")]
    else:
        figs = [("user CPU/req ÷ nginx", perRun(d, "user_us", "gateway", "nginx"), 0.8, "≤")]
    oks = []
    for _, rs, limit, sense in figs:
        m = med(rs)
        oks.append(None if m is None else (m <= limit if sense == "≤" else m >= limit))
    ok = None if any(o is None for o in oks) else all(oks)
    return figs, ok, who


def writeReport(path, gateway, seconds, latSeconds, runs, cap, lat, loads, sizes, files, after,
                logs, rss):
    L = []
    w = L.append
    w(f"# mcp-gateway large-answer benchmark (issue #30) — "
      f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}\n")
    w("### Environment\n")
    w(f"- host: {platform.node()}, {os.cpu_count()} CPUs, kernel {platform.release()}")
    w("- load average (1/5/15 min) when each phase began: "
      + "; ".join(f"{n} {x}" for n, x in loads) + " — **the machine is shared; only same-round "
      "ratios are meaningful**")
    for k, x in B.versions(gateway).items():
        w(f"- {k}: {x}" + (f"; {kStartState}" if k == "mcp-gateway" and kStartState else ""))
    try:
        built = datetime.datetime.fromtimestamp(os.stat(gateway).st_mtime).strftime(
            "%Y-%m-%d %H:%M:%S")
    except OSError:
        built = "?"
    w(f"- gateway binary: `{gateway}` (file time {built})")
    w(f"- capacity: `wrk -t1 -c<N> -d{seconds}s` (N = 50 for the lists and the small call, 10 "
      f"for the 1 MiB answers, 4 for 8 MiB); latency: `wrk -t1 -c1 -d{latSeconds}s --latency`; "
      f"{runs} rounds per phase, each visiting every workload and proxy once (both orders "
      "rotated per round); every figure is the median over the rounds, every ratio the median of "
      "the same-round ratios")
    w("- proxies pinned to CPU 0 (`taskset -c 0`; `workers: 1` / one worker / `nbthread 1`); "
      "wrk and the upstream nginx on CPU 1")
    w("- CPU per request: utime + stime of the proxy's process tree (`/proc/PID/stat`) around "
      f"each run ÷ the requests wrk completed (clock-tick resolution "
      f"{1000 // os.sysconf('SC_CLK_TCK')} ms); MB per CPU-second: answer bytes of the completed "
      "requests (bodies, 10⁶ bytes) ÷ the proxy's CPU seconds")
    w("")
    w("### Setups and workloads\n")
    w("| proxy | how |")
    w("|---|---|")
    w("| gateway | one mcp-gateway process per workload: `workers: 1`, access log off, `log_level: "
      "warn`, one upstream (`max_idle_connections: 64`) and one plain route (`upstream: "
      "direct`); for `cached` the route is federated instead: `upstreams: [direct]`, `names: "
      "keep` (federation defaults) |")
    w("| nginx | one worker, one listener per workload, `upstream` block with `keepalive 64`, "
      "HTTP/1.1, `proxy_buffer_size 16k`, `proxy_buffers 32 16k`, `proxy_busy_buffers_size 64k`, "
      "buffering on and `proxy_max_temp_file_size 0` (no spill of large answers to temp files, "
      "as the gateway and HAProxy never write answers to disk) |")
    w("| haproxy | `nbthread 1`, one frontend/backend per workload, `http-reuse always`, default "
      "`tune.bufsize` |")
    w("")
    w("Upstream: one nginx worker (CPU 1), one listener per workload, `sendfile on`, the answers "
      "served as static files written at start (the POST is rewritten to the file and nginx's "
      "405 for a POST to a static file turned into an internal GET: `error_page 405 =200 $uri`), "
      "`Content-Length` answers; `small`: bench.py's `return 200` of its 300-byte result.\n")
    w("| workload | request | answer | bytes (nginx / HAProxy / gateway) | wrk -c |")
    w("|---|---|---|---|---|")
    tsz = [len(F.toolJson(u, i)) for u in F.kUps for i in range(100)]
    answerText = {
        "list90": f"100 tools (federation.py's `{F.kUps[0]}` list: title, description, "
                  "inputSchema of 2-5 described properties, annotations)",
        "list356": "400 tools (federation.py's `direct` list)",
        "cached": 'the 400 tools with `"ttlMs": 60000, "cacheScope": "public"`; the gateway '
                  "answers its merged copy from the route's cache",
        "json1m": "`result.content[0].text` of CSV-like rows: 1 MiB of JSON",
        "sse1m": f"`text/event-stream`: {kSseEvents} events × {kSseEventBytes // 1024} KiB "
                 "(`data:` + blank line); 15 notifications (`notifications/progress` and "
                 "`notifications/message`, alternating), then the JSON-RPC response",
        "read8m": f"`result.contents[0]` (`uri`, `mimeType: application/json`, `text`): 8 MiB",
        "small": "bench.py's 300-byte tools/call result",
    }
    for x in kWorkloads:
        s = kSpec[x]
        req = f"`{s['method']}`" + (f", `Mcp-Name: {s['name']}`" if s["name"] else "")
        if x == "small":
            req = ("bench.py's 250-byte `tools/call` (`bench/mcp_call.lua`, `Mcp-Name` rotating "
                   "over tool_a/b/c, all to the one upstream)")
        w(f"| {x} | {req} | {answerText[x]} | {sizes[('nginx', x)]:,} / "
          f"{sizes[('haproxy', x)]:,} / {sizes[('gateway', x)]:,} | {s['conns']} |")
    w("")
    w(f"Tools are {min(tsz)}-{max(tsz)} bytes of JSON each (median {med(tsz):.0f}). Requests "
      "(`bench/large_call.lua`): `POST /mcp`, `MCP-Protocol-Version: 2026-07-28`, `Mcp-Method`, "
      "`Mcp-Name` where the method has one, `Accept: application/json, text/event-stream`, a "
      "body with `params._meta` = protocolVersion, clientInfo `{\"name\":\"bench\",\"version\":"
      "\"1\"}`, clientCapabilities `{}` (tools/call also a `progressToken`). Before the rounds "
      "curl sent each workload's request to the upstream and to every proxy and checked status "
      "200, the Content-Type and every byte of the answer (the gateway's cached list: parsed, "
      "the same 400 tool objects in order, id 1, ttlMs and `public`).\n")

    w("## Headline\n")
    w("Goals (issue #30), as medians of same-round ratios; *cheaper peer* = whichever of nginx "
      "and HAProxy spent less CPU per request in that round (req/s is compared with that same "
      "peer).\n")
    w("| workload | goal | figure | " + " | ".join(f"round {i + 1}" for i in range(runs))
      + " | median | verdict |")
    w("|---|---|---|" + "---|" * (runs + 2))
    verdicts = {}
    for x in kWorkloads:
        figs, ok, who = goalOf(x, cap)
        verdicts[x] = ok
        for i, (label, rs, limit, sense) in enumerate(figs):
            m = med(rs)
            one = None if m is None else (m <= limit if sense == "≤" else m >= limit)
            cells = " | ".join(fmt(v, 2) + (f" ({p[0]})" if label.endswith("peer") else "")
                               for v, p in zip(rs, who))
            w(f"| {x if i == 0 else ''} | {kGoalText[kSpec[x]['goal']] if i == 0 else ''} | "
              f"{label} {sense} {limit:g} | {cells} | **{fmt(m, 2)}** | {verdict(one)} |")
    w("")
    w("(n) / (h): the cheaper peer in that round was nginx / HAProxy.\n")
    w("Overall: " + ", ".join(f"{x} {verdict(verdicts[x])}" for x in kWorkloads) + "\n")

    w("### All ratios (gateway ÷ peer, same round, median)\n")
    w("req/s and MB per CPU-second: > 1 = the gateway does more; CPU per request and latency: "
      "< 1 = the gateway is cheaper/faster.\n")
    keys = [("rps", "req/s", cap), ("cpu_us", "CPU/req", cap), ("user_us", "user CPU/req", cap),
            ("sys_us", "sys CPU/req", cap), ("mb_per_cpu_s", "MB per CPU-s", cap),
            ("p50_us", "p50 (-c1)", lat), ("p99_us", "p99 (-c1)", lat)]
    w("| workload | peer | " + " | ".join(k[1] for k in keys) + " |")
    w("|---|---|" + "---|" * len(keys))
    for x in kWorkloads:
        for ref in kRefs:
            w(f"| {x} | {ref} | " + " | ".join(
                fmt(med(perRun(d[x], key, "gateway", ref)), 2) for key, _, d in keys) + " |")
    w("")

    w("### Medians per workload and proxy\n")
    w("| workload | proxy | req/s | CPU µs/req | user µs/req | sys µs/req | MB per CPU-s | "
      "MB/s relayed | proxy busy | CPU 1 busy | TCP segs/req | page faults/req | p50 µs (-c1) | "
      "p99 µs (-c1) |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for x in kWorkloads:
        for s in kSetups:
            c, l_ = cap[x][s], lat[x][s]
            w(f"| {x} | {s} | {fmt(med([r['rps'] for r in c]))} | "
              f"**{fmt(med([r['cpu_us'] for r in c]), 1)}** | "
              f"{fmt(med([r['user_us'] for r in c]), 1)} | "
              f"{fmt(med([r['sys_us'] for r in c]), 1)} | "
              f"{fmt(med([r['mb_per_cpu_s'] for r in c]))} | "
              f"{fmt(med([r['mb_per_s'] for r in c]))} | "
              f"{fmt(med([r['busy_pct'] for r in c]))} % | "
              f"{fmt(med([r['load_busy_pct'] for r in c]))} % | "
              f"{fmt(med([r['segs_per_req'] for r in c]), 1)} | "
              f"{fmt(med([r['faults_per_req'] for r in c]), 1)} | "
              f"{fmt(med([r['p50_us'] for r in l_]))} | {fmt(med([r['p99_us'] for r in l_]))} |")
    w("")
    w("When the proxy's busy share is well below 100 %, CPU 1 (wrk reading the answers + the "
      "upstream) was the limit and req/s says little; CPU per request is the figure.\n")

    def table(title, data, key, digits, unit):
        F.roundsTable(w, title, data, key, digits, unit, runs,
                      {x: kSetups for x in kWorkloads}, kWorkloads)

    w("### Raw figures\n")
    table("requests per second (capacity runs)", cap, "rps", 0, "req/s")
    table("proxy CPU per request (µs)", cap, "cpu_us", 1, "µs")
    table("proxy user CPU per request (µs)", cap, "user_us", 1, "µs")
    table("proxy system CPU per request (µs)", cap, "sys_us", 1, "µs")
    table("answer MB relayed per proxy CPU-second", cap, "mb_per_cpu_s", 0, "MB")
    table("proxy CPU busy during the capacity run (% of one CPU)", cap, "busy_pct", 0, "%")
    table("CPU 1 (wrk + upstream) busy during the capacity run (%)", cap, "load_busy_pct", 0, "%")
    table("bytes wrk read per completed request (answer + head)", cap, "read_per_req", 0, "B")
    table("TCP segments sent per request (system-wide `Tcp: OutSegs` ÷ requests: every hop, "
          "both directions; loopback segments carry up to 64 KiB)", cap, "segs_per_req", 1,
          "segments")
    table("proxy minor page faults per request (`/proc/PID/stat` minflt; 4 KiB pages first "
          "touched: fresh memory taken per answer)", cap, "faults_per_req", 1, "faults")
    table("p50 latency (µs, wrk -c1)", lat, "p50_us", 0, "µs")
    table("p99 latency (µs, wrk -c1)", lat, "p99_us", 0, "µs")

    w("### Checks\n")
    errs = []
    for x in kWorkloads:
        for s in kSetups:
            e = sum(r["errors"] for d in (cap, lat) for r in d[x][s])
            short = sum(1 for d in (cap, lat) for r in d[x][s] if r["short"])
            if e or short:
                errs.append(f"{x}/{s}: {e:.0f} wrk errors, {short} run(s) with fewer bytes read "
                            "than the answers")
    w("- wrk errors (connect/read/write/non-2xx/timeout) and runs whose bytes read fell short "
      "of requests × answer size, over all runs: " + ("; ".join(errs) or "none"))
    rej = {}
    for x in kWorkloads:
        for d in (cap, lat):
            for r in d[x]["gateway"]:
                for k, v in r.get("reasons", {}).items():
                    rej[f"{x}/{k}"] = rej.get(f"{x}/{k}", 0.0) + v
    w("- gateway `mcp_gateway_rejections_total` increase over the runs, by workload/reason: "
      + (", ".join(f"{k} {v:.0f}" for k, v in sorted(rej.items())) or "none")
      + " (`client_closed` = requests wrk cut when its duration ended)")
    fetches = [r.get("fetches", 0) for d in (cap, lat) for r in d.get("cached", {}).get("gateway", [])]
    reqs = sum(r["requests"] for d in (cap, lat) for r in d.get("cached", {}).get("gateway", []))
    w(f"- `cached`: the federated route's list fetches upstream during its measured runs: "
      f"{sum(fetches):.0f} for {reqs:,.0f} requests (per run: "
      f"{', '.join(f'{x:.0f}' for x in fetches)}; the cache holds `ttlMs` 60 s, so one refresh "
      "a minute is expected)")
    w("- every proxy was probed again after the runs (the same curl checks): "
      + ("all answered as expected." if not after else "**" + "; ".join(
          f"{w_} via {s}: {', '.join(p)}" for (s, w_), p in after.items()) + "**"))
    w("- RSS after the runs (MiB): " + ", ".join(f"{n} {v / 1024:.1f}" for n, v in rss.items()))
    w("")
    F.writeLogs(w, logs)
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")

    S = ["", "Large-answer benchmark (issue #30), medians of same-round ratios", "",
         "| workload | gw÷nginx CPU | gw÷haproxy CPU | gw÷cheaper CPU | gw÷cheaper req/s | "
         "gw÷nginx user CPU | gw÷nginx p50 | gw÷haproxy p50 | verdict |",
         "|---|---|---|---|---|---|---|---|---|"]
    for x in kWorkloads:
        d = cap[x]
        S.append(f"| {x} | {fmt(med(perRun(d, 'cpu_us', 'gateway', 'nginx')), 2)} | "
                 f"{fmt(med(perRun(d, 'cpu_us', 'gateway', 'haproxy')), 2)} | "
                 f"{fmt(med(cheaperRatios(d, 'cpu_us')[0]), 2)} | "
                 f"{fmt(med(cheaperRatios(d, 'rps')[0]), 2)} | "
                 f"{fmt(med(perRun(d, 'user_us', 'gateway', 'nginx')), 2)} | "
                 f"{fmt(med(perRun(lat[x], 'p50_us', 'gateway', 'nginx')), 2)} | "
                 f"{fmt(med(perRun(lat[x], 'p50_us', 'gateway', 'haproxy')), 2)} | "
                 f"{verdict(verdicts[x]).strip('*')} |")
    S.append("")
    S.append("errors: " + ("; ".join(errs) or "none") + "; after-run probes: "
             + ("ok" if not after else ", ".join(f"{w_}/{s}" for s, w_ in after)))
    return "\n".join(S)


if __name__ == "__main__":
    B.runDriver(main, "[large] failed; the work directory /tmp/mcp-bench-large-* above is kept "
                      "(configs and every process's log)")
