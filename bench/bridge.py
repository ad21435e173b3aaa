#!/usr/bin/env python3
"""Era-bridge benchmark behind bench/run.sh (issue #26; never part of the test suite).

What the era bridge costs a 2026-07-28 tools/call on a warm session: the same gateway config in
front of the same upstream, once with the upstreams declared `era: legacy` (the gateway
initializes each once per worker, then sends every tools/call in its 2025 session:
MCP-Protocol-Version replaced by the session's, Mcp-Session-Id added, the JSON answer read whole
and given "resultType":"complete") and once as `era: modern` (forwarded as it is, streamed).
nginx and HAProxy route the same request to the same upstream as references.

  gateway-bridged  bench.py's gateway-header config (three routes on Mcp-Name, three upstream
                   names, one address), every upstream `era: legacy`
  gateway-modern   the same config, every upstream `era: modern`
  nginx, haproxy   bench.py's configs (map $http_mcp_name / ACLs on req.hdr(mcp-name))

The upstream is one nginx (one worker, CPU 1) that tells the requests apart by their headers:
no Mcp-Method and no Mcp-Session-Id = the gateway's `initialize` (answered with a 2025-06-18
initialize result and `Mcp-Session-Id: bench-session-1`), no Mcp-Method but Mcp-Session-Id =
its `notifications/initialized` (202); anything with Mcp-Method (every measured request, in all
four setups) = bench.py's 300-byte tools/call result, without resultType. The handshake
requests are written to an access log of their own (the measured requests are not logged), so
the report shows how many sessions were opened. The measured requests cost the upstream the
same in every setup: the same map lookup, the same two `if`s, the same `return`.

Proxies on CPU 0, wrk and the upstream on CPU 1. Rounds: each visits the bridged/modern pair
back to back (order flipped every other round) and nginx and HAProxy, the start rotated.

After the rounds, when the median bridged ÷ modern CPU ratio misses the goal (or always, or
never: BENCH_BRIDGE_PROFILE auto / 1 / 0), both gateways are sampled with `perf record -e
cpu-clock -g` under the capacity load and the report lists where their CPU goes, symbol by
symbol, and what the bridged one spends beyond the modern one.

Usage: bridge.py GATEWAY_BINARY RESULTS_DIR
Environment: BENCH_SECONDS (capacity run length, default 10), BENCH_LATENCY_SECONDS (default
BENCH_SECONDS), BENCH_BRIDGE_RUNS (rounds, default 5, min 3), BENCH_BRIDGE_PROFILE (auto
(default), 1, 0), BENCH_BRIDGE_PROFILE_SECONDS (default BENCH_SECONDS).
"""

import datetime
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402  (helpers: spawn, stopAll, waitPort, CPU readers, runWrk, med, fmt)

kBridged = "gateway-bridged"
kModern = "gateway-modern"
kSetups = [kBridged, kModern, "nginx", "haproxy"]
kGateways = [kBridged, kModern]
kRefs = ["nginx", "haproxy"]
kGoal = 1.1  # issue #26: bridged CPU per request <= 1.1 x modern
kSessionId = "bench-session-1"
kLegacyVersion = "2025-06-18"


def initializeResult():
    return json.dumps({"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": kLegacyVersion,
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": {"name": "bench-upstream", "version": "1.0.0"}}}, separators=(",", ":"))


def bridgedBody():
    """The 300-byte answer as the bridge gives it to the client: "resultType":"complete" added
    to the result (compared as JSON, so its place among the members does not matter)."""
    d = json.loads(B.responseBody())
    d["result"]["resultType"] = "complete"
    return d


def writeConfigs(tmp, ports, fdLimit):
    # bench.py's nginx and HAProxy configs (and its gateway-header config as the base of both
    # gateway setups); its upstream config is replaced by the era-aware one below. bench.py's
    # configs name an SSE upstream too: nothing is sent there (no port listens on it).
    B.writeConfigs(tmp, ports, fdLimit, 0)
    init = initializeResult()
    assert "'" not in init and "$" not in init
    with open(f"{tmp}/upstream.conf", "w") as f:
        f.write(f"""daemon off;
worker_processes 1;
worker_rlimit_nofile {fdLimit};
events {{ worker_connections 4096; }}
pid {tmp}/upstream.pid;
error_log {tmp}/upstream-error.log warn;
http {{
    client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy;
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 300s;
    # The gateway's 2025 handshake carries no Mcp-Method: initialize has no session id yet,
    # notifications/initialized has the one answered here. Every measured request (all four
    # setups) has Mcp-Method and gets the same 300-byte result.
    map "$http_mcp_method:$http_mcp_session_id" $mcp_kind {{
        "~^:$" init;
        "~^:." initialized;
        default call;
    }}
    log_format handshake '$mcp_kind $http_mcp_protocol_version $http_mcp_session_id';
    server {{
        listen 127.0.0.1:{ports['direct']} backlog=4096;
        location / {{
            default_type application/json;
            if ($mcp_kind = init) {{
                access_log {tmp}/handshake.log handshake;
                add_header Mcp-Session-Id {kSessionId} always;
                return 200 '{init}';
            }}
            if ($mcp_kind = initialized) {{
                access_log {tmp}/handshake.log handshake;
                return 202;
            }}
            return 200 '{B.responseBody()}';
        }}
    }}
}}
""")
    with open(f"{tmp}/gateway-header.yaml") as f:
        base = f.read()
    listen = f"listen: 127.0.0.1:{ports['gateway-header']}\n"
    assert base.count(listen) == 1
    for setup, era in ((kBridged, "legacy"), (kModern, "modern")):
        text = base.replace(listen, f"listen: 127.0.0.1:{ports[setup]}\n")
        # Every upstream of the config gets the era (up_sse is never used here).
        text, n = re.subn(r"(\n    max_idle_connections: 64)", r"\1\n    era: " + era, text)
        assert n == 4, n
        text += f"admin: 127.0.0.1:{ports[setup + '-admin']}\n"
        with open(f"{tmp}/{setup}.yaml", "w") as f:
            f.write(text)


def callOnce(port, name):
    head = ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"' + name +
            '","arguments":{"q":"')
    tail = '"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
    body = (head + "x" * (250 - len(head) - len(tail)) + tail).encode()
    req = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           "Accept: application/json, text/event-stream\r\n"
           "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
           f"Mcp-Name: {name}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
           ).encode() + body
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(req)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, payload = data.partition(b"\r\n\r\n")
    return head.decode(errors="replace"), payload


def probe(setup, port):
    """Problems (empty when fine): every route answers 200; the bridged gateway the result with
    "resultType":"complete" added, everyone else the upstream's 300 bytes unchanged."""
    problems = []
    for name in B.kNames:
        head, payload = callOnce(port, name)
        status = head.split("\r\n", 1)[0]
        if " 200 " not in status + " ":
            problems.append(f"{name}: {status!r} {payload[:200]!r}")
            continue
        if setup == kBridged:
            try:
                ok = json.loads(payload) == bridgedBody()
            except ValueError:
                ok = False
            if not ok:
                problems.append(f"{name}: not the bridged answer: {payload[:400]!r}")
            if re.search(r"(?im)^mcp-session-id:", head):
                problems.append(f"{name}: the server's Mcp-Session-Id reached the client")
        elif payload.decode(errors="replace") != B.responseBody():
            problems.append(f"{name}: not the upstream's 300 bytes: {payload[:400]!r}")
    return problems


def upstreamDirect(port):
    """The upstream itself answers the three kinds of request as meant (the harness's check)."""
    problems = []
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        body = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}'
        s.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, payload = data.partition(b"\r\n\r\n")
    if b" 200 " not in head or f"Mcp-Session-Id: {kSessionId}".encode() not in head or \
            json.loads(payload)["result"]["protocolVersion"] != kLegacyVersion:
        problems.append(f"initialize: {data[:400]!r}")
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        body = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
        s.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Mcp-Session-Id: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                  % (kSessionId.encode(), len(body)) + body)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    if not data.startswith(b"HTTP/1.1 202 "):
        problems.append(f"notifications/initialized: {data[:200]!r}")
    head, payload = callOnce(port, "tool_a")
    if payload.decode(errors="replace") != B.responseBody():
        problems.append(f"tools/call: {payload[:200]!r}")
    return problems


def handshakeLines(tmp):
    try:
        with open(f"{tmp}/handshake.log") as f:
            return [line.split() for line in f if line.strip()]
    except OSError:
        return []


def scrape(port):
    """mcp_gateway_rejections_total by reason, from the admin port's /metrics."""
    out = {}
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
    except OSError:
        return out
    for line in data.decode(errors="replace").splitlines():
        m = re.match(r'mcp_gateway_rejections_total\{(.*)\} ([0-9.e+]+)$', line)
        if m:
            r = re.search(r'reason="([^"]*)"', m.group(1))
            k = r.group(1) if r else "?"
            out[k] = out.get(k, 0.0) + float(m.group(2))
    return out


def measure(procs, ports, setup, seconds, latency):
    pid = procs[setup].pid
    admin = ports.get(setup + "-admin")
    m0 = scrape(admin) if admin else None
    u0, s0 = B.cpuTicksSplit(pid)
    l0 = B.cpuBusyTicks(B.kLoadCpu)
    seg0 = B.tcpOutSegs()
    r = B.runWrk(ports[setup], seconds, 1 if latency else 50, latency)
    seg1 = B.tcpOutSegs()
    l1 = B.cpuBusyTicks(B.kLoadCpu)
    u1, s1 = B.cpuTicksSplit(pid)
    tick = os.sysconf("SC_CLK_TCK")
    r["user_s"] = (u1 - u0) / tick
    r["sys_s"] = (s1 - s0) / tick
    r["cpu_s"] = r["user_s"] + r["sys_s"]
    n = r["requests"]
    r["cpu_us"] = r["cpu_s"] / n * 1e6 if n else None
    r["user_us"] = r["user_s"] / n * 1e6 if n else None
    r["sys_us"] = r["sys_s"] / n * 1e6 if n else None
    r["busy_pct"] = 100 * r["cpu_s"] / (r["duration_us"] / 1e6)
    r["segs_per_req"] = (seg1 - seg0) / n if n else None
    r["load_busy_pct"] = 100 * (l1[0] - l0[0]) / max(1, sum(l1) - sum(l0))
    if m0 is not None:
        m1 = scrape(admin)
        r["reasons"] = {k: v - m0.get(k, 0.0) for k, v in m1.items() if v - m0.get(k, 0.0)}
    return r


def roundOrder(run):
    pair = [kBridged, kModern] if run % 2 == 0 else [kModern, kBridged]
    units = B.rotated([pair, ["nginx"], ["haproxy"]], run)
    return [s for u in units for s in u]


# ---- profile ----------------------------------------------------------------------------------

# "   12.34%  mcp-gateway  [.] gw::http::scanFields  -  -" (the two trailing columns are
# perf's IPC figures, "-" without branch data).
kPerfRow = re.compile(r"^\s+([\d.]+)%\s+(\S+)\s+\[([.k])\]\s+(.*?)(?:\s+-\s+-)?\s*$")
kPerfLimit = 0.1  # percent: symbols below it are summed as "the rest"


def wrkArgv(port, seconds):
    return ["taskset", "-c", B.kLoadCpu, "wrk", "-t1", "-c50", f"-d{seconds}s",
            "-s", os.path.join(B.kHere, "mcp_call.lua"), f"http://127.0.0.1:{port}/mcp"]


def profileGateways(procs, ports, seconds, tmp):
    """perf record -e cpu-clock -g on each gateway while wrk -c50 runs the capacity load: self
    time per symbol (share of the gateway's samples, and that share of its CPU per request over
    the sampled window, in µs)."""
    out = {}
    for setup in kGateways:
        if shutil.which("perf") is None:
            out[setup] = {"error": "perf is not installed (Debian: linux-perf)"}
            continue
        pid = procs[setup].pid
        data = f"{tmp}/perf-{setup}.data"
        wrk = subprocess.Popen(wrkArgv(ports[setup], seconds + 2), stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        try:
            time.sleep(1)
            c0 = B.cpuTicks(pid)
            t0 = time.monotonic()
            rec = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "2000", "-g",
                                  "-p", str(pid), "-o", data, "--", "sleep", str(seconds)],
                                 capture_output=True, text=True, timeout=seconds + 60)
            elapsed = time.monotonic() - t0
            c1 = B.cpuTicks(pid)
            wrkOut = wrk.communicate(timeout=seconds + 60)[0]
        finally:
            if wrk.poll() is None:
                os.killpg(wrk.pid, signal.SIGKILL)
                wrk.wait()
        m = re.search(r"^BENCH (.*)$", wrkOut, re.M)
        r = {k: float(x) for k, x in (kv.split("=") for kv in m.group(1).split())} if m else {}
        rps = r["requests"] / (r["duration_us"] / 1e6) if r.get("duration_us") else 0
        reqs = rps * elapsed  # requests during the sampled window, at the run's average rate
        cpuPerReq = (c1 - c0) / os.sysconf("SC_CLK_TCK") * 1e6 / reqs if reqs else None
        if rec.returncode != 0 or not os.path.exists(data):
            out[setup] = {"error": (rec.stdout + rec.stderr).strip()[-500:]}
            continue
        rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children",
                              "-g", "none", "--sort", "dso,symbol", "--percent-limit",
                              str(kPerfLimit)], capture_output=True, text=True,
                             timeout=300).stdout
        with open(f"{tmp}/perf-{setup}.txt", "w") as f:
            f.write(rep)
        rows = []
        for line in rep.splitlines():
            x = kPerfRow.match(line)
            if x:
                rows.append((float(x.group(1)), x.group(2), x.group(4).strip(),
                             x.group(3) == "k"))
        out[setup] = {"rows": rows, "cpu_us_per_req": cpuPerReq, "rps": rps}
        B.log(f"[bridge] profile {setup}: {rps:,.0f} req/s, {B.fmt(cpuPerReq, 1)} µs/req, "
              f"{len(rows)} symbols ≥ {kPerfLimit}%")
    return out


def shortSym(sym, width=100):
    sym = re.sub(r"\(anonymous namespace\)::", "", sym)
    sym = re.sub(r"std::__cxx11::", "std::", sym)
    sym = sym.replace("|", "\\|")
    return sym if len(sym) <= width else sym[:width - 1] + "…"


def areaOf(dso, sym, kernel):
    """A coarse bucket for a perf symbol, so that totals survive broken call chains."""
    if kernel:
        return "kernel (TCP, syscalls, scheduler)"
    if dso == "[vdso]":
        return "clock_gettime (vdso)"
    if re.search(r"malloc|free|_int_|tcache|realloc|operator new|operator delete|calloc", sym):
        return "allocator (malloc/free/new/delete)"
    if re.search(r"^__(mem|str|wmem)", sym):
        return "libc mem*/str*"
    if "simdjson" in dso or "simdjson" in sym:
        return "simdjson"
    if "libevent" in dso:
        return "libevent"
    if sym.startswith("llhttp"):
        return "HTTP parser (llhttp)"
    if re.search(r"gw::mcp::bridge::|[Bb]ridge|LegacySessions|completeResult|resultObjectAt",
                 sym):
        return "gateway: bridge code"
    if sym.startswith("gw::") or dso == "mcp-gateway":
        return "gateway: everything else"
    if dso.startswith("libc"):
        return "libc, other"
    return "other (" + dso + ")"


def writeProfile(w, profile, seconds):
    fmt = B.fmt
    w("## Profile\n")
    w(f"`perf record -e cpu-clock -F 2000 -g -p <gateway pid> -- sleep {seconds}` on each gateway "
      "while `wrk -t1 -c50` runs the capacity load, then `perf report --no-children --sort "
      f"dso,symbol` (self time, symbols ≥ {kPerfLimit} %). *share* = the symbol's share of that "
      "gateway's samples (user and kernel); *µs/req* = that share of the gateway's CPU per "
      "request over the sampled window (utime + stime ÷ requests; perf's own cost is included, "
      "so these run a little above the capacity runs).\n")
    w("| setup | req/s while sampled | CPU µs/req while sampled |")
    w("|---|---|---|")
    for setup, p in profile.items():
        if "error" in p:
            w(f"| {setup} | perf failed: {p['error']} | |")
        else:
            w(f"| {setup} | {fmt(p['rps'])} | {fmt(p['cpu_us_per_req'], 2)} |")
    w("")
    ok = {s: p for s, p in profile.items() if "rows" in p}
    if len(ok) < 2:
        return

    def usOf(p, key):
        d = {}
        for share, dso, sym, kern in p["rows"]:
            k = key(dso, sym, kern)
            d[k] = d.get(k, 0.0) + (p["cpu_us_per_req"] or 0) * share / 100
        rest = 100 - sum(r[0] for r in p["rows"])
        return d, (p["cpu_us_per_req"] or 0) * max(0.0, rest) / 100

    b, m = ok[kBridged], ok[kModern]
    w("### By area (µs per request, self time summed)\n")
    per = {s: usOf(ok[s], areaOf) for s in kGateways}
    areas = sorted(set().union(*(d[0].keys() for d in per.values())),
                   key=lambda a: -(per[kBridged][0].get(a, 0) - per[kModern][0].get(a, 0)))
    w(f"| area | {kModern} | {kBridged} | bridged − modern |")
    w("|---|---|---|---|")
    for a in areas:
        x, y = per[kModern][0].get(a, 0), per[kBridged][0].get(a, 0)
        w(f"| {a} | {fmt(x, 2)} | {fmt(y, 2)} | {y - x:+.2f} |")
    w(f"| symbols below {kPerfLimit} % each | {fmt(per[kModern][1], 2)} | "
      f"{fmt(per[kBridged][1], 2)} | {per[kBridged][1] - per[kModern][1]:+.2f} |")
    w(f"| **total** | **{fmt(m['cpu_us_per_req'], 2)}** | **{fmt(b['cpu_us_per_req'], 2)}** | "
      f"**{(b['cpu_us_per_req'] or 0) - (m['cpu_us_per_req'] or 0):+.2f}** |")
    w("")
    w("### Bridged minus modern, by symbol (µs per request, self time)\n")
    w(f"The 25 symbols with the largest bridged excess; a symbol below {kPerfLimit} % in a "
      "profile counts as 0 there.\n")
    per = {s: usOf(ok[s], lambda dso, sym, kern: (dso, sym))[0] for s in kGateways}
    keys = set().union(*(d.keys() for d in per.values()))
    rows = sorted(keys, key=lambda k: -(per[kBridged].get(k, 0) - per[kModern].get(k, 0)))
    w("| symbol | dso | modern µs | bridged µs | bridged − modern |")
    w("|---|---|---|---|---|")
    for k in rows[:25]:
        x, y = per[kModern].get(k, 0), per[kBridged].get(k, 0)
        w(f"| `{shortSym(k[1], 80)}` | {k[0]} | {fmt(x, 2)} | {fmt(y, 2)} | {y - x:+.2f} |")
    w("")
    for setup in kGateways:
        p = ok[setup]
        w(f"### {setup}: top 20 symbols by self time\n")
        w("| share | µs/req | dso | symbol |")
        w("|---|---|---|---|")
        for share, dso, sym, kern in p["rows"][:20]:
            us = p["cpu_us_per_req"] * share / 100 if p["cpu_us_per_req"] else None
            w(f"| {share:.2f}% | {fmt(us, 2)} | {dso} | {'[k] ' if kern else ''}"
              f"`{shortSym(sym)}` |")
        w("")


def main():
    gateway, resultsDir = sys.argv[1:3]
    seconds = int(os.environ.get("BENCH_SECONDS", "10"))
    latSeconds = int(os.environ.get("BENCH_LATENCY_SECONDS", str(seconds)))
    runs = max(3, int(os.environ.get("BENCH_BRIDGE_RUNS", "5")))
    import resource
    fdLimit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    tmp = tempfile.mkdtemp(prefix="mcp-bench-bridge-")
    ports = {s: B.freePort() for s in B.kSetups + ["sse", "nginx-sse"] + kGateways
             + [g + "-admin" for g in kGateways]}
    stamp = datetime.datetime.now().strftime("%Y-%m-%d-%H%M")
    loads = [("start", B.loadavg())]
    B.log(f"[bridge] work dir {tmp}; ports {ports}")
    writeConfigs(tmp, ports, fdLimit)
    for setup in kGateways:
        chk = subprocess.run([gateway, "check", "-c", f"{tmp}/{setup}.yaml"],
                             capture_output=True, text=True)
        if chk.returncode != 0:
            raise RuntimeError(f"gateway check failed for {setup}:\n{chk.stdout}{chk.stderr}")

    procs = {}
    procs["upstream"] = B.spawn(["nginx", "-p", tmp, "-e", f"{tmp}/upstream-error.log",
                                 "-c", f"{tmp}/upstream.conf"], f"{tmp}/upstream.out", B.kLoadCpu)
    B.waitPort(ports["direct"], procs["upstream"], "upstream nginx")
    problems = upstreamDirect(ports["direct"])
    if problems:
        raise RuntimeError("the upstream does not answer as meant:\n" + "\n".join(problems))
    os.truncate(f"{tmp}/handshake.log", 0)  # the check's own lines
    for setup in kGateways:
        procs[setup] = B.spawn([gateway, "run", "-c", f"{tmp}/{setup}.yaml"],
                               f"{tmp}/{setup}.log", B.kProxyCpu)
    procs["nginx"] = B.spawn(["nginx", "-p", tmp, "-e", f"{tmp}/nginx-error.log",
                              "-c", f"{tmp}/nginx.conf"], f"{tmp}/nginx.out", B.kProxyCpu)
    procs["haproxy"] = B.spawn(["haproxy", "-db", "-f", f"{tmp}/haproxy.cfg"],
                               f"{tmp}/haproxy.log", B.kProxyCpu)
    for setup in kSetups:
        B.waitPort(ports[setup], procs[setup], setup)
    for setup in kGateways:
        B.waitPort(ports[setup + "-admin"], procs[setup], setup + " admin")
    for setup in kSetups:
        problems = probe(setup, ports[setup])
        if problems:
            raise RuntimeError(f"{setup} does not answer as expected:\n" + "\n".join(problems))
    hsProbe = handshakeLines(tmp)
    B.log(f"[bridge] all setups answer as expected; upstream handshake requests so far: "
          f"{[l[0] for l in hsProbe]}")

    B.log("[bridge] warm-up")
    for setup in kSetups:
        B.runWrk(ports[setup], 1, 50, False)
    hsWarm = len(handshakeLines(tmp))

    cap = {s: [] for s in kSetups}
    lat = {s: [] for s in kSetups}
    loads.append(("capacity", B.loadavg()))
    for run in range(runs):
        for setup in roundOrder(run):
            r = measure(procs, ports, setup, seconds, False)
            cap[setup].append(r)
            B.log(f"[bridge] capacity run {run + 1} {setup}: {r['rps']:,.0f} req/s, "
                  f"{B.fmt(r['cpu_us'], 1)} µs CPU/req (user {B.fmt(r['user_us'], 1)}, sys "
                  f"{B.fmt(r['sys_us'], 1)}), busy {r['busy_pct']:.0f}%, errors {r['errors']:.0f}")
    loads.append(("latency", B.loadavg()))
    for run in range(runs):
        for setup in roundOrder(run):
            r = measure(procs, ports, setup, latSeconds, True)
            lat[setup].append(r)
            B.log(f"[bridge] latency run {run + 1} {setup}: p50 {r['p50_us']:.0f}µs "
                  f"p99 {r['p99_us']:.0f}µs")
    profileMode = os.environ.get("BENCH_BRIDGE_PROFILE", "auto")
    profileSeconds = int(os.environ.get("BENCH_BRIDGE_PROFILE_SECONDS", str(seconds)))
    ratio = B.med(perRun(cap, "cpu_us", kBridged, kModern))
    profile = None
    if profileMode == "1" or (profileMode == "auto" and ratio is not None and ratio > kGoal):
        loads.append(("profile", B.loadavg()))
        profile = profileGateways(procs, ports, profileSeconds, tmp)
    hsEnd = handshakeLines(tmp)
    after = {}
    for setup in kSetups:
        p = probe(setup, ports[setup])
        if p:
            after[setup] = p
    loads.append(("end", B.loadavg()))
    logs = {}
    for setup in kGateways:
        try:
            with open(f"{tmp}/{setup}.log", errors="replace") as f:
                logs[setup] = [l.rstrip() for l in f if "[warn" in l or "[err" in l][:10]
        except OSError:
            logs[setup] = []
    B.stopAll()

    os.makedirs(resultsDir, exist_ok=True)
    report = os.path.join(resultsDir, f"{stamp}-bridge.md")
    summary = writeReport(report, gateway, seconds, latSeconds, runs, cap, lat, loads,
                          hsProbe, hsWarm, hsEnd, after, logs, profile, profileSeconds)
    shutil.rmtree(tmp, ignore_errors=True)
    print(summary, flush=True)
    B.log(f"[bridge] report: {report}")


def perRun(data, key, a, b):
    return [x[key] / y[key] if x.get(key) and y.get(key) else None
            for x, y in zip(data[a], data[b])]


def writeReport(path, gateway, seconds, latSeconds, runs, cap, lat, loads, hsProbe, hsWarm,
                hsEnd, after, logs, profile, profileSeconds):
    fmt, med = B.fmt, B.med
    v = B.versions(gateway)
    L = []
    w = L.append
    w(f"# mcp-gateway era-bridge benchmark (issue #26) — "
      f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}\n")
    w("## Environment\n")
    w(f"- host: {platform.node()}, {os.cpu_count()} CPUs, kernel {platform.release()}")
    w("- load average (1/5/15 min) when each phase began: "
      + "; ".join(f"{n} {x}" for n, x in loads)
      + " — **shared machine: only same-round ratios are meaningful**")
    for k, x in v.items():
        w(f"- {k}: {x}")
    w(f"- capacity: `wrk -t1 -c50 -d{seconds}s`; latency: `wrk -t1 -c1 -d{latSeconds}s "
      f"--latency`; {runs} rounds, each visiting the bridged/modern pair back to back (order "
      "flipped every other round), nginx and HAProxy (start rotated)")
    w("- proxies pinned with `taskset -c 0` (one worker / thread each); wrk and the upstream "
      "nginx on CPU 1")
    w("- request: bench.py's 250-byte 2026-07-28 `tools/call` (`bench/mcp_call.lua`, `Mcp-Name` "
      "rotating over tool_a/b/c: three routes, three upstream names, one upstream address)\n")
    w("| setup | what |")
    w("|---|---|")
    w(f"| {kBridged} | mcp-gateway, bench.py's gateway-header config with every upstream "
      "`era: legacy`: one 2025 session per upstream name and worker (opened once, before the "
      "measured runs); each call goes in it with `MCP-Protocol-Version: 2025-06-18` and "
      "`Mcp-Session-Id`, the JSON answer read whole and given `\"resultType\":\"complete\"` |")
    w(f"| {kModern} | the same config with every upstream `era: modern`: forwarded as it is |")
    w("| nginx | bench.py's nginx (`map $http_mcp_name` → 3 upstream blocks, keepalive 64) |")
    w("| haproxy | bench.py's HAProxy (ACLs on `req.hdr(mcp-name)`, `http-reuse always`) |")
    w("")
    w("Upstream: one nginx. Requests with `Mcp-Method` (every measured one, in all four "
      "setups) get bench.py's 300-byte tools/call result (no `resultType`); without "
      "`Mcp-Method` and `Mcp-Session-Id` (the gateway's `initialize`) a 2025-06-18 initialize "
      f"result and `Mcp-Session-Id: {kSessionId}`; without `Mcp-Method` but with a session id "
      "(`notifications/initialized`) 202. The measured requests cost it the same in every "
      "setup.\n")

    w("## Headline\n")
    rs = perRun(cap, "cpu_us", kBridged, kModern)
    m = med(rs)
    verdict = "—" if m is None else ("**MET**" if m <= kGoal else "**NOT MET**")
    w(f"Issue #26: bridged ÷ modern CPU per request = **{fmt(m, 3)}** (median of the per-round "
      f"ratios {', '.join(fmt(x, 3) for x in rs)}; goal ≤ {kGoal}) → {verdict}\n")
    w("| setup | req/s | CPU µs/req | user µs/req | sys µs/req | proxy busy | p50 µs | p99 µs |")
    w("|---|---|---|---|---|---|---|---|")
    for s in kSetups:
        w(f"| {s} | {fmt(med([r['rps'] for r in cap[s]]))} | "
          f"**{fmt(med([r['cpu_us'] for r in cap[s]]), 2)}** | "
          f"{fmt(med([r['user_us'] for r in cap[s]]), 2)} | "
          f"{fmt(med([r['sys_us'] for r in cap[s]]), 2)} | "
          f"{fmt(med([r['busy_pct'] for r in cap[s]]))} % | "
          f"{fmt(med([r['p50_us'] for r in lat[s]]))} | "
          f"{fmt(med([r['p99_us'] for r in lat[s]]))} |")
    w("")
    w("Medians over the rounds. Same-round ratios (median over rounds; CPU and latency: < 1 = "
      "the first is cheaper/faster; req/s: > 1 = the first is faster):\n")
    w("| ratio | req/s | CPU per request | user CPU per request | p50 | p99 |")
    w("|---|---|---|---|---|---|")
    pairs = [(kBridged, kModern)] + [(g, r) for g in kGateways for r in kRefs]
    for a, b in pairs:
        w(f"| {a} ÷ {b} | {fmt(med(perRun(cap, 'rps', a, b)), 3)} | "
          f"{fmt(med(perRun(cap, 'cpu_us', a, b)), 3)} | "
          f"{fmt(med(perRun(cap, 'user_us', a, b)), 3)} | "
          f"{fmt(med(perRun(lat, 'p50_us', a, b)), 3)} | "
          f"{fmt(med(perRun(lat, 'p99_us', a, b)), 3)} |")
    w("")

    def table(title, data, key, digits, unit):
        w(f"### {title}\n")
        w("| setup | " + " | ".join(f"round {i + 1}" for i in range(runs)) + " | median |")
        w("|" + "---|" * (runs + 2))
        for s in kSetups:
            vals = [r.get(key) for r in data[s]]
            w(f"| {s} | " + " | ".join(fmt(x, digits) for x in vals)
              + f" | **{fmt(med(vals), digits)}** {unit} |")
        w("")

    w("## Raw figures\n")
    table("requests per second (wrk -c50)", cap, "rps", 0, "req/s")
    table("proxy CPU per request (µs; utime + stime of the process tree ÷ requests, clock-tick "
          f"resolution {1000 // os.sysconf('SC_CLK_TCK')} ms)", cap, "cpu_us", 2, "µs")
    table("proxy user CPU per request (µs)", cap, "user_us", 2, "µs")
    table("proxy system CPU per request (µs)", cap, "sys_us", 2, "µs")
    table("proxy CPU busy during the capacity run (% of one CPU)", cap, "busy_pct", 0, "%")
    table("CPU 1 (wrk + upstream) busy during the capacity run (%)", cap, "load_busy_pct", 0, "%")
    table("TCP segments sent per request (system-wide `Tcp: OutSegs` ÷ requests; 4.0 = one "
          "segment per hop and direction, no pure ACKs)", cap, "segs_per_req", 2, "segments")
    table("p50 latency (µs, wrk -c1)", lat, "p50_us", 0, "µs")
    table("p99 latency (µs, wrk -c1)", lat, "p99_us", 0, "µs")
    w("### bridged ÷ modern, per round\n")
    w("| figure | " + " | ".join(f"round {i + 1}" for i in range(runs)) + " | median |")
    w("|" + "---|" * (runs + 2))
    for label, data, key in (("CPU per request", cap, "cpu_us"), ("user CPU", cap, "user_us"),
                             ("system CPU", cap, "sys_us"), ("req/s", cap, "rps"),
                             ("p50", lat, "p50_us"), ("p99", lat, "p99_us")):
        rs = perRun(data, key, kBridged, kModern)
        w(f"| {label} | " + " | ".join(fmt(x, 3) for x in rs) + f" | **{fmt(med(rs), 3)}** |")
    w("")

    w("## Checks\n")
    kinds = [l[0] for l in hsEnd]
    w(f"- upstream handshake requests (its handshake log): {kinds.count('init')} `initialize`, "
      f"{kinds.count('initialized')} `notifications/initialized` over the whole run "
      f"({len(hsProbe)} of them during the probes, {len(hsEnd) - hsWarm} during the measured "
      "runs). The bridged gateway opens one session per upstream name (three) in its one "
      "worker; more means sessions were dropped and opened again.")
    w("- every setup was probed before and after the runs (status 200 on all three routes; "
      "the bridged gateway: the upstream's result with `\"resultType\":\"complete\"` added and "
      "no server `Mcp-Session-Id` passed on; the others: the upstream's 300 bytes unchanged): "
      + ("all answered as expected both times." if not after else
         "**after the runs: " + "; ".join(f"{s}: {', '.join(p)}" for s, p in after.items())
         + "**"))
    errs = {s: sum(r["errors"] for d in (cap, lat) for r in d[s]) for s in kSetups}
    w("- wrk errors (connect/read/write/non-2xx/timeout) over all runs: "
      + ", ".join(f"{s} {e:.0f}" for s, e in errs.items()))
    for s in kGateways:
        tot = {}
        for d in (cap, lat):
            for r in d[s]:
                for k, x in r.get("reasons", {}).items():
                    tot[k] = tot.get(k, 0.0) + x
        w(f"- {s} `mcp_gateway_rejections_total` increase over its runs: "
          + (", ".join(f"{k} {x:.0f}" for k, x in sorted(tot.items())) or "none")
          + " (`client_closed` = requests wrk cut when its duration ended)")
    for s, lines in logs.items():
        if lines:
            w(f"- {s} log warnings/errors (first {len(lines)}): "
              + "; ".join(f"`{x}`" for x in lines))
    w("")
    if profile:
        writeProfile(w, profile, profileSeconds)
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")

    S = ["", "Era-bridge benchmark (issue #26), medians", "",
         "| setup | req/s | CPU µs/req | p50 µs | p99 µs |", "|---|---|---|---|---|"]
    for s in kSetups:
        S.append(f"| {s} | {fmt(med([r['rps'] for r in cap[s]]))} | "
                 f"{fmt(med([r['cpu_us'] for r in cap[s]]), 2)} | "
                 f"{fmt(med([r['p50_us'] for r in lat[s]]))} | "
                 f"{fmt(med([r['p99_us'] for r in lat[s]]))} |")
    rs = perRun(cap, "cpu_us", kBridged, kModern)
    S.append("")
    S.append(f"bridged ÷ modern CPU per request: {fmt(med(rs), 3)} (per round "
             f"{', '.join(fmt(x, 3) for x in rs)}; goal ≤ {kGoal})")
    return "\n".join(S)


if __name__ == "__main__":
    B.runDriver(main, "[bridge] failed; the work directory /tmp/mcp-bench-bridge-* above is kept "
                      "(configs and every process's log)")
