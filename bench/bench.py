#!/usr/bin/env python3
"""Benchmark driver behind bench/run.sh (never part of the test suite).

Starts one nginx upstream (JSON), one SSE upstream (bench/sse_upstream.c) and four proxies in
front of them on 127.0.0.1 (ports picked at run time), runs wrk and bench/sse_client.c
round-robin across the setups, and writes a Markdown report plus a gnuplot PNG to
bench/results/. Every child is started in its own process group and killed + reaped on exit.

Usage: bench.py GATEWAY_BINARY RESULTS_DIR SSE_UPSTREAM_BINARY SSE_CLIENT_BINARY
Environment: BENCH_SECONDS (capacity run length, default 10), BENCH_RUNS (default 3, min 3),
BENCH_LATENCY_SECONDS (default = BENCH_SECONDS), BENCH_IDLE_CONNS (default 10000),
BENCH_SSE_STREAMS (gapped streams per setup and round, default 5), BENCH_SSE_EVENTS (events in
the fast stream, default 100000), BENCH_SSE_SECONDS (minimum length of each fast-stream run,
default 3).
"""

import datetime
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

kHere = os.path.dirname(os.path.abspath(__file__))
kProxyCpu = "0"
kLoadCpu = "1"
kResponseBytes = 300
kSetups = ["direct", "gateway-header", "gateway-verify", "gateway-legacy", "nginx", "haproxy"]
kProxies = kSetups[1:]
kGateways = ["gateway-header", "gateway-verify", "gateway-legacy"]
kLegacy = "gateway-legacy"  # the same call without MCP headers: routed from the body (issue #13)
kNames = ["tool_a", "tool_b", "tool_c"]
kSseGapped = "tool_sse_gapped"  # Mcp-Name of the 100-events-10-ms-apart stream
kSseFast = "tool_sse_fast"      # Mcp-Name of the as-fast-as-possible stream
kGappedEvents = 100
kGapMs = 10
kEventBytes = 128
kFirstEventTargetUs = 1000      # issue #5: gateway SSE first event <= 1 ms (gapped stream)
kFdReserve = 500                # descriptors per proxy not spent on idle client connections

children = []  # Popen objects, each the leader of its own process group


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def freePort():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn(argv, logfile, cpu, stdin=subprocess.DEVNULL, stdout=None):
    out = open(logfile, "ab")
    p = subprocess.Popen(["taskset", "-c", cpu] + argv, stdin=stdin,
                         stdout=stdout if stdout is not None else out, stderr=out,
                         start_new_session=True)
    children.append(p)
    return p


def stopAll():
    for p in children:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + 5
    for p in children:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
    children.clear()


def waitPort(port, proc, what, seconds=15):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {port}")


def processTree(pid):
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return pids


def cpuTicksSplit(pid):
    """(utime, stime) in clock ticks, summed over the process tree (stat fields 14, 15)."""
    user = system = 0
    for p in processTree(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            user += int(fields[11])
            system += int(fields[12])
        except OSError:
            pass
    return user, system


def cpuTicks(pid):
    return sum(cpuTicksSplit(pid))


def tcpOutSegs():
    """The system-wide Tcp OutSegs counter of /proc/net/snmp (a "Tcp:" header line, then a
    "Tcp:" value line)."""
    with open("/proc/net/snmp") as f:
        tcp = [line.split() for line in f if line.startswith("Tcp:")]
    return int(tcp[1][tcp[0].index("OutSegs")])


def cpuBusyTicks(cpu):
    """Busy and idle clock ticks of one CPU since boot, from its /proc/stat line (busy = user,
    nice, system, irq, softirq, steal; idle = idle, iowait)."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith(f"cpu{cpu} "):
                v = [int(x) for x in line.split()[1:9]]
                return v[0] + v[1] + v[2] + v[5] + v[6] + v[7], v[3] + v[4]
    raise RuntimeError(f"cpu{cpu} not in /proc/stat")


def rssKiB(pid):
    total = 0
    for p in processTree(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def responseBody():
    head = '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"'
    tail = '"}],"isError":false}}'
    return head + "y" * (kResponseBytes - len(head) - len(tail)) + tail


def writeConfigs(tmp, ports, fdLimit, idleConns):
    # Room for the scale phase's idle clients plus wrk's 50 and the upstream connections.
    conns = max(1024, fdLimit - 64, idleConns + 1000)
    common = f"""daemon off;
worker_processes 1;
worker_rlimit_nofile {fdLimit};
events {{ worker_connections {conns}; }}
"""
    temps = f"""client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy;
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 300s;
"""
    with open(f"{tmp}/upstream.conf", "w") as f:
        f.write(common.replace(f"worker_connections {conns}", "worker_connections 4096") + f"""
pid {tmp}/upstream.pid;
error_log {tmp}/upstream-error.log warn;
http {{
    {temps}
    server {{
        listen 127.0.0.1:{ports['direct']} backlog=4096;
        location / {{
            default_type application/json;
            return 200 '{responseBody()}';
        }}
    }}
}}
""")
    ups = "\n".join(f"""    upstream {n} {{ server 127.0.0.1:{ports['direct']}; keepalive 64; }}"""
                    for n in ["up_a", "up_b", "up_c"])
    ups += f"""\n    upstream up_sse {{ server 127.0.0.1:{ports['sse']}; keepalive 64; }}"""
    with open(f"{tmp}/nginx.conf", "w") as f:
        f.write(common + f"""
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
http {{
    {temps}
{ups}
    map $http_mcp_name $mcp_backend {{
        tool_a up_a;
        tool_b up_b;
        tool_c up_c;
        {kSseGapped} up_sse;
        {kSseFast} up_sse;
        default up_c;
    }}
    server {{
        listen 127.0.0.1:{ports['nginx']} backlog=4096;
        location / {{
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering on;
            proxy_pass http://$mcp_backend;
        }}
    }}
    # The SSE phase: same worker, same map, but unbuffered (proxy_buffering takes no variable,
    # so it gets its own listener; the JSON phase above keeps nginx's default buffering).
    server {{
        listen 127.0.0.1:{ports['nginx-sse']} backlog=4096;
        location / {{
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_pass http://$mcp_backend;
        }}
    }}
}}
""")
    # Idle client connections hold one descriptor each, but HAProxy budgets 2 per maxconn (client
    # + server side) and by default refuses to start when that exceeds the open-files limit
    # (which cannot always be raised: a 20000 hard limit caps maxconn at ~9900). `ulimit-n` pins
    # its limit to ours and `no strict-limits` turns the refusal into an ALERT in its log, so it
    # holds idleConns idle clients like the others.
    maxconn = max(1000, idleConns + 100)
    with open(f"{tmp}/haproxy.cfg", "w") as f:
        f.write(f"""global
    nbthread 1
    maxconn {maxconn}
    ulimit-n {fdLimit}
    no strict-limits

defaults
    mode http
    timeout connect 5s
    timeout client 300s
    timeout server 60s
    timeout http-keep-alive 300s
    http-reuse always

frontend fe
    bind 127.0.0.1:{ports['haproxy']}
    acl name_a req.hdr(mcp-name) -m str tool_a
    acl name_b req.hdr(mcp-name) -m str tool_b
    acl name_c req.hdr(mcp-name) -m str tool_c
    use_backend be_a if name_a
    use_backend be_b if name_b
    use_backend be_c if name_c
    acl name_sse req.hdr(mcp-name) -m str {kSseGapped} {kSseFast}
    use_backend be_sse if name_sse
    default_backend be_c

backend be_a
    server s1 127.0.0.1:{ports['direct']}
backend be_b
    server s1 127.0.0.1:{ports['direct']}
backend be_c
    server s1 127.0.0.1:{ports['direct']}
# HAProxy sends with MSG_MORE by default, which holds a lone small event in the kernel for up
# to ~200 ms; http-no-delay is its documented switch for interactive streams (SSE backend only).
backend be_sse
    option http-no-delay
    server s1 127.0.0.1:{ports['sse']}
""")
    for setup, verify in (("gateway-header", "false"), ("gateway-verify", "true"),
                          (kLegacy, "false")):
        upstreams = "\n".join(f"""  - name: up_{c}
    endpoints: [127.0.0.1:{ports['direct']}]
    max_idle_connections: 64""" for c in "abc")
        upstreams += f"""
  - name: up_sse
    endpoints: [127.0.0.1:{ports['sse']}]
    max_idle_connections: 64"""
        routes = "\n".join(f"""  - name: route_{c}
    match: {{ method: tools/call, name: tool_{c} }}
    upstream: up_{c}""" for c in "abc")
        routes += "".join(f"""
  - name: route_{n}
    match: {{ method: tools/call, name: {n} }}
    upstream: up_sse""" for n in (kSseGapped, kSseFast))
        with open(f"{tmp}/{setup}.yaml", "w") as f:
            f.write(f"""listen: 127.0.0.1:{ports[setup]}
endpoint: /mcp
workers: 1
limits:
  max_connections: {max(4096, fdLimit - 100, idleConns + 1000)}
  max_connections_per_client: 0
  keepalive_timeout: 300s
mcp:
  protocol_versions: [2026-07-28]
  verify_body: {verify}
upstreams:
{upstreams}
routes:
{routes}
access_log:
  path: "off"
log_level: warn
drain_timeout: 1s
""")


def probe(port, legacy=False):
    """One request per route name; returns a list of problems (empty when all answered 200 with
    the 300-byte body). legacy: without the MCP headers (a 2025-era client)."""
    problems = []
    for name in kNames:
        head = ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"' + name +
                '","arguments":{"q":"')
        tail = '"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
        body = (head + "x" * (250 - len(head) - len(tail)) + tail).encode()
        req = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               "Accept: application/json, text/event-stream\r\n"
               + ("" if legacy else "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
                                    f"Mcp-Name: {name}\r\n") +
               f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(req)
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        status = data.split(b"\r\n", 1)[0].decode(errors="replace")
        payload = data.split(b"\r\n\r\n", 1)[-1]
        if " 200 " not in status + " " or len(payload) != kResponseBytes:
            problems.append(f"{name}: {status!r}, body {len(payload)} bytes: {payload[:160]!r}")
    return problems


def runWrk(port, seconds, conns, latency, legacy=False, scheme="http", headers=(), path="/mcp"):
    """headers: extra request header lines ("Name: value"), sent with every request (bench/tls.py:
    a bearer token; bench/servers.py: Host); scheme "https" for a TLS listener; path: the
    request path (bench/servers.py: a server's endpoint)."""
    argv = ["taskset", "-c", kLoadCpu, "wrk", "-t1", f"-c{conns}", f"-d{seconds}s",
            "-s", os.path.join(kHere, "mcp_call.lua")]
    for h in headers:
        argv += ["-H", h]
    if latency:
        argv.append("--latency")
    argv.append(f"{scheme}://127.0.0.1:{port}{path}")
    if legacy:
        argv += ["--", "legacy"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60).stdout
    m = re.search(r"^BENCH (.*)$", out, re.M)
    if not m:
        raise RuntimeError(f"wrk printed no BENCH line:\n{out}")
    r = {k: float(v) for k, v in (kv.split("=") for kv in m.group(1).split())}
    r["rps"] = r["requests"] / (r["duration_us"] / 1e6)
    r["errors"] = r["connect"] + r["read"] + r["write"] + r["status"] + r["timeout"]
    return r


def runSse(client, port, name, expected, streams, minSeconds):
    """One sse_client run: returns the per-stream dicts and the SUMMARY dict; raises when the
    client failed (wrong status, framing or event count)."""
    argv = ["taskset", "-c", kLoadCpu, client, str(port), name, str(expected), str(streams),
            str(minSeconds)]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=minSeconds + 120)
    if p.returncode != 0:
        raise RuntimeError(f"sse_client {name} on port {port} failed ({p.returncode}): "
                           f"{p.stderr.strip()}")

    def kv(line):
        return {k: float(v) for k, v in (x.split("=") for x in line.split()[1:])}
    rows = [kv(l) for l in p.stdout.splitlines() if l.startswith("STREAM ")]
    summary = [kv(l) for l in p.stdout.splitlines() if l.startswith("SUMMARY ")]
    if not rows or not summary:
        raise RuntimeError(f"sse_client printed no STREAM/SUMMARY lines:\n{p.stdout}")
    return rows, summary[0]


def countLines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except OSError:
        return 0


def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(v, digits=0):
    if v is None:
        return "—"
    return f"{v:,.{digits}f}"


def rotated(items, run):
    k = run % len(items)
    return items[k:] + items[:k]


def main():
    gateway, resultsDir, sseUpstream, sseClient = sys.argv[1:5]
    sseStreams = max(1, int(os.environ.get("BENCH_SSE_STREAMS", "5")))
    sseEvents = int(os.environ.get("BENCH_SSE_EVENTS", "100000"))
    sseSeconds = float(os.environ.get("BENCH_SSE_SECONDS", "3"))
    seconds = int(os.environ.get("BENCH_SECONDS", "10"))
    latSeconds = int(os.environ.get("BENCH_LATENCY_SECONDS", str(seconds)))
    runs = max(3, int(os.environ.get("BENCH_RUNS", "3")))
    idleConns = int(os.environ.get("BENCH_IDLE_CONNS", "10000"))
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    fdLimit = soft
    idleNote = ""
    # An idle client connection holds one descriptor in every proxy (HAProxy included: its
    # maxconn budget of 2 per connection is waived with `no strict-limits`, see writeConfigs);
    # the rest of the limit is kept for listeners, upstream connections and logs. All proxies are
    # measured at the same count.
    idleMax = fdLimit - kFdReserve
    if idleConns > idleMax >= 1000:
        idleNote = (f"{idleConns} idle connections were asked for, but with an open-files limit "
                    f"of {fdLimit} (hard {hard}) a proxy (one descriptor per connection, "
                    f"{kFdReserve} kept for everything else) can hold at most {idleMax}; every "
                    f"proxy was measured at {idleMax}.")
        idleConns = idleMax
    tmp = tempfile.mkdtemp(prefix="mcp-bench-")
    ports = {s: freePort() for s in kSetups + ["sse", "nginx-sse"]}
    # Where each setup takes the SSE request: nginx's unbuffered listener, the SSE upstream
    # itself for direct, the same listener for everyone else.
    ssePorts = {s: ports[s] for s in kSetups}
    ssePorts["direct"] = ports["sse"]
    ssePorts["nginx"] = ports["nginx-sse"]
    stamp = datetime.datetime.now().strftime("%Y-%m-%d-%H%M")
    load0 = loadavg().split()
    loads = [("start", loadavg())]
    log(f"work dir {tmp}; ports {ports}; fd limit {soft}/{hard}")

    writeConfigs(tmp, ports, fdLimit, idleConns)
    for setup in kGateways:
        chk = subprocess.run([gateway, "check", "-c", f"{tmp}/{setup}.yaml"],
                             capture_output=True, text=True)
        if chk.returncode != 0:
            raise RuntimeError(f"gateway check failed for {setup}:\n{chk.stdout}{chk.stderr}")

    procs = {}
    procs["direct"] = spawn(["nginx", "-p", tmp, "-e", f"{tmp}/upstream-error.log",
                             "-c", f"{tmp}/upstream.conf"], f"{tmp}/upstream.out", kLoadCpu)
    waitPort(ports["direct"], procs["direct"], "upstream nginx")
    procs["sse"] = spawn([sseUpstream, str(ports["sse"]), str(kGappedEvents), str(kGapMs),
                          str(sseEvents), str(kEventBytes)], f"{tmp}/sse-upstream.log", kLoadCpu)
    waitPort(ports["sse"], procs["sse"], "SSE upstream")
    for setup in kGateways:
        procs[setup] = spawn([gateway, "run", "-c", f"{tmp}/{setup}.yaml"],
                             f"{tmp}/{setup}.log", kProxyCpu)
    procs["nginx"] = spawn(["nginx", "-p", tmp, "-e", f"{tmp}/nginx-error.log",
                            "-c", f"{tmp}/nginx.conf"], f"{tmp}/nginx.out", kProxyCpu)
    procs["haproxy"] = spawn(["haproxy", "-db", "-f", f"{tmp}/haproxy.cfg"],
                             f"{tmp}/haproxy.log", kProxyCpu)
    for setup in kProxies:
        waitPort(ports[setup], procs[setup], setup)
    waitPort(ports["nginx-sse"], procs["nginx"], "nginx (SSE listener)")
    for setup in kSetups:
        problems = probe(ports[setup], setup == kLegacy)
        if problems:
            raise RuntimeError(f"{setup} does not answer the benchmark request:\n"
                               + "\n".join(problems))
    log("all setups answer 200 with the 300-byte body on all three routes")
    for setup in kSetups:  # also the SSE warm-up: pools and threads exist before measuring
        runSse(sseClient, ssePorts[setup], kSseGapped, kGappedEvents, 1, 0)
        runSse(sseClient, ssePorts[setup], kSseFast, sseEvents, 1, 0)
    log(f"all setups relay both SSE streams whole ({kGappedEvents} and {sseEvents} events)")

    log("warm-up")
    for setup in kSetups:
        runWrk(ports[setup], 1, 50, False, setup == kLegacy)

    cap = {s: [] for s in kSetups}   # per run: wrk result + cpu
    for run in range(runs):
        for setup in rotated(kSetups, run):
            pid = procs[setup].pid
            u0, s0 = cpuTicksSplit(pid)
            seg0 = tcpOutSegs()
            cpu1a = cpuBusyTicks(kLoadCpu)
            r = runWrk(ports[setup], seconds, 50, False, setup == kLegacy)
            cpu1b = cpuBusyTicks(kLoadCpu)
            seg1 = tcpOutSegs()
            u1, s1 = cpuTicksSplit(pid)
            tick = os.sysconf("SC_CLK_TCK")
            r["user_s"] = (u1 - u0) / tick
            r["sys_s"] = (s1 - s0) / tick
            r["cpu_s"] = r["user_s"] + r["sys_s"]
            per10k = 10000 / r["requests"] if r["requests"] else None
            r["cpu_per_10k"] = r["cpu_s"] * per10k if per10k else None
            r["user_per_10k"] = r["user_s"] * per10k if per10k else None
            r["sys_per_10k"] = r["sys_s"] * per10k if per10k else None
            r["busy_pct"] = 100 * r["cpu_s"] / (r["duration_us"] / 1e6)
            r["segs_per_req"] = (seg1 - seg0) / r["requests"] if r["requests"] else None
            # The load side (wrk + upstream on kLoadCpu): its CPU per request bounds what any
            # proxy could reach on this machine: requests / its busy seconds, were the proxy free.
            loadBusy = (cpu1b[0] - cpu1a[0]) / tick
            r["load_busy_pct"] = 100 * loadBusy / max(1e-9, (sum(cpu1b) - sum(cpu1a)) / tick)
            r["load_per_10k"] = loadBusy * per10k if per10k else None
            r["ceiling_rps"] = r["requests"] / loadBusy if loadBusy > 0 else None
            cap[setup].append(r)
            log(f"capacity run {run + 1} {setup}: {r['rps']:,.0f} req/s, errors {r['errors']:.0f},"
                f" cpu {r['cpu_s']:.2f}s (user {r['user_s']:.2f}s, sys {r['sys_s']:.2f}s),"
                f" {fmt(r['segs_per_req'], 2)} TCP segments/request")

    loads.append(("latency", loadavg()))
    lat = {s: [] for s in kSetups}
    for run in range(runs):
        for setup in rotated(kSetups, run):
            r = runWrk(ports[setup], latSeconds, 1, True, setup == kLegacy)
            lat[setup].append(r)
            log(f"latency run {run + 1} {setup}: p50 {r['p50_us']:.0f}us p99 {r['p99_us']:.0f}us")

    loads.append(("SSE gapped", loadavg()))
    gapped = {s: [] for s in kSetups}  # per run: medians over the run's streams
    for run in range(runs):
        for setup in rotated(kSetups, run):
            a0 = countLines(f"{tmp}/sse-upstream.log")
            rows, _ = runSse(sseClient, ssePorts[setup], kSseGapped, kGappedEvents, sseStreams, 0)
            r = {"first_us": med([x["first_us"] for x in rows]),
                 "first_max_us": max(x["first_us"] for x in rows),
                 "last_ms": med([x["last_us"] for x in rows]) / 1000,
                 "streams": len(rows),
                 "conns": countLines(f"{tmp}/sse-upstream.log") - a0}
            gapped[setup].append(r)
            log(f"SSE gapped run {run + 1} {setup}: first event {r['first_us']:.0f}us (max "
                f"{r['first_max_us']:.0f}), last {r['last_ms']:.2f}ms")

    loads.append(("SSE fast", loadavg()))
    fast = {s: [] for s in kSetups}
    for run in range(runs):
        for setup in rotated(kSetups, run):
            pid = procs[setup].pid
            t0 = cpuTicks(pid)
            w0 = time.monotonic()
            a0 = countLines(f"{tmp}/sse-upstream.log")
            rows, summ = runSse(sseClient, ssePorts[setup], kSseFast, sseEvents, 3, sseSeconds)
            wall = time.monotonic() - w0
            cpu = (cpuTicks(pid) - t0) / os.sysconf("SC_CLK_TCK")
            r = {"eps": summ["eps"], "streams": summ["streams"], "events": summ["events"],
                 "conns": countLines(f"{tmp}/sse-upstream.log") - a0}
            if setup != "direct":
                r["cpu_per_1m"] = cpu / summ["events"] * 1e6
                r["busy_pct"] = 100 * cpu / wall
            fast[setup].append(r)
            log(f"SSE fast run {run + 1} {setup}: {r['eps']:,.0f} events/s over "
                f"{summ['streams']:.0f} streams, cpu {cpu:.2f}s")

    loads.append(("scale", loadavg()))
    scale = {}
    scaleNote = None
    need = idleConns + 256
    if soft < need or idleConns < 1000:
        scaleNote = (f"skipped: the open-files limit is {soft} (hard {hard}) and could not be "
                     f"raised to {need} for {idleConns} idle connections")
    else:
        for setup in kProxies:
            pid = procs[setup].pid
            before = rssKiB(pid)
            client = spawn([sys.executable, os.path.join(kHere, "idle_conns.py"), "127.0.0.1",
                            str(ports[setup]), str(idleConns)], f"{tmp}/idle-{setup}.log",
                           kLoadCpu, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            line = client.stdout.readline().decode().strip()
            time.sleep(1.0)
            after = rssKiB(pid)
            m = re.match(r"READY ok=(\d+) failed=(\d+)", line)
            ok = int(m.group(1)) if m else 0
            failed = int(m.group(2)) if m else idleConns
            client.stdin.close()
            client.wait(timeout=60)
            children.remove(client)
            scale[setup] = {"before": before, "after": after, "ok": ok, "failed": failed}
            log(f"scale {setup}: {ok} idle conns ({failed} failed), RSS {before} -> {after} KiB")
            time.sleep(1.0)

    load1 = loadavg().split()
    loads.append(("end", loadavg()))
    stopAll()

    os.makedirs(resultsDir, exist_ok=True)
    report = os.path.join(resultsDir, f"{stamp}.md")
    chart = os.path.join(resultsDir, f"{stamp}.png")
    writeChart(tmp, chart, cap, lat, gapped, fast)
    sse = {"gapped": gapped, "fast": fast, "streams": sseStreams, "events": sseEvents,
           "seconds": sseSeconds}
    writeReport(report, os.path.basename(chart), gateway, seconds, latSeconds, runs, idleConns,
                cap, lat, scale, scaleNote, idleNote, load0, load1, sse, loads)
    shutil.rmtree(tmp, ignore_errors=True)
    log(f"report: {report}")
    log(f"chart:  {chart}")


def perRunRatio(data, key, a, b):
    out = []
    for ra, rb in zip(data[a], data[b]):
        if ra.get(key) and rb.get(key):
            out.append(ra[key] / rb[key])
        else:
            out.append(None)
    return out


def versions(gateway):
    def first(argv):
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=10)
            return (p.stdout + p.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "?"
    git = os.environ.get("BENCH_GATEWAY_REV") or first(
        ["git", "-C", os.path.dirname(kHere), "rev-parse", "--short", "HEAD"])
    return {
        "mcp-gateway": first([gateway, "version"]) + f" (git {git}, RelWithDebInfo)",
        "nginx": first(["nginx", "-v"]),
        "haproxy": first(["haproxy", "-v"]),
        "wrk": first(["wrk", "-v"]),
    }


def writeChart(tmp, chart, cap, lat, gapped, fast):
    dat = f"{tmp}/chart.dat"
    with open(dat, "w") as f:
        f.write("setup rps cpu p50 first keps ssecpu\n")
        for s in kSetups:
            cpu = med([r["cpu_per_10k"] for r in cap[s]]) if s != "direct" else 0
            sseCpu = med([r.get("cpu_per_1m") for r in fast[s]]) if s != "direct" else 0
            f.write(f"{s} {med([r['rps'] for r in cap[s]]):.1f} {cpu or 0:.4f} "
                    f"{med([r['p50_us'] for r in lat[s]]):.1f} "
                    f"{med([r['first_us'] for r in gapped[s]]):.1f} "
                    f"{med([r['eps'] for r in fast[s]]) / 1000:.1f} {sseCpu or 0:.4f}\n")
    script = f"""set terminal pngcairo size 1500,900 font ",10"
set output '{chart}'
set style data histograms
set style fill solid 0.8 border -1
set boxwidth 0.8
set grid ytics
set key off
set xtics rotate by -30
set yrange [0:*]
set multiplot layout 2,3 title "mcp-gateway benchmark (medians; proxy pinned to CPU 0)"
set title "capacity (req/s, wrk -c50)"
plot '{dat}' using 2:xtic(1) every ::1 lc rgb "#4878a8"
set title "proxy CPU seconds per 10k requests"
plot '{dat}' using 3:xtic(1) every ::1 lc rgb "#c05040"
set title "unloaded p50 latency (us, wrk -c1)"
plot '{dat}' using 4:xtic(1) every ::1 lc rgb "#50a050"
set title "SSE gapped stream: time to first event (us)"
plot '{dat}' using 5:xtic(1) every ::1 lc rgb "#8060b0"
set title "SSE fast stream: thousand events/s relayed"
plot '{dat}' using 6:xtic(1) every ::1 lc rgb "#4878a8"
set title "SSE fast stream: proxy CPU seconds per 1M events"
plot '{dat}' using 7:xtic(1) every ::1 lc rgb "#c05040"
unset multiplot
"""
    with open(f"{tmp}/chart.gp", "w") as f:
        f.write(script)
    subprocess.run(["gnuplot", f"{tmp}/chart.gp"], check=True)


def writeReport(path, chartName, gateway, seconds, latSeconds, runs, idleConns, cap, lat, scale,
                scaleNote, idleNote, load0, load1, sse, loads):
    v = versions(gateway)
    L = []
    w = L.append
    w(f"# mcp-gateway benchmark — {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}\n")
    w(f"![chart]({chartName})\n")
    w("## Environment\n")
    w(f"- host: {platform.node()}, {os.cpu_count()} CPUs, kernel {platform.release()}")
    w(f"- load average at start {' '.join(load0)}, at end {' '.join(load1)} — "
      "**the machine is shared; other jobs ran during the benchmark, so absolute figures are "
      "noisy and only same-run ratios are meaningful**")
    w("- load average (1/5/15 min) when each phase began: "
      + "; ".join(f"{name} {val}" for name, val in loads))
    for k, val in v.items():
        w(f"- {k}: {val}")
    w(f"- capacity: `wrk -t1 -c50 -d{seconds}s`; latency: `wrk -t1 -c1 -d{latSeconds}s --latency`;"
      f" {runs} interleaved runs (round-robin over the setups, start rotated each run)")
    w("- proxies pinned with `taskset -c 0` (one worker / thread each); wrk and the upstream "
      "nginx on CPU 1")
    w("- request: 250-byte `tools/call` POST, `MCP-Protocol-Version: 2026-07-28`, `Mcp-Method: "
      "tools/call`, `Mcp-Name` rotating over tool_a/tool_b/tool_c (three routes, three upstream "
      "names, one upstream); answer: nginx `return 200` of a 300-byte JSON-RPC result\n")
    w("Setups: **direct** = wrk → upstream; **gateway-header** = mcp-gateway routing on Mcp-Name; "
      "**gateway-verify** = the same with `mcp.verify_body: true`; **gateway-legacy** = the same "
      "config and body sent without the MCP headers (a 2025-era client: the gateway routes on "
      "the parsed body); **nginx** = `map "
      "$http_mcp_name` → 3 upstream blocks (keepalive 64); **haproxy** = ACLs on "
      "`req.hdr(mcp-name)`, `http-reuse always`.\n")

    def table(title, data, key, digits, unit, skip=()):
        w(f"### {title}\n")
        head = "| setup | " + " | ".join(f"run {i + 1}" for i in range(runs)) + " | median |"
        w(head)
        w("|" + "---|" * (runs + 2))
        for s in kSetups:
            if s in skip:
                continue
            vals = [r.get(key) for r in data[s]]
            w(f"| {s} | " + " | ".join(fmt(x, digits) for x in vals) + f" | **{fmt(med(vals), digits)}** {unit} |")
        w("")

    def ratios(title, data, key, digits=2):
        w(f"### {title}\n")
        w("| ratio | " + " | ".join(f"run {i + 1}" for i in range(runs)) + " | median |")
        w("|" + "---|" * (runs + 2))
        for g in kGateways:
            for ref in ("nginx", "haproxy"):
                rs = perRunRatio(data, key, g, ref)
                w(f"| {g} ÷ {ref} | " + " | ".join(fmt(x, digits) for x in rs)
                  + f" | **{fmt(med(rs), digits)}** |")
        w("")

    w("## Capacity\n")
    table("requests per second (wrk -c50)", cap, "rps", 0, "req/s")
    ratios("req/s ratios (same run; > 1 = gateway faster)", cap, "rps")
    rs = perRunRatio(cap, "rps", kLegacy, "gateway-header")
    w(f"Legacy inspection (issue #13): gateway-legacy ÷ gateway-header req/s = "
      f"**{fmt(med(rs), 2)}** (per run {', '.join(fmt(x, 2) for x in rs)}; goal ≥ 0.9)\n")
    errs = {s: sum(r["errors"] for r in cap[s]) for s in kSetups}
    w("Errors reported by wrk over all capacity runs (connect/read/write/non-2xx/timeout): "
      + ", ".join(f"{s} {e:.0f}" for s, e in errs.items()) + "\n")

    w("## Proxy CPU per 10k requests\n")
    w("CPU seconds (utime + stime of the proxy's whole process tree from /proc/PID/stat, before "
      "and after each capacity run) divided by the requests wrk completed, × 10,000 (clock-tick "
      f"resolution, {1000 // os.sysconf('SC_CLK_TCK')} ms).\n")
    table("proxy CPU seconds per 10k requests", cap, "cpu_per_10k", 3, "s", skip=("direct",))
    ratios("CPU-per-request ratios (same run; < 1 = gateway cheaper)", cap, "cpu_per_10k")
    w("### user / system CPU seconds per 10k requests\n")
    w("The same figure split into utime (the proxy's own code) and stime (the kernel working for "
      "it: mostly TCP send and receive, epoll); each run shows user / system.\n")
    w("| setup | " + " | ".join(f"run {i + 1}" for i in range(runs))
      + " | median user | median system |")
    w("|" + "---|" * (runs + 3))
    for s in kProxies:
        us = [r.get("user_per_10k") for r in cap[s]]
        ss = [r.get("sys_per_10k") for r in cap[s]]
        w(f"| {s} | " + " | ".join(f"{fmt(u, 3)} / {fmt(y, 3)}" for u, y in zip(us, ss))
          + f" | **{fmt(med(us), 3)}** s | **{fmt(med(ss), 3)}** s |")
    w("")
    floor = [g.get("sys_per_10k") / n["cpu_per_10k"]
             if g.get("sys_per_10k") is not None and n.get("cpu_per_10k") else None
             for g, n in zip(cap["gateway-header"], cap["nginx"])]
    w(f"kernel floor: gateway-header system CPU alone ÷ nginx total CPU = **{fmt(med(floor), 2)}** "
      f"(median of the per-run ratios {', '.join(fmt(x, 2) for x in floor)}). A gateway ÷ nginx "
      "CPU-per-request target below this ratio cannot be met by user-space work, since the "
      "system time is the kernel's TCP work for the same reads and writes every proxy makes.\n")
    table("TCP segments sent per request", cap, "segs_per_req", 2, "segments")
    w("From the `Tcp: OutSegs` counter of /proc/net/snmp before and after each capacity run, "
      "divided by the requests wrk completed. The counter is system-wide: it counts all loopback "
      "traffic, both directions of every hop (and anything else the shared host sent meanwhile), "
      "so 4.0 per proxied request = one segment per hop per direction (client → proxy → upstream "
      "and back) with no pure ACKs; `direct` (one hop) should show ~2. More means pure ACKs or "
      "requests/answers split over several segments.\n")
    table("proxy CPU busy during the capacity run (% of one CPU; well below 100 = the proxy was "
          "not the bottleneck — CPU 1 (wrk + upstream) or the shared host was)", cap, "busy_pct",
          0, "%", skip=("direct",))
    w("### load side: CPU 1 (wrk + upstream) during the capacity run\n")
    w("wrk and the upstream share CPU 1; what they spend per request bounds what any proxy can "
      "reach here. *ceiling* = requests ÷ CPU 1's busy seconds: the req/s this run would have "
      "reached had the proxy cost nothing (CPU 1 100% busy); *÷ nginx* compares it with nginx's "
      "measured req/s in the same round.\n")
    w("| setup | CPU 1 busy (median %) | CPU 1 s per 10k requests (median) | ceiling req/s "
      "(median) | ceiling ÷ nginx req/s (median) |")
    w("|---|---|---|---|---|")
    for s in kProxies:
        ceil = [r.get("ceiling_rps") for r in cap[s]]
        vsN = [c / n["rps"] if c and n.get("rps") else None for c, n in zip(ceil, cap["nginx"])]
        w(f"| {s} | {fmt(med([r.get('load_busy_pct') for r in cap[s]]))} | "
          f"{fmt(med([r.get('load_per_10k') for r in cap[s]]), 3)} | {fmt(med(ceil))} | "
          f"**{fmt(med(vsN), 2)}** |")
    w("")

    w("## Unloaded latency (wrk -c1)\n")
    for key, name in (("p50_us", "p50"), ("p90_us", "p90"), ("p99_us", "p99")):
        table(f"{name} (µs)", lat, key, 0, "µs")
    ratios("p50 ratios (same run; < 1 = gateway faster)", lat, "p50_us")
    ratios("p99 ratios (same run)", lat, "p99_us")

    w("## Scale: RSS with idle keep-alive connections\n")
    if scaleNote:
        w(scaleNote + "\n")
    else:
        w(f"{idleConns} connections opened by `bench/idle_conns.py` (one request answered on each, "
          "then idle); RSS = VmRSS summed over the proxy's process tree, measured once (single run "
          "— memory is not noisy the way time is).\n")
        if idleNote:
            w(idleNote + "\n")
        w("HAProxy runs with `ulimit-n` = the open-files limit and `no strict-limits` in `global`: "
          "it budgets 2 descriptors per `maxconn` (client and server side) and would refuse to "
          "start with `maxconn` above half the limit (a hard limit of 20,000 would cap it below "
          "10,000), although an idle client connection holds only one; with `no strict-limits` "
          "it logs an ALERT and serves, so it is measured at the same count as the others. "
          "mcp-gateway runs with `limits.max_connections_per_client: 0`: every connection "
          "comes from 127.0.0.1, and the default cap of 256 per address would refuse the rest.\n")
        w("| setup | idle conns held | RSS before (MiB) | RSS with conns (MiB) | KiB per conn |")
        w("|---|---|---|---|---|")
        for s in kProxies:
            x = scale[s]
            per = (x["after"] - x["before"]) / x["ok"] if x["ok"] else None
            w(f"| {s} | {x['ok']} ({x['failed']} failed) | {x['before'] / 1024:.1f} | "
              f"{x['after'] / 1024:.1f} | {fmt(per, 2)} |")
        w("")

    gapped, fast = sse["gapped"], sse["fast"]
    w("## SSE\n")
    w(f"Upstream: `bench/sse_upstream.c` (CPU 1), `Content-Type: text/event-stream`, "
      f"`Transfer-Encoding: chunked`, one {kEventBytes}-byte `data:` event per chunk, keep-alive; "
      f"the stream is picked by `Mcp-Name` (`{kSseGapped}`, `{kSseFast}`), which every proxy "
      "routes to that upstream (a fourth upstream; gateway: two more routes; nginx: two more "
      "`map` entries; HAProxy: one more ACL/backend). Client: `bench/sse_client.c` (CPU 1), the "
      "same 250-byte `tools/call` POST on one keep-alive connection; it de-chunks and counts "
      "complete events, and fails the run unless every stream carries exactly the expected "
      "number. Buffering is off everywhere: nginx answers the SSE phase from a second `server` "
      "(same worker, same `map`) with `proxy_buffering off` (default `proxy_buffer_size`, one "
      "page); HAProxy gets `option http-no-delay` on the SSE backend only (without it HAProxy "
      "sends with MSG_MORE and the kernel holds a lone event up to ~200 ms); the gateway relays "
      "SSE as it arrives (default settings; `sse_keepalive` 15 s never fires here).\n")
    w(f"### Gapped stream: {kGappedEvents} events {kGapMs} ms apart\n")
    w(f"Each run = {sse['streams']} streams per setup; the run's value is the median over its "
      "streams. Times from just before the request's `write()` to the `read()` that completed "
      "the event. The upstream sends the first event right after the head, the last at "
      f"{(kGappedEvents - 1) * kGapMs} ms.\n")
    table("time to first event (µs)", gapped, "first_us", 0, "µs")
    table("worst stream's time to first event in the run (µs)", gapped, "first_max_us", 0, "µs")
    ratios("first-event ratios (same run; < 1 = gateway faster)", gapped, "first_us")
    table("time to last event (ms)", gapped, "last_ms", 2, "ms")
    ratios("last-event ratios (same run)", gapped, "last_ms", 3)
    w("Upstream connections each setup opened during its measured streams (a proxy that "
      "reuses its upstream connection opens none; one per stream means a connect per request; "
      "`direct` counts the client's own connection, one per run):"
      "\n")
    w("| setup | gapped: streams / new upstream conns | fast: streams / new upstream conns |")
    w("|---|---|---|")
    for s in kSetups:
        g = f"{sum(r['streams'] for r in gapped[s])} / {sum(r['conns'] for r in gapped[s])}"
        f_ = f"{sum(r['streams'] for r in fast[s]):.0f} / {sum(r['conns'] for r in fast[s])}"
        w(f"| {s} | {g} | {f_} |")
    w("")
    w("Target (issue #5): gateway SSE first event ≤ 1 ms on the gapped stream.\n")
    for g in kGateways:
        m = med([r["first_us"] for r in gapped[g]])
        worst = max(r["first_max_us"] for r in gapped[g])
        verdict = "**MET**" if m is not None and m <= kFirstEventTargetUs else "**NOT MET**"
        w(f"- {g}: median time to first event {fmt(m, 0)} µs → {verdict} "
          f"(worst single stream {fmt(worst, 0)} µs)")
    w("")
    w(f"### Fast stream: {sse['events']:,} events as fast as the sockets take them\n")
    w(f"Each run repeats the stream on one connection for at least {sse['seconds']:g} s (and 3 "
      "streams); events/s = events ÷ the sum of the streams' request-to-last-event times. The "
      "upstream writes its pre-built chunked body in large writes, so the proxy is what is "
      "measured; `direct` must be far above the proxies for the client not to be the limit.\n")
    table("events per second", fast, "eps", 0, "events/s")
    ratios("events/s ratios (same run; > 1 = gateway faster)", fast, "eps")
    table("proxy CPU seconds per 1M events", fast, "cpu_per_1m", 3, "s", skip=("direct",))
    ratios("CPU-per-event ratios (same run; < 1 = gateway cheaper)", fast, "cpu_per_1m")
    table("proxy CPU busy during the fast runs (% of one CPU)", fast, "busy_pct", 0, "%",
          skip=("direct",))

    w("## How to read this\n")
    w("Each figure is the median of the per-run values shown beside it; ratios are computed per "
      "run (gateway and reference measured seconds apart in the same round) and then the median "
      "is taken. The harness pins only the proxy to CPU 0 (other jobs on a shared host may "
      "still run there); the load generator and the upstream share CPU 1, so a proxy that is cheaper than the upstream+wrk pair is capped by CPU 1 — compare "
      "the CPU-per-10k-requests figures for efficiency, and req/s for the ceiling. `direct` is "
      "the ceiling of the load generator and upstream alone.")
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


def runDriver(driverMain, failed=None):
    """Runs a driver's main() (this one's, federation.py's, tls.py's): SIGTERM and SIGINT end
    it like an error, and every child is stopped however it ends; `failed` is printed to stderr
    when it did not finish."""
    def onSignal(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, onSignal)
    signal.signal(signal.SIGINT, onSignal)
    ok = False
    try:
        driverMain()
        ok = True
    finally:
        stopAll()
        if not ok and failed:
            print(failed, file=sys.stderr, flush=True)


if __name__ == "__main__":
    runDriver(main)
