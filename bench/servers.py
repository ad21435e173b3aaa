#!/usr/bin/env python3
"""Server-selection benchmark behind bench/run.sh (issue #27; never part of the test suite).

What choosing among several servers (`servers:`) costs a tools/call: the same request, the same
routes and the same upstream, once on a gateway with a single server and once on a gateway with
50 servers, the request going to one of the later ones. nginx and HAProxy route the same request
to the same upstream as references.

  gateway-1    bench.py's gateway-header config (three routes on Mcp-Name, three upstream names,
               one address), its top-level endpoint moved to the measured path: one server
               (`default`), no hosts
  gateway-50   the same upstreams and, in each of 50 servers s0..s49, the same three routes;
               server i has endpoint /s<i>/mcp and hosts: none (i % 3 == 0), an exact name
               s<i>.example.com (i % 3 == 1, plus mcp<i>.example.net when i % 5 == 1) or a
               wildcard *.s<i>.example.com (i % 3 == 2)
  nginx, haproxy  bench.py's configs (`location /`, any Host: the path needs no change)

Every setup gets the same request: bench.py's 250-byte 2026-07-28 tools/call (bench/mcp_call.lua,
Mcp-Name rotating over tool_a/b/c) POSTed to /s37/mcp with `Host: s37.example.com` (server s37's
exact host). The upstream is bench.py's nginx (one worker, CPU 1).

Proxies on CPU 0, wrk and the upstream on CPU 1. Rounds: each visits the gateway-50/gateway-1
pair back to back (order flipped every other round) and nginx and HAProxy, the start rotated.
The goal (issue #27): gateway-50 ÷ gateway-1 within 2 % for req/s and CPU per request.

Usage: servers.py GATEWAY_BINARY RESULTS_DIR
Environment: BENCH_SECONDS (capacity run length, default 10), BENCH_LATENCY_SECONDS (default
BENCH_SECONDS), BENCH_SERVERS_RUNS (rounds, default 5, min 3).
"""

import datetime
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402  (helpers: spawn, stopAll, waitPort, CPU readers, runWrk, med, fmt)
import bridge  # noqa: E402  (measure: CPU, segments and rejections around one wrk run; perRun)

kMany = "gateway-50"
kOne = "gateway-1"
kSetups = [kMany, kOne, "nginx", "haproxy"]
kGateways = [kMany, kOne]
kRefs = ["nginx", "haproxy"]
kServers = 50
kTarget = 37
kPath = f"/s{kTarget}/mcp"
kHost = f"s{kTarget}.example.com"
kGoal = 0.02  # issue #27: within 2 %


def hostsOf(i):
    if i % 3 == 1:
        return [f"s{i}.example.com"] + ([f"mcp{i}.example.net"] if i % 5 == 1 else [])
    if i % 3 == 2:
        return [f"*.s{i}.example.com"]
    return []


def writeConfigs(tmp, ports, fdLimit):
    # bench.py's upstream, nginx and HAProxy configs, and its gateway-header config as the base
    # of both gateways (its SSE upstream is named but never sent to: no port listens on it).
    B.writeConfigs(tmp, ports, fdLimit, 0)
    with open(f"{tmp}/gateway-header.yaml") as f:
        base = f.read()
    listen = f"listen: 127.0.0.1:{ports['gateway-header']}\n"
    assert base.count(listen) == 1 and base.count("endpoint: /mcp\n") == 1
    m = re.search(r"\nroutes:\n(.*?)\n(?=access_log:)", base, re.S)
    assert m, "no routes block in bench.py's gateway config"
    routes = m.group(1)
    for setup in kGateways:
        text = base.replace(listen, f"listen: 127.0.0.1:{ports[setup]}\n")
        if setup == kOne:
            text = text.replace("endpoint: /mcp\n", f"endpoint: {kPath}\n")
        else:
            text = text.replace("endpoint: /mcp\n", "")
            servers = []
            for i in range(kServers):
                hosts = hostsOf(i)
                servers.append(f"  - name: s{i}\n    endpoint: /s{i}/mcp\n"
                               + (f"    hosts: [{', '.join(repr(h) for h in hosts)}]\n"
                                  if hosts else "")
                               + "    routes:\n"
                               + "\n".join("    " + line for line in routes.split("\n")))
            text = text.replace(m.group(0), "\nservers:\n" + "\n".join(servers) + "\n")
        text += f"admin: 127.0.0.1:{ports[setup + '-admin']}\n"
        with open(f"{tmp}/{setup}.yaml", "w") as f:
            f.write(text)


def call(port, name, path=kPath, host=kHost):
    head = ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"' + name +
            '","arguments":{"q":"')
    tail = ('"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
            '"io.modelcontextprotocol/clientCapabilities":{}}}}')
    body = (head + "x" * (250 - len(head) - len(tail)) + tail).encode()
    req = (f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
           "Accept: application/json, text/event-stream\r\n"
           "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
           f"Mcp-Name: {name}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
           ).encode() + body
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(req)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, payload = data.partition(b"\r\n\r\n")
    return head.decode(errors="replace").split("\r\n", 1)[0], payload


def probe(setup, port):
    """Problems (empty when fine): every route answers the upstream's 300 bytes on the measured
    path and Host; on gateway-50, a Host s37 does not take gets the 404 of no server, and a
    server without hosts takes any Host (selection really looks at both)."""
    problems = []
    for name in B.kNames:
        status, payload = call(port, name)
        if " 200 " not in status + " " or payload.decode(errors="replace") != B.responseBody():
            problems.append(f"{name}: {status!r} {payload[:200]!r}")
    if setup == kMany:
        status, payload = call(port, "tool_a", host="other.example.com")
        if " 404 " not in status + " ":
            problems.append(f"Host other.example.com on {kPath}: {status!r}, not 404")
        status, payload = call(port, "tool_a", path="/s36/mcp", host="other.example.com")
        if " 200 " not in status + " ":
            problems.append(f"/s36/mcp (no hosts) with Host other.example.com: {status!r}")
        status, payload = call(port, "tool_a", path="/s38/mcp", host=f"a.b.s38.example.com")
        if " 200 " not in status + " ":
            problems.append(f"/s38/mcp (*.s38.example.com) with Host a.b.s38.example.com: "
                            f"{status!r}")
    return problems


def requestsByServer(port):
    """mcp_server_operation_duration_seconds_count summed by `server`, from /metrics."""
    out = {}
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    for line in data.decode(errors="replace").splitlines():
        m = re.match(r'mcp_server_operation_duration_seconds_count\{server="([^"]*)".*\} '
                     r'([0-9.e+]+)$', line)
        if m:
            out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(2))
    return out


def roundOrder(run):
    pair = [kMany, kOne] if run % 2 == 0 else [kOne, kMany]
    units = B.rotated([pair, ["nginx"], ["haproxy"]], run)
    return [s for u in units for s in u]


def main():
    gateway, resultsDir = sys.argv[1:3]
    seconds = int(os.environ.get("BENCH_SECONDS", "10"))
    latSeconds = int(os.environ.get("BENCH_LATENCY_SECONDS", str(seconds)))
    runs = max(3, int(os.environ.get("BENCH_SERVERS_RUNS", "5")))
    import resource
    fdLimit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    tmp = tempfile.mkdtemp(prefix="mcp-bench-servers-")
    ports = {s: B.freePort() for s in B.kSetups + ["sse", "nginx-sse"] + kGateways
             + [g + "-admin" for g in kGateways]}
    stamp = datetime.datetime.now().strftime("%Y-%m-%d-%H%M")
    loads = [("start", B.loadavg())]
    B.log(f"[servers] work dir {tmp}; ports {ports}")
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
    B.log("[servers] all setups answer as expected")

    # bridge.measure (CPU, segments and rejections around one run) calls bench.runWrk, which
    # POSTs to /mcp: for these runs it goes to kPath with kHost.
    savedRunWrk = B.runWrk
    B.runWrk = lambda port, secs, conns, latency: savedRunWrk(
        port, secs, conns, latency, headers=[f"Host: {kHost}"], path=kPath)
    try:
        B.log("[servers] warm-up")
        for setup in kSetups:
            B.runWrk(ports[setup], 1, 50, False)
        served0 = {s: requestsByServer(ports[s + "-admin"]) for s in kGateways}
        cap = {s: [] for s in kSetups}
        lat = {s: [] for s in kSetups}
        loads.append(("capacity", B.loadavg()))
        for run in range(runs):
            for setup in roundOrder(run):
                r = bridge.measure(procs, ports, setup, seconds, False)
                cap[setup].append(r)
                B.log(f"[servers] capacity run {run + 1} {setup}: {r['rps']:,.0f} req/s, "
                      f"{B.fmt(r['cpu_us'], 1)} µs CPU/req (user {B.fmt(r['user_us'], 1)}, "
                      f"sys {B.fmt(r['sys_us'], 1)}), busy {r['busy_pct']:.0f}%, "
                      f"errors {r['errors']:.0f}")
        loads.append(("latency", B.loadavg()))
        for run in range(runs):
            for setup in roundOrder(run):
                r = bridge.measure(procs, ports, setup, latSeconds, True)
                lat[setup].append(r)
                B.log(f"[servers] latency run {run + 1} {setup}: p50 {r['p50_us']:.0f}µs "
                      f"p99 {r['p99_us']:.0f}µs")
    finally:
        B.runWrk = savedRunWrk
    served1 = {s: requestsByServer(ports[s + "-admin"]) for s in kGateways}
    served = {s: {k: x - served0[s].get(k, 0.0) for k, x in served1[s].items()
                  if x - served0[s].get(k, 0.0)} for s in kGateways}
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
    report = os.path.join(resultsDir, f"{stamp}-servers.md")
    summary = writeReport(report, gateway, seconds, latSeconds, runs, cap, lat, loads, served,
                          after, logs)
    shutil.rmtree(tmp, ignore_errors=True)
    print(summary, flush=True)
    B.log(f"[servers] report: {report}")


def verdict(x):
    if x is None:
        return "—"
    return "**MET**" if abs(x - 1) <= kGoal else "**NOT MET**"


def writeReport(path, gateway, seconds, latSeconds, runs, cap, lat, loads, served, after, logs):
    fmt, med, perRun = B.fmt, B.med, bridge.perRun
    v = B.versions(gateway)
    L = []
    w = L.append
    w(f"# mcp-gateway server-selection benchmark (issue #27) — "
      f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}\n")
    w("## Environment\n")
    w(f"- host: {platform.node()}, {os.cpu_count()} CPUs, kernel {platform.release()}")
    w("- load average (1/5/15 min) when each phase began: "
      + "; ".join(f"{n} {x}" for n, x in loads)
      + " — **shared machine: only same-round ratios are meaningful**")
    for k, x in v.items():
        w(f"- {k}: {x}")
    w(f"- capacity: `wrk -t1 -c50 -d{seconds}s`; latency: `wrk -t1 -c1 -d{latSeconds}s "
      f"--latency`; {runs} rounds, each visiting the gateway-50/gateway-1 pair back to back "
      "(order flipped every other round), nginx and HAProxy (start rotated)")
    w("- proxies pinned with `taskset -c 0` (one worker / thread each); wrk and the upstream "
      "nginx on CPU 1")
    w(f"- request (every setup): bench.py's 250-byte 2026-07-28 `tools/call` "
      f"(`bench/mcp_call.lua`, `Mcp-Name` rotating over tool_a/b/c) to `POST {kPath}` with "
      f"`Host: {kHost}`\n")
    w("| setup | what |")
    w("|---|---|")
    w(f"| {kOne} | mcp-gateway, bench.py's gateway-header config (three routes on `Mcp-Name`, "
      f"three upstream names, one address) with `endpoint: {kPath}`: one server, no `hosts` |")
    w(f"| {kMany} | the same upstreams, `servers:` s0..s{kServers - 1}, each with the same three "
      "routes and `endpoint: /s<i>/mcp`; `hosts`: none (i % 3 = 0, 17 servers), exact "
      "`s<i>.example.com` (i % 3 = 1, 17; plus `mcp<i>.example.net` when i % 5 = 1) or wildcard "
      f"`*.s<i>.example.com` (i % 3 = 2, 16). The request goes to s{kTarget} "
      f"(`hosts: [{', '.join(hostsOf(kTarget))}]`) |")
    w("| nginx | bench.py's nginx (`location /`, `map $http_mcp_name` → 3 upstream blocks, "
      "keepalive 64) |")
    w("| haproxy | bench.py's HAProxy (ACLs on `req.hdr(mcp-name)`, `http-reuse always`) |")
    w("")
    w("Upstream: bench.py's nginx, the 300-byte tools/call result for every request.\n")

    w("## Headline\n")
    rr = perRun(cap, "rps", kMany, kOne)
    rc = perRun(cap, "cpu_us", kMany, kOne)
    w(f"Issue #27 (goal: within {kGoal:.0%}, i.e. {1 - kGoal:.2f}..{1 + kGoal:.2f}):\n")
    w(f"- gateway-50 ÷ gateway-1 req/s = **{fmt(med(rr), 3)}** (median of the per-round ratios "
      f"{', '.join(fmt(x, 3) for x in rr)}) → {verdict(med(rr))}")
    w(f"- gateway-50 ÷ gateway-1 CPU per request = **{fmt(med(rc), 3)}** (per round "
      f"{', '.join(fmt(x, 3) for x in rc)}) → {verdict(med(rc))}\n")
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
    for a, b in [(kMany, kOne)] + [(g, r) for g in kGateways for r in kRefs]:
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
    table("TCP segments sent per request (system-wide `Tcp: OutSegs` ÷ requests)", cap,
          "segs_per_req", 2, "segments")
    table("p50 latency (µs, wrk -c1)", lat, "p50_us", 0, "µs")
    table("p99 latency (µs, wrk -c1)", lat, "p99_us", 0, "µs")
    w("### gateway-50 ÷ gateway-1, per round\n")
    w("| figure | " + " | ".join(f"round {i + 1}" for i in range(runs)) + " | median |")
    w("|" + "---|" * (runs + 2))
    for label, data, key in (("req/s", cap, "rps"), ("CPU per request", cap, "cpu_us"),
                             ("user CPU", cap, "user_us"), ("system CPU", cap, "sys_us"),
                             ("p50", lat, "p50_us"), ("p99", lat, "p99_us")):
        rs = perRun(data, key, kMany, kOne)
        w(f"| {label} | " + " | ".join(fmt(x, 3) for x in rs) + f" | **{fmt(med(rs), 3)}** |")
    w("")

    w("## Checks\n")
    w(f"- every setup was probed before and after the runs (status 200 and the upstream's 300 "
      f"bytes on all three routes at `{kPath}`, `Host: {kHost}`; gateway-50 also: 404 for "
      f"`Host: other.example.com` at `{kPath}`, 200 at `/s36/mcp` (no `hosts`) with that Host "
      "and at `/s38/mcp` with `Host: a.b.s38.example.com` (wildcard)): "
      + ("all answered as expected both times." if not after else
         "**after the runs: " + "; ".join(f"{s}: {', '.join(p)}" for s, p in after.items())
         + "**"))
    for s in kGateways:
        w(f"- {s}: requests counted by server during the measured runs "
          "(`mcp_server_operation_duration_seconds_count`): "
          + (", ".join(f"`{k or '(none)'}` {x:,.0f}" for k, x in sorted(served[s].items()))
             or "none"))
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
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")

    S = ["", "Server-selection benchmark (issue #27), medians", "",
         "| setup | req/s | CPU µs/req | p50 µs | p99 µs |", "|---|---|---|---|---|"]
    for s in kSetups:
        S.append(f"| {s} | {fmt(med([r['rps'] for r in cap[s]]))} | "
                 f"{fmt(med([r['cpu_us'] for r in cap[s]]), 2)} | "
                 f"{fmt(med([r['p50_us'] for r in lat[s]]))} | "
                 f"{fmt(med([r['p99_us'] for r in lat[s]]))} |")
    S.append("")
    S.append(f"gateway-50 ÷ gateway-1: req/s {fmt(med(rr), 3)} (per round "
             f"{', '.join(fmt(x, 3) for x in rr)}), CPU per request {fmt(med(rc), 3)} (per round "
             f"{', '.join(fmt(x, 3) for x in rc)}); goal {1 - kGoal:.2f}..{1 + kGoal:.2f}")
    return "\n".join(S)


if __name__ == "__main__":
    B.runDriver(main, "[servers] failed; the work directory /tmp/mcp-bench-servers-* above is "
                      "kept (configs and every process's log)")
