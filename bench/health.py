#!/usr/bin/env python3
"""Failing-upstreams benchmark behind bench/run.sh (issue #29; never part of the test suite).

Two parts, one report (bench/results/<YYYY-MM-DD-HHMM>-health.md):

1. No cost when nothing fails. bench.py's tools/call (bench/mcp_call.lua, wrk -t1 -c50) through
   two gateways with the same routes and the same upstream (bench.py's nginx, the 300-byte
   tools/call result; it also answers GET /healthz 200):

     gateway-health    every upstream has every block of README "Failing upstreams":
                       health_check {probe: http, path: /healthz, interval: 10s, timeout: 2s,
                       unhealthy_threshold: 3, healthy_threshold: 2}, outlier_detection
                       {consecutive_failures: 5, ejection_time: 30s, max_ejection_percent: 50},
                       circuit_breaker {max_requests: 1000, max_pending: 100}, retry {attempts: 2,
                       budget: 20%, backoff: 25ms}
     gateway-plain     the same without them, and outlier_detection {consecutive_failures: 0}
                       (outlier detection is on by default)

   Both are bench.py's gateway-header config without its SSE upstream and routes (three routes
   on Mcp-Name, three upstream names, one address). Rounds visit the pair back to back, the
   order flipped every other round. Goal: gateway-health ÷ gateway-plain req/s ≥ 0.98 (median
   of the per-round ratios); CPU per request reported beside it.

2. Chaos. Four upstream endpoints (four nginx instances, one worker each, answering a
   tools/list result and GET /healthz) behind three proxies configured to survive failures:

     gateway   upstream endpoints: [four], connect_timeout 200ms, outlier_detection defaults,
               health_check {probe: http, path: /healthz, interval: 1s, timeout: 500ms,
               unhealthy_threshold: 1, healthy_threshold: 1}, retry {attempts: 3, budget: 100%,
               backoff: 5ms}
     haproxy   option httpchk GET /healthz, check inter 1s fall 1 rise 1, observe layer7
               error-limit 1 on-error mark-down, retry-on all-retryable-errors, retries 3,
               option redispatch, timeout connect 200ms
     nginx     max_fails=1 fail_timeout=10s, proxy_next_upstream error timeout http_502 http_503
               http_504 non_idempotent (nginx retries a POST only with non_idempotent),
               proxy_next_upstream_tries 3, proxy_connect_timeout 200ms

   Each proxy in turn gets `wrk -t1 -c20` for BENCH_CHAOS_SECONDS (default 60) sending a
   2026-07-28 tools/list POST (bench/chaos_list.lua: Mcp-Method tools/list, a method the
   gateway retries by default) while the same fault schedule runs: the run is cut in six slots;
   in the middle of slot k (k = 0..5) endpoint k mod 4 is killed (SIGKILL to its nginx: open
   connections reset, new ones refused) and, from k = 2 on, endpoint (k - 2) mod 4 is started
   again first, so two endpoints fail in turns and never more than two at a time. Every
   endpoint is started again after the run. A 5 s run without faults precedes each chaos run.
   Reported: success share (2xx ÷ all requests; wrk's connect/read/write/timeout errors count
   as failed requests) and latency (p50/p99/p99.9) as seen by wrk. Goal (issue #29): the
   gateway ≥ 99.9 % success.

Proxies on CPU 0, wrk and the upstreams on CPU 1.

Usage: health.py GATEWAY_BINARY RESULTS_DIR
Environment: BENCH_SECONDS (capacity run length, default 10), BENCH_HEALTH_RUNS (rounds of part
1, default 5, min 3), BENCH_CHAOS_SECONDS (length of each chaos run, default 60, min 12).
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
import bridge  # noqa: E402  (measure: CPU, segments and rejections around one wrk run; perRun)

kHealth = "gateway-health"
kPlain = "gateway-plain"
kCostSetups = [kHealth, kPlain]
kChaosSetups = ["gateway", "haproxy", "nginx"]
kEndpoints = 4
kChaosConns = 20
kBaselineSeconds = 5
kSettleSeconds = 3
kGoalRps = 0.98       # issue #29: health ÷ plain req/s >= 0.98
kGoalSuccess = 99.9   # issue #29: gateway success share (%) under the chaos schedule

kHealthBlocks = """    health_check:
      probe: http
      path: /healthz
      interval: 10s
      timeout: 2s
      unhealthy_threshold: 3
      healthy_threshold: 2
    outlier_detection:
      consecutive_failures: 5
      ejection_time: 30s
      max_ejection_percent: 50
    circuit_breaker:
      max_requests: 1000
      max_pending: 100
    retry:
      attempts: 2
      budget: 20%
      backoff: 25ms
"""
kPlainBlocks = """    outlier_detection:
      consecutive_failures: 0
"""


def listResult():
    tools = ",".join(
        '{"name":"%s","description":"Benchmark tool %s.","inputSchema":{"type":"object",'
        '"properties":{"q":{"type":"string"}}}}' % (n, n) for n in B.kNames)
    return '{"jsonrpc":"2.0","id":1,"result":{"tools":[' + tools + ']}}'


# ---- configs ----------------------------------------------------------------------------------

def gatewayYaml(listenPort, adminPort, upstreams, routes, fdLimit):
    return f"""listen: 127.0.0.1:{listenPort}
endpoint: /mcp
workers: 1
limits:
  max_connections: {max(4096, fdLimit - 100)}
  max_connections_per_client: 0
  keepalive_timeout: 300s
mcp:
  protocol_versions: [2026-07-28]
  verify_body: false
upstreams:
{upstreams}routes:
{routes}access_log:
  path: "off"
log_level: info
drain_timeout: 1s
admin: 127.0.0.1:{adminPort}
"""


def writeCostConfigs(tmp, ports, fdLimit):
    # bench.py's upstream (the 300-byte result on every path), plus an explicit GET /healthz.
    B.writeConfigs(tmp, ports, fdLimit, 0)
    with open(f"{tmp}/upstream.conf") as f:
        text = f.read()
    loc = "        location / {\n"
    assert text.count(loc) == 1, "bench.py's upstream config changed"
    text = text.replace(loc, "        location = /healthz {\n            default_type text/plain;\n"
                             "            return 200 'ok';\n        }\n" + loc)
    with open(f"{tmp}/upstream.conf", "w") as f:
        f.write(text)
    for setup, blocks in ((kHealth, kHealthBlocks), (kPlain, kPlainBlocks)):
        ups = "".join(f"""  - name: up_{c}
    endpoints: [127.0.0.1:{ports['direct']}]
    max_idle_connections: 64
{blocks}""" for c in "abc")
        routes = "".join(f"""  - name: route_{c}
    match: {{ method: tools/call, name: tool_{c} }}
    upstream: up_{c}
""" for c in "abc")
        with open(f"{tmp}/{setup}.yaml", "w") as f:
            f.write(gatewayYaml(ports[setup], ports[setup + "-admin"], ups, routes, fdLimit)
                    .replace("log_level: info", "log_level: warn"))


def writeChaosConfigs(tmp, ports, fdLimit):
    for i in range(kEndpoints):
        with open(f"{tmp}/ep{i}.conf", "w") as f:
            f.write(f"""daemon off;
worker_processes 1;
events {{ worker_connections 4096; }}
pid {tmp}/ep{i}.pid;
error_log {tmp}/ep{i}-error.log warn;
http {{
    client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy;
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 300s;
    server {{
        listen 127.0.0.1:{ports[f'ep{i}']} backlog=4096;
        location = /healthz {{
            default_type text/plain;
            return 200 'ok';
        }}
        location / {{
            default_type application/json;
            return 200 '{listResult()}';
        }}
    }}
}}
""")
    eps = [f"127.0.0.1:{ports[f'ep{i}']}" for i in range(kEndpoints)]
    ups = f"""  - name: pool
    endpoints: [{', '.join(eps)}]
    connect_timeout: 200ms
    max_idle_connections: 64
    health_check:
      probe: http
      path: /healthz
      interval: 1s
      timeout: 500ms
      unhealthy_threshold: 1
      healthy_threshold: 1
    retry:
      attempts: 3
      budget: 100%
      backoff: 5ms
"""
    routes = """  - name: all
    upstream: pool
"""
    with open(f"{tmp}/chaos-gateway.yaml", "w") as f:
        f.write(gatewayYaml(ports["gateway"], ports["gateway-admin"], ups, routes, fdLimit))
    servers = "\n".join(f"        server {e} max_fails=1 fail_timeout=10s;" for e in eps)
    with open(f"{tmp}/chaos-nginx.conf", "w") as f:
        f.write(f"""daemon off;
worker_processes 1;
worker_rlimit_nofile {fdLimit};
events {{ worker_connections 4096; }}
pid {tmp}/chaos-nginx.pid;
error_log {tmp}/chaos-nginx-error.log warn;
http {{
    client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy;
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 300s;
    upstream pool {{
{servers}
        keepalive 64;
    }}
    server {{
        listen 127.0.0.1:{ports['nginx']} backlog=4096;
        location / {{
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_connect_timeout 200ms;
            proxy_next_upstream error timeout http_502 http_503 http_504 non_idempotent;
            proxy_next_upstream_tries 3;
            proxy_pass http://pool;
        }}
    }}
}}
""")
    servers = "\n".join(f"    server s{i} {e}" for i, e in enumerate(eps))
    with open(f"{tmp}/chaos-haproxy.cfg", "w") as f:
        f.write(f"""global
    nbthread 1
    maxconn 1000

defaults
    mode http
    timeout connect 200ms
    timeout client 300s
    timeout server 60s
    timeout check 500ms
    timeout http-keep-alive 300s
    http-reuse always
    retries 3
    option redispatch
    retry-on all-retryable-errors

frontend fe
    bind 127.0.0.1:{ports['haproxy']}
    default_backend be

backend be
    balance roundrobin
    option http-buffer-request
    option httpchk GET /healthz
    default-server check inter 1s fall 1 rise 1 observe layer7 error-limit 1 on-error mark-down
{servers}
""")


# ---- requests ---------------------------------------------------------------------------------

def httpRequest(port, raw):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(raw)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, payload = data.partition(b"\r\n\r\n")
    return head.decode(errors="replace").split("\r\n", 1)[0], payload


def listProbe(port):
    body = ('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{'
            '"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
            '"io.modelcontextprotocol/clientCapabilities":{}}}}').encode()
    req = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           "Accept: application/json, text/event-stream\r\n"
           "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n"
           f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
    status, payload = httpRequest(port, req)
    if " 200 " not in status + " " or payload.decode(errors="replace") != listResult():
        return [f"tools/list: {status!r} {payload[:200]!r}"]
    return []


def httpGet(port, path):
    try:
        return httpRequest(port, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                 "Connection: close\r\n\r\n".encode())[1].decode(errors="replace")
    except OSError:
        return ""


def gatewayMetrics(adminPort):
    """The failing-upstream series of a gateway's /metrics, as printed: {series: value}."""
    out = {}
    for line in httpGet(adminPort, "/metrics").splitlines():
        if line.startswith(("mcp_gateway_upstream_retries_total",
                            "mcp_gateway_upstream_ejections_total",
                            "mcp_gateway_upstream_endpoint_healthy",
                            "mcp_gateway_rejections_total")):
            key, _, value = line.rpartition(" ")
            try:
                out[key] = float(value)
            except ValueError:
                pass
    return out


def runChaosWrk(port, seconds, schedule=None):
    """One wrk run of bench/chaos_list.lua; `schedule` (offset seconds, action) pairs run while
    it lasts. Returns wrk's BENCH figures and the events as run (offset, description)."""
    argv = ["taskset", "-c", B.kLoadCpu, "wrk", "-t1", f"-c{kChaosConns}", f"-d{seconds}s",
            "--latency", "-s", os.path.join(B.kHere, "chaos_list.lua"),
            f"http://127.0.0.1:{port}/mcp"]
    t0 = time.time()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    done = []
    try:
        for offset, what, action in schedule or []:
            delay = t0 + offset - time.time()
            if delay > 0:
                time.sleep(delay)
            action()
            done.append((time.time() - t0, what))
        out, err = p.communicate(timeout=seconds + 60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    m = re.search(r"^BENCH (.*)$", out, re.M)
    if not m:
        raise RuntimeError(f"wrk printed no BENCH line:\n{out}\n{err}")
    r = {}
    for kv in m.group(1).split():
        k, v = kv.split("=", 1)
        r[k] = v if k in ("statuses", "series") else float(v)
    r["statuses"] = {} if r["statuses"] == "-" else {
        int(k): int(v) for k, v in (x.split(":") for x in r["statuses"].split(","))}
    r["series"] = {} if r["series"] == "-" else {
        int(k) - int(t0): int(v) for k, v in (x.split(":") for x in r["series"].split(","))}
    r["wrk_errors"] = r["connect"] + r["read"] + r["write"] + r["timeout"]
    r["total"] = r["requests"] + r["connect"] + r["read"] + r["write"]
    r["failed"] = r["non2xx"] + r["wrk_errors"]
    r["success_pct"] = 100.0 * (1 - r["failed"] / r["total"]) if r["total"] else None
    r["rps"] = r["requests"] / (r["duration_us"] / 1e6)
    r["events"] = done
    return r


# ---- the endpoints of part 2 ------------------------------------------------------------------

class Endpoints:
    def __init__(self, tmp, ports):
        self.tmp, self.ports = tmp, ports
        self.procs = [None] * kEndpoints
        self.kills = 0

    def start(self, i):
        if self.procs[i] is not None and self.procs[i].poll() is None:
            return
        self.procs[i] = B.spawn(["nginx", "-p", self.tmp, "-e", f"{self.tmp}/ep{i}-error.log",
                                 "-c", f"{self.tmp}/ep{i}.conf"], f"{self.tmp}/ep{i}.out",
                                B.kLoadCpu)
        B.waitPort(self.ports[f"ep{i}"], self.procs[i], f"endpoint {i}")

    def stop(self, i):
        p = self.procs[i]
        if p is None or p.poll() is not None:
            return
        try:
            os.killpg(p.pid, signal.SIGKILL)  # master and worker: connections reset at once
        except ProcessLookupError:
            pass
        p.wait(timeout=10)
        self.kills += 1

    def startAll(self):
        for i in range(kEndpoints):
            self.start(i)

    def down(self):
        return [i for i in range(kEndpoints) if self.procs[i] is None or self.procs[i].poll()
                is not None]


def faultSchedule(eps, seconds):
    """Six slots; in the middle of slot k: start endpoint (k-2) mod 4 again (k >= 2), then kill
    endpoint k mod 4. At most two endpoints are down at any time."""
    slot = seconds / 6.0
    out = []
    for k in range(6):
        t = slot * (k + 0.5)
        if k >= 2:
            j = (k - 2) % kEndpoints
            out.append((t, f"start ep{j}", lambda j=j: eps.start(j)))
        i = k % kEndpoints
        out.append((t, f"kill ep{i}", lambda i=i: eps.stop(i)))
    return out


# ---- main -------------------------------------------------------------------------------------

def checkConfig(gateway, path):
    chk = subprocess.run([gateway, "check", "-c", path], capture_output=True, text=True,
                         timeout=60)
    if chk.returncode != 0:
        raise RuntimeError(f"gateway check failed for {path}:\n{chk.stdout}{chk.stderr}")
    return (chk.stdout + chk.stderr).strip()


def logLines(path, pattern, limit=12):
    try:
        with open(path, errors="replace") as f:
            lines = [l.rstrip() for l in f if re.search(pattern, l)]
    except OSError:
        return 0, []
    return len(lines), lines[:limit]


def partCost(gateway, tmp, fdLimit, seconds, runs):
    ports = {s: B.freePort() for s in B.kSetups + ["sse", "nginx-sse"] + kCostSetups
             + [g + "-admin" for g in kCostSetups]}
    B.log(f"[health] part 1 (no cost when nothing fails): ports {ports}")
    writeCostConfigs(tmp, ports, fdLimit)
    checks = {s: checkConfig(gateway, f"{tmp}/{s}.yaml") for s in kCostSetups}
    procs = {}
    procs["upstream"] = B.spawn(["nginx", "-p", tmp, "-e", f"{tmp}/upstream-error.log",
                                 "-c", f"{tmp}/upstream.conf"], f"{tmp}/upstream.out", B.kLoadCpu)
    B.waitPort(ports["direct"], procs["upstream"], "upstream nginx")
    if "ok" != httpGet(ports["direct"], "/healthz"):
        raise RuntimeError("the upstream does not answer GET /healthz with ok")
    for s in kCostSetups:
        procs[s] = B.spawn([gateway, "run", "-c", f"{tmp}/{s}.yaml"], f"{tmp}/{s}.log",
                           B.kProxyCpu)
    for s in kCostSetups:
        B.waitPort(ports[s], procs[s], s)
        B.waitPort(ports[s + "-admin"], procs[s], s + " admin")
    for s in kCostSetups:
        problems = B.probe(ports[s])
        if problems:
            raise RuntimeError(f"{s} does not answer as expected:\n" + "\n".join(problems))
    B.log("[health] warm-up")
    for s in kCostSetups:
        B.runWrk(ports[s], 1, 50, False)
    cap = {s: [] for s in kCostSetups}
    for run in range(runs):
        for s in ([kHealth, kPlain] if run % 2 == 0 else [kPlain, kHealth]):
            r = bridge.measure(procs, ports, s, seconds, False)
            cap[s].append(r)
            B.log(f"[health] run {run + 1} {s}: {r['rps']:,.0f} req/s, "
                  f"{B.fmt(r['cpu_us'], 2)} µs CPU/req, p99 {r['p99_us']:.0f} µs, "
                  f"errors {r['errors']:.0f}")
    after = {s: B.probe(ports[s]) for s in kCostSetups}
    upstreams = {s: httpGet(ports[s + "-admin"], "/upstreams") for s in kCostSetups}
    metrics = {s: gatewayMetrics(ports[s + "-admin"]) for s in kCostSetups}
    logs = {s: logLines(f"{tmp}/{s}.log", r"\[(warn|err)") for s in kCostSetups}
    B.stopAll()
    return {"cap": cap, "after": after, "upstreams": upstreams, "metrics": metrics,
            "logs": logs, "checks": checks}


def partChaos(gateway, tmp, fdLimit, seconds):
    ports = {s: B.freePort() for s in kChaosSetups + ["gateway-admin"]
             + [f"ep{i}" for i in range(kEndpoints)]}
    B.log(f"[health] part 2 (chaos): ports {ports}")
    writeChaosConfigs(tmp, ports, fdLimit)
    check = checkConfig(gateway, f"{tmp}/chaos-gateway.yaml")
    eps = Endpoints(tmp, ports)
    eps.startAll()
    for i in range(kEndpoints):
        p = listProbe(ports[f"ep{i}"])
        if p:
            raise RuntimeError(f"endpoint {i} does not answer as expected: {p}")
    procs = {}
    procs["gateway"] = B.spawn([gateway, "run", "-c", f"{tmp}/chaos-gateway.yaml"],
                               f"{tmp}/chaos-gateway.log", B.kProxyCpu)
    procs["haproxy"] = B.spawn(["haproxy", "-db", "-f", f"{tmp}/chaos-haproxy.cfg"],
                               f"{tmp}/chaos-haproxy.log", B.kProxyCpu)
    procs["nginx"] = B.spawn(["nginx", "-p", tmp, "-e", f"{tmp}/chaos-nginx-error.log",
                              "-c", f"{tmp}/chaos-nginx.conf"], f"{tmp}/chaos-nginx.out",
                             B.kProxyCpu)
    for s in kChaosSetups:
        B.waitPort(ports[s], procs[s], s)
    B.waitPort(ports["gateway-admin"], procs["gateway"], "gateway admin")
    time.sleep(kSettleSeconds)  # the first health checks
    for s in kChaosSetups:
        p = listProbe(ports[s])
        if p:
            raise RuntimeError(f"{s} does not answer tools/list as expected: {p}")
    res = {}
    for s in kChaosSetups:
        eps.startAll()
        time.sleep(kSettleSeconds)  # health checks see every endpoint up again
        m0 = gatewayMetrics(ports["gateway-admin"]) if s == "gateway" else None
        cpu0 = B.cpuTicks(procs[s].pid)
        base = runChaosWrk(ports[s], kBaselineSeconds)
        B.log(f"[health] {s} without faults: {base['rps']:,.0f} req/s, success "
              f"{base['success_pct']:.4f} %, p99 {base['p99_us']:.0f} µs, non-2xx "
              f"{base['non2xx']:.0f}, wrk errors {base['wrk_errors']:.0f}")
        m1 = gatewayMetrics(ports["gateway-admin"]) if s == "gateway" else None
        cpu1 = B.cpuTicks(procs[s].pid)
        kills0 = eps.kills
        r = runChaosWrk(ports[s], seconds, faultSchedule(eps, seconds))
        cpu2 = B.cpuTicks(procs[s].pid)
        r["down_at_end"] = eps.down()
        r["kills"] = eps.kills - kills0
        eps.startAll()
        tick = os.sysconf("SC_CLK_TCK")
        base["cpu_us"] = (cpu1 - cpu0) / tick / base["requests"] * 1e6 if base["requests"] else None
        r["cpu_us"] = (cpu2 - cpu1) / tick / r["requests"] * 1e6 if r["requests"] else None
        if s == "gateway":
            m2 = gatewayMetrics(ports["gateway-admin"])
            base["metrics"] = {k: v - m0.get(k, 0.0) for k, v in m1.items()
                               if v - m0.get(k, 0.0) and "endpoint_healthy" not in k}
            r["metrics"] = {k: v - m1.get(k, 0.0) for k, v in m2.items()
                            if v - m1.get(k, 0.0) and "endpoint_healthy" not in k}
            r["upstreams"] = httpGet(ports["gateway-admin"], "/upstreams")
        res[s] = {"base": base, "chaos": r}
        B.log(f"[health] {s} chaos ({seconds} s): {r['rps']:,.0f} req/s, success "
              f"{r['success_pct']:.4f} %, p99 {r['p99_us']:.0f} µs, non-2xx {r['non2xx']:.0f} "
              f"{r['statuses']}, wrk errors {r['wrk_errors']:.0f}")
    time.sleep(kSettleSeconds)
    after = {s: listProbe(ports[s]) for s in kChaosSetups}
    logs = {
        "gateway": logLines(f"{tmp}/chaos-gateway.log", r"\[(warn|err)|is (down|up)|ejected"),
        "nginx": logLines(f"{tmp}/chaos-nginx-error.log", r"\S"),
        "haproxy": logLines(f"{tmp}/chaos-haproxy.log", r"\S"),
    }
    B.stopAll()
    return {"res": res, "after": after, "logs": logs, "check": check}


def main():
    gateway, resultsDir = sys.argv[1:3]
    seconds = int(os.environ.get("BENCH_SECONDS", "10"))
    runs = max(3, int(os.environ.get("BENCH_HEALTH_RUNS", "5")))
    chaosSeconds = max(12, int(os.environ.get("BENCH_CHAOS_SECONDS", "60")))
    import resource
    fdLimit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    tmp = tempfile.mkdtemp(prefix="mcp-bench-health-")
    stamp = datetime.datetime.now().strftime("%Y-%m-%d-%H%M")
    B.log(f"[health] work dir {tmp}")
    loads = [("start", B.loadavg())]
    cost = partCost(gateway, tmp, fdLimit, seconds, runs)
    loads.append(("chaos", B.loadavg()))
    chaos = partChaos(gateway, tmp, fdLimit, chaosSeconds)
    loads.append(("end", B.loadavg()))
    os.makedirs(resultsDir, exist_ok=True)
    report = os.path.join(resultsDir, f"{stamp}-health.md")
    summary = writeReport(report, gateway, tmp, seconds, runs, chaosSeconds, cost, chaos, loads)
    shutil.rmtree(tmp, ignore_errors=True)
    print(summary, flush=True)
    B.log(f"[health] report: {report}")


# ---- report -----------------------------------------------------------------------------------

def pct(x, digits=3):
    return "—" if x is None else f"{x:.{digits}f} %"


def writeReport(path, gateway, tmp, seconds, runs, chaosSeconds, cost, chaos, loads):
    fmt, med, perRun = B.fmt, B.med, bridge.perRun
    cap = cost["cap"]
    res = chaos["res"]
    v = B.versions(gateway)
    L = []
    w = L.append
    rr = perRun(cap, "rps", kHealth, kPlain)
    rc = perRun(cap, "cpu_us", kHealth, kPlain)
    gw = res["gateway"]["chaos"]
    okRps = med(rr) is not None and med(rr) >= kGoalRps
    okChaos = gw["success_pct"] is not None and gw["success_pct"] >= kGoalSuccess
    w(f"# mcp-gateway failing-upstreams benchmark (issue #29) — "
      f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}\n")
    w("## Headline\n")
    w(f"- **No cost when nothing fails** — gateway-health ÷ gateway-plain tools/call req/s = "
      f"**{fmt(med(rr), 3)}** (median of the per-round ratios "
      f"{', '.join(fmt(x, 3) for x in rr)}; goal ≥ {kGoalRps:.2f}) → "
      f"**{'MET' if okRps else 'NOT MET'}**. CPU per request ratio {fmt(med(rc), 3)} (per round "
      f"{', '.join(fmt(x, 3) for x in rc)}; < 1 = the health config is cheaper).")
    w(f"- **Chaos: gateway ≥ {kGoalSuccess} % success** while two of four endpoints fail in "
      f"turns ({chaosSeconds} s, wrk -c{kChaosConns}, tools/list) — gateway "
      f"**{pct(gw['success_pct'])}** (p99 {fmt(gw['p99_us'] / 1000, 2)} ms) → "
      f"**{'MET' if okChaos else 'NOT MET'}**; HAProxy {pct(res['haproxy']['chaos']['success_pct'])}"
      f" (p99 {fmt(res['haproxy']['chaos']['p99_us'] / 1000, 2)} ms), nginx "
      f"{pct(res['nginx']['chaos']['success_pct'])} (p99 "
      f"{fmt(res['nginx']['chaos']['p99_us'] / 1000, 2)} ms).")
    if chaosSeconds != 60:
        w(f"- the chaos runs lasted {chaosSeconds} s (BENCH_CHAOS_SECONDS), not the default 60 s; "
          "the schedule is scaled (six slots of a sixth each)")
    w("")
    w("## Environment\n")
    w(f"- host: {platform.node()}, {os.cpu_count()} CPUs, kernel {platform.release()}")
    w("- load average (1/5/15 min) when each part began: "
      + "; ".join(f"{n} {x}" for n, x in loads)
      + " — **shared machine: only same-round ratios are meaningful**")
    for k, x in v.items():
        w(f"- {k}: {x}")
    w(f"- gateway binary: `{gateway}`")
    w("- proxies pinned with `taskset -c 0` (one worker / thread each); wrk and the upstream "
      "nginx instances on CPU 1\n")

    w("## Part 1: no cost when nothing fails\n")
    w("### Method\n")
    w(f"`wrk -t1 -c50 -d{seconds}s` with bench.py's 250-byte 2026-07-28 `tools/call` "
      "(`bench/mcp_call.lua`, `Mcp-Name` rotating over tool_a/b/c) against two gateways, "
      f"{runs} rounds, each visiting both back to back (order flipped every other round). Both "
      "run bench.py's gateway-header config without its SSE upstream and routes (`workers: 1`, "
      "three routes on `Mcp-Name`, three upstream names on one address, access log off). "
      "Upstream: bench.py's nginx (one worker, CPU 1), the 300-byte result for every POST, "
      "and `location = /healthz` answering `200 ok`.\n")
    w("| setup | every upstream has |")
    w("|---|---|")
    w(f"| {kHealth} | `health_check: {{probe: http, path: /healthz, interval: 10s, timeout: 2s, "
      "unhealthy_threshold: 3, healthy_threshold: 2}`, `outlier_detection: "
      "{consecutive_failures: 5, ejection_time: 30s, max_ejection_percent: 50}`, "
      "`circuit_breaker: {max_requests: 1000, max_pending: 100}`, `retry: {attempts: 2, "
      "budget: 20%, backoff: 25ms}` |")
    w(f"| {kPlain} | `outlier_detection: {{consecutive_failures: 0}}` (outlier detection is on by "
      "default) and nothing else |")
    w("")
    w("`mcp-gateway check -c` accepted both: "
      + "; ".join(f"{s}: `{c.splitlines()[0] if c else 'ok'}`" for s, c in cost["checks"].items())
      + "\n")
    w("### Results (medians over the rounds)\n")
    w("| setup | req/s | CPU µs/req | user µs/req | sys µs/req | proxy busy | p99 µs (c50) | "
      "wrk errors (all rounds) |")
    w("|---|---|---|---|---|---|---|---|")
    for s in kCostSetups:
        w(f"| {s} | {fmt(med([r['rps'] for r in cap[s]]))} | "
          f"**{fmt(med([r['cpu_us'] for r in cap[s]]), 2)}** | "
          f"{fmt(med([r['user_us'] for r in cap[s]]), 2)} | "
          f"{fmt(med([r['sys_us'] for r in cap[s]]), 2)} | "
          f"{fmt(med([r['busy_pct'] for r in cap[s]]))} % | "
          f"{fmt(med([r['p99_us'] for r in cap[s]]))} | "
          f"{sum(r['errors'] for r in cap[s]):.0f} |")
    w("")

    def table(title, key, digits):
        w(f"#### {title}\n")
        w("| setup | " + " | ".join(f"round {i + 1}" for i in range(runs)) + " | median |")
        w("|" + "---|" * (runs + 2))
        for s in kCostSetups:
            vals = [r.get(key) for r in cap[s]]
            w(f"| {s} | " + " | ".join(fmt(x, digits) for x in vals)
              + f" | **{fmt(med(vals), digits)}** |")
        w("")

    w("### Raw figures\n")
    table("requests per second (wrk -c50)", "rps", 0)
    table("proxy CPU per request (µs; utime + stime ÷ requests, clock-tick resolution "
          f"{1000 // os.sysconf('SC_CLK_TCK')} ms)", "cpu_us", 2)
    table("proxy user CPU per request (µs)", "user_us", 2)
    table("proxy system CPU per request (µs)", "sys_us", 2)
    table("proxy CPU busy (% of one CPU)", "busy_pct", 0)
    table("CPU 1 (wrk + upstream) busy (%)", "load_busy_pct", 0)
    table("TCP segments sent per request", "segs_per_req", 2)
    table("p99 latency at c50 (µs)", "p99_us", 0)
    w("#### gateway-health ÷ gateway-plain, per round\n")
    w("| figure | " + " | ".join(f"round {i + 1}" for i in range(runs)) + " | median |")
    w("|" + "---|" * (runs + 2))
    for label, key in (("req/s", "rps"), ("CPU per request", "cpu_us"), ("user CPU", "user_us"),
                       ("system CPU", "sys_us"), ("p99", "p99_us")):
        rs = perRun(cap, key, kHealth, kPlain)
        w(f"| {label} | " + " | ".join(fmt(x, 3) for x in rs) + f" | **{fmt(med(rs), 3)}** |")
    w("")
    w("### Checks\n")
    bad = {s: p for s, p in cost["after"].items() if p}
    w("- both gateways answered 200 and the upstream's 300 bytes on all three routes before and "
      "after the runs" + ("." if not bad else ": **after the runs: " + "; ".join(
          f"{s}: {', '.join(p)}" for s, p in bad.items()) + "**"))
    for s in kCostSetups:
        tot = {}
        for r in cap[s]:
            for k, x in r.get("reasons", {}).items():
                tot[k] = tot.get(k, 0.0) + x
        w(f"- {s} `mcp_gateway_rejections_total` increase over its runs: "
          + (", ".join(f"{k} {x:.0f}" for k, x in sorted(tot.items())) or "none")
          + " (`client_closed` = requests wrk cut when its duration ended)")
        m = {k: x for k, x in cost["metrics"][s].items()
             if not k.startswith("mcp_gateway_rejections_total")}
        w(f"- {s} failing-upstream metrics at the end: "
          + (", ".join(f"`{k}` {x:.0f}" for k, x in sorted(m.items())) or "none"))
        n, lines = cost["logs"][s]
        w(f"- {s} log warnings/errors: {n}" + (" — " + "; ".join(f"`{x}`" for x in lines)
                                                  if lines else ""))
    up = cost["upstreams"][kHealth]
    w(f"- {kHealth} admin `GET /upstreams` at the end: `{compactJson(up, 1500)}`")
    w("")

    w("## Part 2: chaos — two of four endpoints failing in turns\n")
    w("### Method\n")
    w(f"Four upstream endpoints: four nginx instances (one worker each, CPU 1) answering a "
      f"{len(listResult())}-byte `tools/list` result to every POST and `200 ok` to "
      "`GET /healthz`. Three proxies in front of all four, each on CPU 0:\n")
    w("| proxy | failure handling |")
    w("|---|---|")
    w("| gateway | one upstream, `endpoints: [four]`, `connect_timeout: 200ms`, "
      "`outlier_detection` defaults (5 consecutive failures, 30 s, 50 %), `health_check: "
      "{probe: http, path: /healthz, interval: 1s, timeout: 500ms, unhealthy_threshold: 1, "
      "healthy_threshold: 1}`, `retry: {attempts: 3, budget: 100%, backoff: 5ms}` (default "
      "`on` and `methods`: tools/list is retried), one route without `match`, `workers: 1` |")
    w("| haproxy | `nbthread 1`, `balance roundrobin`, `option httpchk GET /healthz`, "
      "`check inter 1s fall 1 rise 1 observe layer7 error-limit 1 on-error mark-down`, "
      "`retry-on all-retryable-errors`, `retries 3`, `option redispatch`, "
      "`option http-buffer-request` (so the POST body is held for a retry), `timeout connect "
      "200ms`, `timeout check 500ms`, `http-reuse always` |")
    w("| nginx | one worker, `server … max_fails=1 fail_timeout=10s` ×4, `keepalive 64`, "
      "`proxy_next_upstream error timeout http_502 http_503 http_504 non_idempotent` (nginx "
      "retries a POST only with `non_idempotent`), `proxy_next_upstream_tries 3`, "
      "`proxy_connect_timeout 200ms` (no active checks: open-source nginx has none) |")
    w("")
    w(f"Load: `wrk -t1 -c{kChaosConns} -d{chaosSeconds}s --latency` with `bench/chaos_list.lua` "
      "(a 2026-07-28 `tools/list` POST, `MCP-Protocol-Version: 2026-07-28`, `Mcp-Method: "
      "tools/list`; every non-2xx answer counted by status and second). Fault schedule (the "
      f"same for every proxy, restarted for each): the run is cut into six slots of "
      f"{chaosSeconds / 6:.1f} s; in the middle of slot k endpoint k mod 4 is killed "
      "(`SIGKILL` to its nginx master and worker: open connections reset, new connects "
      "refused) and from k = 2 on endpoint (k − 2) mod 4 is started again just before, so two "
      "endpoints fail in turns and never more than two at a time (ep0 down, ep0+ep1, ep1+ep2, "
      "ep2+ep3, ep3+ep0, ep0+ep1). After each run every endpoint is started again and the "
      f"proxies get {kSettleSeconds} s for their checks before the next. Each chaos run is "
      f"preceded by a {kBaselineSeconds} s run without faults.\n")
    w("Success share = 2xx answers ÷ all requests, where all = answered requests + wrk's "
      "connect, read and write errors (requests that got no answer); failures = non-2xx + "
      "connect + read + write + timeout errors (a timed-out request may also be counted as "
      "answered: conservative). Latency is wrk's, over answered requests.\n")
    w("### Results\n")
    w("| proxy | run | requests | req/s | success | non-2xx | by status | wrk errors c/r/w/t | "
      "p50 ms | p99 ms | p99.9 ms | max ms | proxy CPU µs/req |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for s in kChaosSetups:
        for label, r in (("no faults", res[s]["base"]), ("chaos", res[s]["chaos"])):
            w(f"| {s} | {label} | {r['requests']:.0f} | {fmt(r['rps'])} | "
              f"**{pct(r['success_pct'])}** | {r['non2xx']:.0f} | "
              f"{', '.join(f'{k}: {n}' for k, n in sorted(r['statuses'].items())) or '—'} | "
              f"{r['connect']:.0f}/{r['read']:.0f}/{r['write']:.0f}/{r['timeout']:.0f} | "
              f"{r['p50_us'] / 1000:.2f} | {r['p99_us'] / 1000:.2f} | {r['p999_us'] / 1000:.2f} | "
              f"{r['max_us'] / 1000:.1f} | {fmt(r.get('cpu_us'), 2)} |")
    w("")
    w("### When the failures happened (non-2xx per second of the chaos run)\n")
    w("| proxy | fault events as run (s since wrk start) | non-2xx by second |")
    w("|---|---|---|")
    for s in kChaosSetups:
        r = res[s]["chaos"]
        w(f"| {s} | " + ", ".join(f"{t:.1f} {e}" for t, e in r["events"]) + " | "
          + (", ".join(f"{t}: {n}" for t, n in sorted(r["series"].items())) or "none") + " |")
    w("")
    w("### Checks\n")
    w("- `mcp-gateway check -c` accepted the chaos config"
      + (f": `{chaos['check'].splitlines()[0]}`" if chaos["check"] else ""))
    for s in kChaosSetups:
        r = res[s]["chaos"]
        w(f"- {s}: {r['kills']} kills during the run; endpoints down when wrk ended: "
          f"{', '.join(f'ep{i}' for i in r['down_at_end']) or 'none'} (all started again after)")
    bad = {s: p for s, p in chaos["after"].items() if p}
    w("- every proxy answered tools/list 200 with the upstream's list before the runs and after "
      "the last one" + ("." if not bad else ": **after: " + "; ".join(
          f"{s}: {', '.join(p)}" for s, p in bad.items()) + "**"))
    gb = res["gateway"]
    w("- gateway metrics change during the no-fault run: "
      + (", ".join(f"`{k}` {x:+.0f}" for k, x in sorted(gb["base"]["metrics"].items()))
         or "none"))
    w("- gateway metrics change during the chaos run: "
      + (", ".join(f"`{k}` {x:+.0f}" for k, x in sorted(gb["chaos"]["metrics"].items()))
         or "none"))
    w(f"- gateway admin `GET /upstreams` after the chaos run: "
      f"`{compactJson(gb['chaos']['upstreams'], 3000)}`")
    for s in kChaosSetups:
        n, lines = chaos["logs"][s]
        w(f"- {s} log lines of note: {n}" + (" — first: " + "; ".join(f"`{x}`" for x in lines)
                                             if lines else ""))
    w("")
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")

    S = ["", "Failing-upstreams benchmark (issue #29)", "",
         f"part 1: gateway-health ÷ gateway-plain req/s {fmt(med(rr), 3)} (per round "
         f"{', '.join(fmt(x, 3) for x in rr)}; goal ≥ {kGoalRps}) → "
         f"{'MET' if okRps else 'NOT MET'}; CPU per request {fmt(med(rc), 3)} (per round "
         f"{', '.join(fmt(x, 3) for x in rc)})",
         f"part 2 ({chaosSeconds} s chaos): "
         + ", ".join(f"{s} {pct(res[s]['chaos']['success_pct'])} success, p99 "
                     f"{res[s]['chaos']['p99_us'] / 1000:.2f} ms" for s in kChaosSetups)
         + f"; gateway goal ≥ {kGoalSuccess} % → {'MET' if okChaos else 'NOT MET'}"]
    return "\n".join(S)


def compactJson(text, limit):
    try:
        text = json.dumps(json.loads(text), separators=(",", ":"))
    except ValueError:
        text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


if __name__ == "__main__":
    B.runDriver(main, "[health] failed; the work directory /tmp/mcp-bench-health-* above is kept "
                      "(configs and every process's log)")
