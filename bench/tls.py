#!/usr/bin/env python3
"""TLS-termination and JWT benchmark behind bench/run.sh (issue #17; never part of the tests).

Two questions, each answered with same-round ratios (median over >= 3 interleaved rounds):

  TLS termination  mcp-gateway (`tls: {cert, key}`), nginx (`listen ... ssl`) and HAProxy
                   (`bind ... ssl crt`) terminate TLS in front of bench.py's routes (a 2026-07-28
                   tools/call routed by Mcp-Name, three routes, one plain-HTTP nginx upstream):
                   keepalive  wrk -t1 -c50 over https: req/s and proxy CPU per request
                   full       bench/tls_handshake.c: new connections, each a full handshake
                              (RSA-2048 certificate) + one request: handshakes/s, CPU each
                   resumed    the same, every connection resuming the previous one's session
                              (TLS 1.3 ticket): handshakes/s, CPU each, resumed fraction
  JWT (RS256)      jwt: the plain-HTTP gateway with a policy that requires a JWT
                   (identity.jwt, keys_file = an RS256 JWKS, anonymous: deny) under wrk sending
                   one valid token on every request (the verified-token cache is what is
                   measured) against none: the same policy without identity (no token sent),
                   and no-policies: bench.py's gateway-header config as it is

The configs are bench.py's (bench.writeConfigs), with TLS added to the gateway-header, nginx
and HAProxy listeners; the certificate (RSA-2048, self-signed) and the JWT key are made with
the openssl CLI in the work directory at run time and removed with it. Proxies on CPU 0 (one
worker / thread each), wrk, the handshake client and the upstream nginx on CPU 1. Ports are
picked at run time on 127.0.0.1; every child runs in its own process group and is killed and
reaped on exit (bench.stopAll).

Usage: tls.py GATEWAY_BINARY RESULTS_DIR TLS_HANDSHAKE_BINARY
Environment: BENCH_SECONDS (length of each run, default 10), BENCH_RUNS (default 3, min 3),
BENCH_TLS_CONNS (concurrent connection loops of the handshake client, default 8),
BENCH_TLS_VERSION (the handshake client's TLS version: 1.3 (default) or 1.2).
"""

import base64
import datetime
import http.client
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402  (configs, spawn/stopAll, CPU readers, runWrk, med, fmt)
import federation as F  # noqa: E402  (callBody, mcpHeaders, perRun, report pieces)

kTlsSetups = ["gateway", "nginx", "haproxy"]
kJwtSetups = ["jwt", "none", "none-token", "no-policies"]
kWorkloads = ["keepalive", "full", "resumed", "jwt"]
kSetupsOf = {"keepalive": kTlsSetups, "full": kTlsSetups, "resumed": kTlsSetups,
             "jwt": kJwtSetups}
kRefs = ["nginx", "haproxy"]
kWithToken = ("jwt", "none-token")  # the JWT setups wrk sends the token to
kJwtGoal = 0.95
kIssuer = "https://issuer.bench.invalid"
kAudience = "mcp-gateway-bench"
kKid = "bench-rs256"
kTokenLifetime = 24 * 3600  # seconds: far beyond any run
kConfOf = {"gateway": "gw-tls", "jwt": "gw-jwt", "none": "gw-none",
           "none-token": "gw-none-token", "no-policies": "gw-plain"}

fmt = B.fmt
med = B.med
perRun = F.perRun


def log(msg):
    print(f"[tls {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def replaceOnce(text, old, new):
    if text.count(old) != 1:
        raise RuntimeError(f"expected exactly one {old!r} in a bench.py config")
    return text.replace(old, new)


def rewrite(path, old, new):
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(replaceOnce(text, old, new))


def openssl(*args, stdin=None):
    p = subprocess.run(["openssl", *args], input=stdin, capture_output=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {p.stderr.decode(errors='replace')}")
    return p.stdout


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def makeKeys(tmp):
    """The TLS certificate (one for all three proxies) and the JWT signing key, its JWKS and one
    token. Returns (token, certificate sha256 fingerprint)."""
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{tmp}/tls-key.pem",
            "-out", f"{tmp}/tls-cert.pem", "-days", "30", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1")
    with open(f"{tmp}/haproxy.pem", "wb") as f:  # HAProxy's crt: certificate and key in one
        for part in ("tls-cert.pem", "tls-key.pem"):
            with open(f"{tmp}/{part}", "rb") as g:
                f.write(g.read())
    fp = openssl("x509", "-in", f"{tmp}/tls-cert.pem", "-noout", "-fingerprint",
                 "-sha256").decode().strip().split("=", 1)[1]

    openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
            "-out", f"{tmp}/jwt-key.pem")
    text = openssl("rsa", "-in", f"{tmp}/jwt-key.pem", "-noout", "-text").decode()
    if not re.search(r"publicExponent: 65537 ", text):
        raise RuntimeError("the JWT key's public exponent is not 65537")
    modulus = openssl("rsa", "-in", f"{tmp}/jwt-key.pem", "-noout",
                      "-modulus").decode().strip().split("=", 1)[1]
    n = bytes.fromhex(modulus)
    jwks = {"keys": [{"kty": "RSA", "kid": kKid, "alg": "RS256", "use": "sig", "n": b64url(n),
                      "e": b64url((65537).to_bytes(3, "big"))}]}
    with open(f"{tmp}/jwks.json", "w") as f:
        json.dump(jwks, f)
    now = int(time.time())
    header = {"alg": "RS256", "typ": "JWT", "kid": kKid}
    claims = {"iss": kIssuer, "aud": kAudience, "sub": "bench-client", "iat": now,
              "nbf": now - 60, "exp": now + kTokenLifetime, "groups": ["bench"]}
    signing = (b64url(json.dumps(header, separators=(",", ":")).encode()) + "." +
               b64url(json.dumps(claims, separators=(",", ":")).encode()))
    sig = openssl("dgst", "-sha256", "-sign", f"{tmp}/jwt-key.pem", stdin=signing.encode())
    if len(sig) != 256:
        raise RuntimeError(f"RS256 signature of {len(sig)} bytes, expected 256")
    return signing + "." + b64url(sig), fp


def writeConfigs(tmp, ports, fdLimit):
    """bench.py's configs, TLS added to its gateway-header, nginx and HAProxy listeners; the
    JWT gateways are its gateway-header config on ports of their own."""
    B.writeConfigs(tmp, ports, fdLimit, 0)
    # nginx before 1.23.4 leaves TLS 1.3 out of its default ssl_protocols: named here so that
    # all three negotiate the same version (the probes check it).
    rewrite(f"{tmp}/nginx.conf", f"listen 127.0.0.1:{ports['nginx']} backlog=4096;",
            f"""listen 127.0.0.1:{ports['nginx']} ssl backlog=4096;
        ssl_certificate {tmp}/tls-cert.pem;
        ssl_certificate_key {tmp}/tls-key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache shared:SSL:10m;
        ssl_session_tickets on;""")
    # HAProxy: session tickets are on by default, its session cache too (tune.ssl.cachesize).
    rewrite(f"{tmp}/haproxy.cfg", f"bind 127.0.0.1:{ports['haproxy']}\n",
            f"bind 127.0.0.1:{ports['haproxy']} ssl crt {tmp}/haproxy.pem alpn http/1.1\n")
    with open(f"{tmp}/gateway-header.yaml") as f:
        header = f.read()
    listen = f"listen: 127.0.0.1:{ports['gateway-header']}\n"
    replaceOnce(header, listen, listen)
    with open(f"{tmp}/gw-tls.yaml", "w") as f:
        f.write(header + f"""tls:
  cert: {tmp}/tls-cert.pem
  key: {tmp}/tls-key.pem
admin: 127.0.0.1:{ports['gateway-admin']}
""")
    rules = """rules:
  - name: tools
    match: { method: tools/call }
    action: allow
default: deny
"""
    with open(f"{tmp}/policy-jwt.yaml", "w") as f:
        f.write(f"""identity:
  jwt:
    issuer: {kIssuer}
    audiences: [{kAudience}]
    keys_file: {tmp}/jwks.json
  anonymous: deny
{rules}""")
    with open(f"{tmp}/policy-none.yaml", "w") as f:
        f.write(rules)
    for setup, policy in (("jwt", "policy-jwt.yaml"), ("none", "policy-none.yaml"),
                          ("none-token", "policy-none.yaml"), ("no-policies", None)):
        text = header.replace(listen, f"listen: 127.0.0.1:{ports[setup]}\n")
        text += f"admin: 127.0.0.1:{ports[setup + '-admin']}\n"
        if policy:
            text += f"policies: [{tmp}/{policy}]\n"
        with open(f"{tmp}/{kConfOf[setup]}.yaml", "w") as f:
            f.write(text)


# ---- probes -----------------------------------------------------------------------------------

def post(port, name, tls=False, headers=None, seen=None):
    """One tools/call; (status, body). seen (a dict) gets the TLS version and cipher."""
    if tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        c = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=ctx)
    else:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        h = F.mcpHeaders("tools/call", name)
        h.update(headers or {})
        c.request("POST", "/mcp", body=F.callBody(name).encode(), headers=h)
        r = c.getresponse()
        if seen is not None and tls:
            seen["version"] = c.sock.version()
            seen["cipher"] = c.sock.cipher()[0]
        return r.status, r.read()
    finally:
        c.close()


def probe(port, tls=False, headers=None, status=200, seen=None):
    """Problems with the answers on the three route names (empty = each answered `status`, and
    200s with bench.py's 300-byte upstream body)."""
    problems = []
    for name in B.kNames:
        got, body = post(port, name, tls, headers, seen)
        if got != status or (status == 200 and body.decode(errors="replace") != B.responseBody()):
            problems.append(f"{name}: HTTP {got}, {len(body)} bytes: {body[:160]!r} (expected "
                            f"{status})")
    return problems


def probeAll(ports, token):
    problems = {}
    seen = {}
    for setup in kTlsSetups:
        seen[setup] = {}
        problems[setup] = probe(ports[setup], tls=True, seen=seen[setup])
    # Python's client offers what wrk offers (OpenSSL defaults): every proxy must pick the same.
    if len({(x.get("version"), x.get("cipher")) for x in seen.values()}) != 1:
        problems["negotiated"] = [f"the proxies negotiate differently: {seen}"]
    bearer = {"Authorization": f"Bearer {token}"}
    problems["jwt"] = probe(ports["jwt"], headers=bearer)
    # The identity stage really runs: no token, or a token with a broken signature, is refused.
    problems["jwt"] += ["without a token: " + p for p in probe(ports["jwt"], status=401)]
    bad = token[:-6] + ("AAAAAA" if not token.endswith("AAAAAA") else "BBBBBB")
    problems["jwt"] += ["with a bad signature: " + p for p in
                        probe(ports["jwt"], headers={"Authorization": f"Bearer {bad}"},
                              status=401)]
    for setup in ("none", "no-policies"):
        problems[setup] = probe(ports[setup])
    problems["none-token"] = probe(ports["none-token"], headers=bearer)
    return {s: p for s, p in problems.items() if p}


# ---- measurement ------------------------------------------------------------------------------

def scrape(adminPort):
    """Every sample of the gateway's /metrics, keyed by the series as printed."""
    c = http.client.HTTPConnection("127.0.0.1", adminPort, timeout=10)
    try:
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
    finally:
        c.close()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            try:
                out[key] = float(value)
            except ValueError:
                pass
    return out


def delta(m0, m1, prefix):
    """{series: increase} for the series of metric `prefix` that changed."""
    return {k: v - m0.get(k, 0.0) for k, v in m1.items()
            if k.startswith(prefix) and v - m0.get(k, 0.0)}


def label(series, name):
    m = re.search(name + r'="([^"]*)"', series)
    return m.group(1) if m else "?"


def runHandshakes(client, port, mode, conns, seconds, version):
    argv = ["taskset", "-c", B.kLoadCpu, client, str(port), mode, str(conns), str(seconds),
            version]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 120)
    res = re.search(r"^RESULT (.*)$", p.stdout, re.M)
    info = re.search(r"^INFO (.*)$", p.stdout, re.M)
    if p.returncode != 0 or not res:
        raise RuntimeError(f"tls_handshake {mode} on port {port} failed ({p.returncode}): "
                           f"{p.stdout.strip()} {p.stderr.strip()[-2000:]}")
    r = {k: (float(v) if re.fullmatch(r"[\d.]+", v) else v)
         for k, v in (kv.split("=", 1) for kv in res.group(1).split())}
    r["info"] = info.group(1) if info else "?"
    r["requests"] = r["ok"]
    r["rps"] = r["rate"]
    r["duration_us"] = r["seconds"] * 1e6
    r["errors"] = r["failed"]
    r["resumed_frac"] = r["resumed"] / r["offered"] if r["offered"] else 0.0
    r["tickets_per_conn"] = r["tickets"] / r["ok"] if r["ok"] else None
    r["body_per_conn"] = r["body_bytes"] / r["ok"] if r["ok"] else None
    return r


def measure(procs, ports, workload, setup, seconds, token, client, conns, version):
    """One run of (workload, setup) with the proxy's CPU, CPU 1's and (gateways) the /metrics
    counters around it."""
    pid = procs[setup].pid
    admin = ports.get(setup + "-admin")
    m0 = scrape(admin) if admin else None
    u0, s0 = B.cpuTicksSplit(pid)
    l0 = B.cpuBusyTicks(B.kLoadCpu)
    if workload in ("full", "resumed"):
        r = runHandshakes(client, ports[setup], workload, conns, seconds, version)
    else:
        headers = [f"Authorization: Bearer {token}"] if setup in kWithToken else []
        r = B.runWrk(ports[setup], seconds, 50, False,
                     scheme="https" if workload == "keepalive" else "http", headers=headers)
    l1 = B.cpuBusyTicks(B.kLoadCpu)
    u1, s1 = B.cpuTicksSplit(pid)
    m1 = scrape(admin) if admin else None
    tick = os.sysconf("SC_CLK_TCK")
    r["user_s"] = (u1 - u0) / tick
    r["sys_s"] = (s1 - s0) / tick
    r["cpu_s"] = r["user_s"] + r["sys_s"]
    n = r["requests"]
    r["cpu_us"] = r["cpu_s"] / n * 1e6 if n else None
    r["user_us"] = r["user_s"] / n * 1e6 if n else None
    r["sys_us"] = r["sys_s"] / n * 1e6 if n else None
    r["busy_pct"] = 100 * r["cpu_s"] / (r["duration_us"] / 1e6)
    r["load_busy_pct"] = 100 * (l1[0] - l0[0]) / max(1, sum(l1) - sum(l0))
    if m0 is not None:
        hs = delta(m0, m1, "mcp_gateway_tls_handshakes_total")
        r["gw_handshakes"] = {label(k, "session"): v for k, v in hs.items()}
        fails = delta(m0, m1, "mcp_gateway_tls_handshake_failures_total")
        r["gw_handshake_failures"] = {label(k, "reason"): v for k, v in fails.items()}
        rej = delta(m0, m1, "mcp_gateway_rejections_total")
        r["reasons"] = {label(k, "reason"): v for k, v in rej.items()}
    return r


# ---- main -------------------------------------------------------------------------------------

def main():
    gateway, resultsDir, client = sys.argv[1:4]
    seconds = int(os.environ.get("BENCH_SECONDS", "10"))
    runs = max(3, int(os.environ.get("BENCH_RUNS", "3")))
    conns = max(1, int(os.environ.get("BENCH_TLS_CONNS", "8")))
    version = os.environ.get("BENCH_TLS_VERSION", "1.3")
    if version not in ("1.2", "1.3"):
        raise RuntimeError("BENCH_TLS_VERSION must be 1.2 or 1.3")
    import resource
    fdLimit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]

    tmp = tempfile.mkdtemp(prefix="mcp-bench-tls-")
    ports = {s: B.freePort() for s in B.kSetups + ["sse", "nginx-sse", "gateway-admin"]}
    for s in kJwtSetups:
        ports[s] = B.freePort()
        ports[s + "-admin"] = B.freePort()
    ports["gateway"] = ports["gateway-header"]  # bench.py's header config, with tls added
    stamp = datetime.datetime.now().strftime("%Y-%m-%d-%H%M")
    loads = [("start", B.loadavg())]
    log(f"work dir {tmp}; ports {ports}")
    token, fingerprint = makeKeys(tmp)
    writeConfigs(tmp, ports, fdLimit)
    for name in kConfOf.values():
        chk = subprocess.run([gateway, "check", "-c", f"{tmp}/{name}.yaml"], capture_output=True,
                             text=True)
        if chk.returncode != 0:
            raise RuntimeError(f"gateway check failed for {name}:\n{chk.stdout}{chk.stderr}")
    chk = subprocess.run(["nginx", "-t", "-p", tmp, "-e", f"{tmp}/nginx-error.log", "-c",
                          f"{tmp}/nginx.conf"], capture_output=True, text=True)
    if chk.returncode != 0:
        raise RuntimeError(f"nginx -t failed:\n{chk.stderr}")
    chk = subprocess.run(["haproxy", "-c", "-f", f"{tmp}/haproxy.cfg"], capture_output=True,
                         text=True)
    if chk.returncode != 0:
        raise RuntimeError(f"haproxy -c failed:\n{chk.stdout}{chk.stderr}")

    procs = {}
    procs["upstream"] = B.spawn(["nginx", "-p", tmp, "-e", f"{tmp}/upstream-error.log",
                                 "-c", f"{tmp}/upstream.conf"], f"{tmp}/upstream.out", B.kLoadCpu)
    B.waitPort(ports["direct"], procs["upstream"], "upstream nginx")
    for setup, name in kConfOf.items():
        procs[setup] = B.spawn([gateway, "run", "-c", f"{tmp}/{name}.yaml"], f"{tmp}/{name}.log",
                               B.kProxyCpu)
    procs["nginx"] = B.spawn(["nginx", "-p", tmp, "-e", f"{tmp}/nginx-error.log",
                              "-c", f"{tmp}/nginx.conf"], f"{tmp}/nginx.out", B.kProxyCpu)
    procs["haproxy"] = B.spawn(["haproxy", "-db", "-f", f"{tmp}/haproxy.cfg"],
                               f"{tmp}/haproxy.log", B.kProxyCpu)
    for setup in kTlsSetups + kJwtSetups:
        B.waitPort(ports[setup], procs[setup], setup)
    for setup in kConfOf:
        B.waitPort(ports[setup + "-admin"], procs[setup], setup + " admin")
    bad = probeAll(ports, token)
    if bad:
        raise RuntimeError("setups do not answer as expected:\n" + "\n".join(
            f"{s}: " + "; ".join(p) for s, p in bad.items()))
    log("TLS setups answer 200 with the 300-byte body on all three routes; the JWT gateway "
        "admits the token and refuses no token and a bad signature (401)")

    log("warm-up (also checks that the handshake client gets full and resumed handshakes)")
    infos, singleUse = {}, {}
    for setup in kTlsSetups:
        B.runWrk(ports[setup], 1, 50, False, scheme="https")
        for mode in ("full", "resumed"):
            r = runHandshakes(client, ports[setup], mode, conns, 1, version)
            infos[setup] = r["info"]
        # Not measured, only reported: how a client that uses each TLS 1.3 ticket once
        # (OpenSSL's client rule) fares; the resumed workload re-offers the last ticket instead.
        singleUse[setup] = runHandshakes(client, ports[setup], "resumed-once", conns, 2, version)
        log(f"single-use tickets, {setup}: {singleUse[setup]['resumed']:.0f} of "
            f"{singleUse[setup]['offered']:.0f} offers resumed, "
            f"{fmt(singleUse[setup]['tickets_per_conn'], 2)} tickets per connection")
    for setup in kJwtSetups:
        B.runWrk(ports[setup], 1, 50, False,
                 headers=[f"Authorization: Bearer {token}"] if setup in kWithToken else [])

    data = {w: {s: [] for s in kSetupsOf[w]} for w in kWorkloads}
    loads.append(("rounds", B.loadavg()))
    for run in range(runs):
        for workload in B.rotated(kWorkloads, run):
            for setup in B.rotated(kSetupsOf[workload], run):
                r = measure(procs, ports, workload, setup, seconds, token, client, conns,
                            version)
                data[workload][setup].append(r)
                extra = ""
                if workload in ("full", "resumed"):
                    extra = (f", resumed {r['resumed']:.0f}/{r['offered']:.0f}, tickets/conn "
                             f"{fmt(r['tickets_per_conn'], 2)}")
                if "gw_handshakes" in r and workload in ("full", "resumed"):
                    extra += f", gateway counted {r['gw_handshakes']}"
                log(f"run {run + 1} {workload} {setup}: {r['rps']:,.0f}/s, cpu "
                    f"{fmt(r['cpu_us'], 1)} us each (busy {r['busy_pct']:.0f}%, CPU 1 "
                    f"{r['load_busy_pct']:.0f}%), errors {r['errors']:.0f}{extra}")
    loads.append(("end", B.loadavg()))
    after = probeAll(ports, token)
    logs = {setup: F.tailOf(f"{tmp}/{name}.log") for setup, name in kConfOf.items()}
    B.stopAll()

    os.makedirs(resultsDir, exist_ok=True)
    report = os.path.join(resultsDir, f"{stamp}-tls.md")
    summary = writeReport(report, gateway, seconds, runs, conns, version, data, infos, singleUse,
                          after, logs, loads, fingerprint, len(token))
    shutil.rmtree(tmp, ignore_errors=True)
    print(summary, flush=True)
    log(f"TLS/JWT report: {report}")


# ---- report -----------------------------------------------------------------------------------

kWhat = {
    "keepalive": ("keep-alive req/s (wrk -c50, https)", "req/s", "proxy CPU per request"),
    "full": ("full handshakes/s (new connection + one request)", "conn/s",
             "proxy CPU per full handshake"),
    "resumed": ("resumed handshakes/s (new connection + one request)", "conn/s",
                "proxy CPU per resumed handshake"),
    "jwt": ("req/s (wrk -c50, plain HTTP)", "req/s", "gateway CPU per request"),
}


def writeReport(path, gateway, seconds, runs, conns, version, data, infos, singleUse, after,
                logs, loads, fingerprint, tokenBytes):
    L = []
    w = L.append
    w(f"## TLS termination and JWT (issue #17) — {datetime.datetime.now():%Y-%m-%d %H:%M}\n")
    F.writeEnvironment(w, gateway, loads)
    w(f"- openssl: {subprocess.run(['openssl', 'version'], capture_output=True, text=True).stdout.strip()}")
    w(f"- {runs} rounds, each visiting every workload and setup once (order rotated per round); "
      f"each run {seconds} s; every figure is the median over the rounds, every ratio the "
      "median of the same-round ratios")
    w("- proxies pinned to CPU 0 (`taskset -c 0`; `workers: 1` / one nginx worker / "
      "`nbthread 1`); wrk, `bench/tls_handshake.c` and the upstream nginx on CPU 1")
    w(f"- one certificate for all three: RSA-2048, self-signed, made by `openssl req` at run "
      f"time (sha256 {fingerprint[:23]}…); no cipher or group settings anywhere (OpenSSL's "
      "defaults; what was negotiated is listed below)")
    w("")
    w("| setup | what |")
    w("|---|---|")
    w("| gateway | bench.py's `gateway-header` config (three routes on `Mcp-Name`, one "
      "upstream, `workers: 1`) plus `tls: {cert, key}`: stateless tickets, keys in memory |")
    w("| nginx | bench.py's nginx config, `listen … ssl`, `ssl_session_cache shared:SSL:10m`, "
      "`ssl_session_tickets on` (nginx's random ticket key) |")
    w("| haproxy | bench.py's HAProxy config, `bind … ssl crt <cert+key> alpn http/1.1`; "
      "tickets and the session cache at their defaults (on) |")
    w("| jwt | the plain-HTTP `gateway-header` config plus a policy: `identity.jwt` (issuer, "
      "audience, `keys_file`: a JWKS with one RSA-2048 key, `alg: RS256`), `anonymous: deny`, "
      f"rule `allow tools/call`, `default: deny`; wrk sends one RS256 token ({tokenBytes} "
      "bytes, valid 24 h) as `Authorization: Bearer` on every request |")
    w("| none | the same config and policy without `identity` (anonymous callers allowed); wrk "
      "sends no token |")
    w("| none-token | the `none` gateway again (its own process), wrk sending the jwt setup's "
      "token, which it neither checks nor forwards: the same bytes as jwt, no verification |")
    w("| no-policies | bench.py's `gateway-header` config as it is (no `policies:`); no token |")
    w("")
    w(f"Workloads: **keepalive** = `wrk -t1 -c50 -d{seconds}s https://…` with "
      "`bench/mcp_call.lua` (the 250-byte `tools/call`, `Mcp-Name` rotating over three routes; "
      "50 TLS connections made once). **full** / **resumed** = `bench/tls_handshake.c`, "
      f"{conns} processes each looping over new connections for {seconds} s: TCP connect, TLS "
      f"{version} handshake (SNI localhost, ALPN http/1.1), the same POST, the whole answer "
      "read, close_notify, close; *full* never offers a session, *resumed* offers the newest "
      "session ticket the server sent (a copy: when a resumption brought no new ticket, the "
      "same one again). CPU per handshake = the "
      "proxy's CPU ÷ connections, so it includes accepting the connection and relaying its one "
      "request (the keep-alive figure shows what a request alone costs). **jwt** = `wrk -t1 "
      f"-c50 -d{seconds}s http://…` against jwt / none / none-token / no-policies.\n")

    head = "| ratio | " + " | ".join(f"round {i + 1}" for i in range(runs)) + " | median |"
    sep = "|" + "---|" * (runs + 2)
    w("### Headline: TLS termination, gateway ÷ nginx and gateway ÷ HAProxy (same round)\n")
    w("| figure | gateway ÷ nginx | gateway ÷ HAProxy |")
    w("|---|---|---|")
    for workload in ("keepalive", "full", "resumed"):
        title, _, cpuTitle = kWhat[workload]
        d = data[workload]
        w(f"| {title} | " + " | ".join(fmt(med(perRun(d, 'rps', 'gateway', r)), 2)
                                       for r in kRefs) + " |")
        w(f"| {cpuTitle} | " + " | ".join(fmt(med(perRun(d, 'cpu_us', 'gateway', r)), 2)
                                          for r in kRefs) + " |")
    w("")
    tickets = {s: med([r["tickets_per_conn"] for r in data["resumed"][s]]) for s in kTlsSetups}
    same = all(t is not None and abs(t - tickets["gateway"]) < 0.05 for t in tickets.values())
    w("Rates: > 1 = the gateway is faster; CPU: < 1 = the gateway is cheaper. When a proxy is "
      "not near 100 % busy (tables below), CPU 1 (the load side) was the limit and the rate "
      "ratio understates the difference: the CPU ratio is the efficiency figure. Tickets sent "
      "per resumed connection (*tickets per connection* below): " +
      ", ".join(f"{s} {fmt(t, 2)}" for s, t in tickets.items()) +
      (" — the same work on all three.\n" if same else
       " — they differ, so the resumed figures compare unequal work.\n"))
    w("Per round:\n")
    w(head)
    w(sep)
    for workload in ("keepalive", "full", "resumed"):
        for key, what in (("rps", "rate"), ("cpu_us", "CPU each")):
            for r in kRefs:
                w(F.ratioLine(f"{workload} {what}, gateway ÷ {r}",
                           perRun(data[workload], key, "gateway", r)))
    w("")
    w("### Headline: JWT (RS256) identity, same round\n")
    w(head)
    w(sep)
    d = data["jwt"]
    w(F.ratioLine("req/s, jwt ÷ none", perRun(d, "rps", "jwt", "none"), kJwtGoal))
    w(F.ratioLine("CPU per request, jwt ÷ none", perRun(d, "cpu_us", "jwt", "none")))
    w(F.ratioLine("req/s, jwt ÷ no-policies", perRun(d, "rps", "jwt", "no-policies")))
    w(F.ratioLine("CPU per request, jwt ÷ no-policies", perRun(d, "cpu_us", "jwt", "no-policies")))
    w(F.ratioLine("req/s, jwt ÷ none-token (the same bytes)", perRun(d, "rps", "jwt", "none-token")))
    w(F.ratioLine("CPU per request, jwt ÷ none-token (the same bytes)",
                  perRun(d, "cpu_us", "jwt", "none-token")))
    w(F.ratioLine("req/s, none ÷ no-policies", perRun(d, "rps", "none", "no-policies")))
    w("")
    w("With the gateway well below 100 % busy (tables below) the req/s ratio also carries the "
      f"load side's extra work: wrk formats and sends the {tokenBytes}-byte token with every "
      "jwt request. 1 ÷ the CPU-per-request ratio is the req/s ratio a gateway-bound run "
      "would show.\n")

    def table(title, key, digits, unit):
        F.roundsTable(w, title, data, key, digits, unit, runs, kSetupsOf, kWorkloads)

    w("### Raw figures\n")
    table("rate (keepalive, jwt: requests/s; full, resumed: connections/s)", "rps", 0, "/s")
    table("proxy CPU per request / connection (µs; utime + stime of the process tree ÷ "
          f"requests, clock-tick resolution {1000 // os.sysconf('SC_CLK_TCK')} ms)", "cpu_us", 1,
          "µs")
    w("#### user / system CPU per request / connection (µs, medians)\n")
    w("| workload | setup | user | system |")
    w("|---|---|---|---|")
    for workload in kWorkloads:
        for s in kSetupsOf[workload]:
            w(f"| {workload} | {s} | {fmt(med([r.get('user_us') for r in data[workload][s]]), 1)}"
              f" | {fmt(med([r.get('sys_us') for r in data[workload][s]]), 1)} |")
    w("")
    table("proxy CPU busy (% of one CPU)", "busy_pct", 0, "%")
    table("CPU 1 (load generator + upstream) busy (%)", "load_busy_pct", 0, "%")

    w("### Handshakes: were they what they claim?\n")
    w("`bench/tls_handshake.c` counts, per run, the connections that offered a session and "
      "those `SSL_session_reused()` reports resumed (it fails the run when a *resumed* run "
      "resumes fewer than 99 % of its offers, or a *full* run resumes any), and the session "
      "tickets it received. The gateway's own `mcp_gateway_tls_handshakes_total{session}` "
      "over the same run is shown beside it.\n")
    w("| workload | setup | connections | offered a session | resumed | resumed fraction | "
      "tickets per connection | answer bytes per connection | gateway counted |")
    w("|---|---|---|---|---|---|---|---|---|")
    for workload in ("full", "resumed"):
        for s in kTlsSetups:
            rs = data[workload][s]
            ok = sum(r["ok"] for r in rs)
            off = sum(r["offered"] for r in rs)
            res = sum(r["resumed"] for r in rs)
            gw = "—"
            if s == "gateway":
                tot = {}
                for r in rs:
                    for k, x in r.get("gw_handshakes", {}).items():
                        tot[k] = tot.get(k, 0.0) + x
                gw = ", ".join(f"{k} {x:,.0f}" for k, x in sorted(tot.items())) or "none"
            w(f"| {workload} | {s} | {ok:,.0f} | {off:,.0f} | {res:,.0f} | "
              f"{fmt(res / off if off else 0.0, 4)} | "
              f"{fmt(med([r['tickets_per_conn'] for r in rs]), 2)} | "
              f"{fmt(med([r['body_per_conn'] for r in rs]), 0)} | {gw} |")
    w("")
    w("#### Clients that use each TLS 1.3 ticket once\n")
    w("RFC 8446 (§C.4) asks clients not to reuse a ticket, and OpenSSL's client marks a TLS 1.3 "
      "session not resumable once it has been used; such a client can only resume when the "
      "server sends a new ticket on every resumption. The *resumed* workload above re-offers "
      "the last ticket instead (a copy), so that every proxy is measured resuming. Once per "
      f"setup, before the rounds, `tls_handshake resumed-once` ({conns} processes, 2 s) "
      "offers each ticket once:\n")
    w("| setup | connections | offered a session | resumed | resumed fraction | tickets per "
      "connection |")
    w("|---|---|---|---|---|---|")
    for s in kTlsSetups:
        r = singleUse[s]
        w(f"| {s} | {r['ok']:,.0f} | {r['offered']:,.0f} | {r['resumed']:,.0f} | "
          f"{fmt(r['resumed_frac'], 3)} | {fmt(r['tickets_per_conn'], 2)} |")
    w("")
    w("Negotiated (first connection of the warm-up):\n")
    for s in kTlsSetups:
        w(f"- {s}: `{infos.get(s, '?')}`")
    w("")
    w("### Errors\n")
    w("wrk errors (connect/read/write/non-2xx/timeout) or failed handshake-client connections, "
      "summed over the rounds, and the increase of the gateways' "
      "`mcp_gateway_rejections_total` / `mcp_gateway_tls_handshake_failures_total` "
      "(`client_closed` = requests wrk cut when its duration ended):\n")
    w("| workload | setup | client errors | gateway rejections | gateway TLS failures |")
    w("|---|---|---|---|---|")
    for workload in kWorkloads:
        for s in kSetupsOf[workload]:
            rs = data[workload][s]
            errs = sum(r["errors"] for r in rs)
            rej, tf = {}, {}
            for r in rs:
                for k, x in r.get("reasons", {}).items():
                    rej[k] = rej.get(k, 0.0) + x
                for k, x in r.get("gw_handshake_failures", {}).items():
                    tf[k] = tf.get(k, 0.0) + x
            gwOnly = s in kConfOf
            w(f"| {workload} | {s} | {errs:.0f} | "
              + ((", ".join(f"{k} {x:.0f}" for k, x in sorted(rej.items())) or "none")
                 if gwOnly else "—") + " | "
              + ((", ".join(f"{k} {x:.0f}" for k, x in sorted(tf.items())) or "none")
                 if gwOnly else "—") + " |")
    w("")
    if after:
        w("**After the runs some setups no longer answered as expected:**\n")
        for s, p in after.items():
            w(f"- {s}: " + "; ".join(p))
        w("")
    else:
        w("Every setup was probed before and after the rounds (TLS setups: 200 and the 300-byte "
          "upstream body on all three routes over https; jwt: 200 with the token, 401 without "
          "one and with a broken signature; none, no-policies: 200) and answered as expected "
          "both times.\n")
    F.writeLogs(w, logs)
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")

    S = ["", "TLS termination and JWT (medians of same-round ratios)", "",
         "| figure | gateway ÷ nginx | gateway ÷ haproxy |", "|---|---|---|"]
    for workload in ("keepalive", "full", "resumed"):
        d = data[workload]
        for key, what in (("rps", "rate"), ("cpu_us", "CPU each")):
            S.append(f"| {workload} {what} | "
                     + " | ".join(fmt(med(perRun(d, key, 'gateway', r)), 2) for r in kRefs)
                     + " |")
    d = data["jwt"]
    S.append("")
    S.append(f"jwt ÷ none: req/s {fmt(med(perRun(d, 'rps', 'jwt', 'none')), 2)} (goal ≥ "
             f"{kJwtGoal}), CPU per request {fmt(med(perRun(d, 'cpu_us', 'jwt', 'none')), 2)}")
    S.append("")
    S.append("| workload | setup | rate/s | CPU µs each | busy % | CPU 1 % |")
    S.append("|---|---|---|---|---|---|")
    for workload in kWorkloads:
        for s in kSetupsOf[workload]:
            rs = data[workload][s]
            S.append(f"| {workload} | {s} | {fmt(med([r['rps'] for r in rs]))} | "
                     f"{fmt(med([r['cpu_us'] for r in rs]), 1)} | "
                     f"{fmt(med([r['busy_pct'] for r in rs]))} | "
                     f"{fmt(med([r['load_busy_pct'] for r in rs]))} |")
    S.append("")
    S.append("single-use ticket clients, resumed fraction: " + ", ".join(
        f"{s} {fmt(singleUse[s]['resumed_frac'], 3)}" for s in kTlsSetups))
    S.append("setups not answering as expected after the runs: " + (", ".join(after) or "none"))
    return "\n".join(S)


if __name__ == "__main__":
    B.runDriver(main, "[tls] failed; the work directory /tmp/mcp-bench-tls-* above is kept "
                      "(configs, keys and every process's log)")
