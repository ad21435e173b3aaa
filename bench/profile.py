#!/usr/bin/env python3
"""Profiles mcp-gateway in header mode under wrk load (never part of the test suite).

Uses bench.py's configs: the same nginx upstream, the same gateway-header YAML, the same wrk
request (bench/mcp_call.lua), proxy on CPU 0, load on CPU 1. Two profiles:

  callgrind  user-space instructions per symbol and per call site (valgrind --tool=callgrind,
             counters zeroed after warm-up, so start-up is excluded); the fallback the issue
             names when hardware counters are unavailable (`perf stat -e instructions` says
             "not supported" on this VM)
  perf       `perf record -e cpu-clock -g` sampling of the same load at full speed, user and
             kernel: where wall-clock CPU goes, syscalls included (callgrind cannot see those)

Optional third: the same perf sampling under the SSE fast stream (`--sse`), to show the per-event
relay cost. Writes the raw annotate/report text into OUT_DIR and prints their paths; the
interpretation is written by hand into bench/results/profile-<date>.md.

Usage: profile.py GATEWAY OUT_DIR [SSE_UPSTREAM SSE_CLIENT]
Environment: PROFILE_SECONDS (wrk length per profile, default 10).
"""

import os
import subprocess
import sys
import tempfile
import time

import bench


def main():
    gateway, out = sys.argv[1], sys.argv[2]
    sseUp = sys.argv[3] if len(sys.argv) > 4 else None
    sseClient = sys.argv[4] if len(sys.argv) > 4 else None
    seconds = int(os.environ.get("PROFILE_SECONDS", "10"))
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="mcp-profile-")
    import resource
    fdLimit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    ports = {s: bench.freePort() for s in bench.kSetups + ["sse", "nginx-sse"]}
    bench.writeConfigs(tmp, ports, fdLimit, 1000)
    up = bench.spawn(["nginx", "-p", tmp, "-e", f"{tmp}/upstream-error.log", "-c",
                      f"{tmp}/upstream.conf"], f"{tmp}/upstream.out", bench.kLoadCpu)
    bench.waitPort(ports["direct"], up, "upstream nginx")
    if sseUp:
        sse = bench.spawn([sseUp, str(ports["sse"]), "100", "10", "100000", "128"],
                          f"{tmp}/sse-upstream.log", bench.kLoadCpu)
        bench.waitPort(ports["sse"], sse, "SSE upstream")
    cfg = f"{tmp}/gateway-header.yaml"
    port = ports["gateway-header"]

    # 1. callgrind
    cg = f"{out}/callgrind.out"
    gw = bench.spawn(["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg}",
                      "--dump-instr=no", "--separate-threads=no", gateway, "run", "-c", cfg],
                     f"{tmp}/callgrind.log", bench.kProxyCpu)
    bench.waitPort(port, gw, "gateway under callgrind", seconds=120)
    if bench.probe(port):
        raise RuntimeError("gateway does not answer the benchmark request")
    bench.runWrk(port, 3, 50, False)  # warm-up: pools, caches
    subprocess.run(["callgrind_control", "-z", str(gw.pid)], check=True, capture_output=True)
    r = bench.runWrk(port, seconds, 50, False)
    subprocess.run(["callgrind_control", "-d", str(gw.pid)], check=True, capture_output=True)
    print(f"callgrind: {r['requests']:.0f} requests measured", flush=True)
    time.sleep(1)
    gw.terminate()
    gw.wait(timeout=60)
    bench.children.remove(gw)
    dumps = sorted(f for f in os.listdir(out) if f.startswith("callgrind.out"))
    last = os.path.join(out, dumps[-1])
    with open(f"{out}/callgrind-requests.txt", "w") as f:
        f.write(f"{r['requests']:.0f}\n{last}\n")
    for name, extra in (("callgrind-self.txt", []), ("callgrind-inclusive.txt", ["--inclusive=yes"])):
        with open(f"{out}/{name}", "w") as f:
            subprocess.run(["callgrind_annotate", "--threshold=99.5"] + extra + [last], stdout=f,
                           check=True)
    with open(f"{out}/callgrind-tree.txt", "w") as f:
        subprocess.run(["callgrind_annotate", "--tree=caller", "--threshold=95", last], stdout=f,
                       check=True)

    # 2. perf, JSON load
    def perfUnder(label, load):
        g = bench.spawn([gateway, "run", "-c", cfg], f"{tmp}/{label}.log", bench.kProxyCpu)
        bench.waitPort(port, g, "gateway")
        bench.runWrk(port, 2, 50, False)
        data = f"{out}/perf-{label}.data"
        rec = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "4999", "-g",
                                "-p", str(g.pid), "-o", data],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        result = load()
        rec.send_signal(2)
        rec.wait(timeout=60)
        g.terminate()
        g.wait(timeout=30)
        bench.children.remove(g)
        for name, args in (("self", ["--no-children", "--sort", "symbol"]),
                           ("dso", ["--no-children", "--sort", "dso"])):
            with open(f"{out}/perf-{label}-{name}.txt", "w") as f:
                subprocess.run(["perf", "report", "-i", data, "--stdio", "-g", "none",
                                "--percent-limit", "0.3"] + args, stdout=f,
                               stderr=subprocess.DEVNULL, check=True)
        with open(f"{out}/perf-{label}-callers.txt", "w") as f:
            subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children", "--sort",
                            "symbol", "-g", "graph,0.5,callee",
                            "--percent-limit", "1.5"], stdout=f, stderr=subprocess.DEVNULL,
                           check=True)
        print(f"perf {label}: {result}", flush=True)

    perfUnder("json", lambda: "%.0f req/s" % bench.runWrk(port, seconds, 50, False)["rps"])
    if sseClient:
        perfUnder("sse", lambda: bench.runSse(sseClient, port, bench.kSseFast, 100000, 3,
                                              seconds)[1])
    bench.stopAll()
    print(f"raw profiles in {out}; configs in {tmp}")


if __name__ == "__main__":
    try:
        main()
    finally:
        bench.stopAll()
