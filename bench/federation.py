#!/usr/bin/env python3
"""Federation benchmark behind bench/run.sh (never part of the test suite).

What a federated route costs, all measured in the same run:

  list         tools/list through a federated route over four upstreams of 100 tools each
               (`upstreams: [git, fs, sql, mail]`) against a plain route to one upstream that
               serves the same 400 tools; the upstreams answer without ttlMs, so every federated
               list fans out to all four and merges
  list-cached  the same with upstreams that add "ttlMs": 60000, "cacheScope": "public": the
               federated route answers from its merged cache (the plain route relays as before)
  call         tools/call, Mcp-Name rotating over four tools (one per upstream), through a
               federated `names: keep` route (routed by header to the owner, body unchanged), a
               federated `names: prefix` route (`git__get_issue` …: Mcp-Name and params.name
               rewritten) and a plain route (every call to the one 400-tool upstream)

nginx and HAProxy relay the same 400-tool upstream for tools/list (and route the four call names
by Mcp-Name to the four upstreams) as references. Every tool has a title, a description of a
few sentences, an inputSchema of 3-5 described properties and annotations (0.8-1 KB of JSON).

Upstreams: one nginx (one worker, CPU 1), ten listeners (git, fs, sql, mail, direct × uncached /
cached); tools/list (`Mcp-Method: tools/list`) gets that upstream's list (direct: all 400),
anything else a 300-byte tools/call result whose filler names the upstream that answered, and
every answer echoes the Mcp-Name it got in `X-Bench-Name` (so the probes see that each call
reached its owner under its own name). Proxies on CPU 0: one gateway process per setup and
cache mode, one nginx and one HAProxy with an uncached and a cached listener each. wrk on CPU 1.
Ports are picked at run time on 127.0.0.1; every child runs in its own process group and is
killed and reaped on exit (bench.stopAll).

Usage: federation.py GATEWAY_BINARY RESULTS_DIR
Environment: BENCH_SECONDS (capacity run length, default 10), BENCH_LATENCY_SECONDS (default
min(5, BENCH_SECONDS)), BENCH_RUNS (default 3, min 3), BENCH_FED_TOOLS (tools per upstream,
default 100), BENCH_FED_LIST_NAMES (names mode(s) of the federated route the list workloads use:
prefix (default), keep, or keep,prefix), BENCH_FED_PROFILE (auto (default): perf-profile the
call path when a call ratio misses 0.95; 1 always; 0 never), BENCH_FED_PROFILE_SECONDS (default
BENCH_SECONDS).
"""

import datetime
import http.client
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402  (helpers: spawn, stopAll, waitPort, CPU/RSS readers, med, fmt)

kHere = B.kHere
kProtocol = "2026-07-28"
kTtlMs = 60000
kSeparator = "__"
kCallGoal = 0.95
kDirect = "direct"  # the upstream that serves all 400 tools (plain route, nginx, HAProxy)
kFill = {"git": "g", "fs": "f", "sql": "s", "mail": "m", kDirect: "y"}  # call answer filler

# Four upstreams, ten tool families each, ten verbs per family: 100 distinct tool names per
# upstream, no name shared between upstreams (a `names: keep` route sees no conflict).
kUps = ["git", "fs", "sql", "mail"]
kScope = {"git": "repository", "fs": "volume", "sql": "database", "mail": "mailbox"}
kNouns = {
    "git": ["issue", "pull_request", "branch", "commit", "release", "tag", "milestone",
            "workflow_run", "review", "deploy_key"],
    "fs": ["file", "folder", "share_link", "snapshot", "permission", "quota", "trash_item",
           "file_version", "mount", "file_lock"],
    "sql": ["table", "view", "db_index", "saved_query", "db_schema", "migration", "backup",
            "db_role", "connection", "statistic"],
    "mail": ["message", "thread", "draft", "mail_label", "contact", "mail_filter", "signature",
             "attachment", "calendar_event", "auto_reply"],
}
kVerbs = ["list", "get", "create", "update", "delete", "search", "export", "archive", "restore",
          "watch"]
kCallVerb = 1  # the called tool of each upstream: get_<first family> (get_issue, get_file, …)

kWorkloads = ["list", "list-cached", "call"]
kRefs = ["nginx", "haproxy"]
kCallSetups = ["fed-keep", "fed-prefix", "plain", "nginx", "haproxy"]


def setupText(setup, tools):
    total = tools * len(kUps)
    return {
        "fed-keep": f"gateway, federated route `upstreams: [{', '.join(kUps)}]`, `names: keep` "
                    f"({tools} tools each)",
        "fed-prefix": f"gateway, federated route `upstreams: [{', '.join(kUps)}]`, "
                      f"`names: prefix` ({tools} tools each)",
        "plain": f"gateway, plain route `upstream: {kDirect}` (one upstream serving all {total} "
                 "tools)",
        "nginx": f"nginx, one worker: tools/list → `{kDirect}`; `map $http_mcp_name` sends the "
                 "four call names to their upstreams; keepalive 64, `proxy_buffers 32 16k`",
        "haproxy": f"HAProxy, `nbthread 1`: tools/list → `{kDirect}`; ACLs on "
                   "`req.hdr(mcp-name)` send the four call names to their upstreams; "
                   "`http-reuse always`",
    }[setup]


def isGateway(setup):
    return setup not in kRefs


# ---- the tools --------------------------------------------------------------------------------

def toolName(up, i):
    nouns = kNouns[up]
    name = f"{kVerbs[i % len(kVerbs)]}_{nouns[(i // len(kVerbs)) % len(nouns)]}"
    rep = i // (len(kVerbs) * len(nouns))
    return name if rep == 0 else f"{name}_v{rep + 1}"


def callNames(setup):
    names = [toolName(u, kCallVerb) for u in kUps]
    if setup == "fed-prefix":
        return [f"{u}{kSeparator}{n}" for u, n in zip(kUps, names)]
    return names


def ownerOfCall(setup, i):
    """The upstream the i-th call name must reach (its X-Bench-Name is the unprefixed name)."""
    return kDirect if setup == "plain" else kUps[i]


def prop(kind, text, **extra):
    d = {"type": kind, "description": text}
    d.update(extra)
    return d


def toolJson(up, i):
    verb = kVerbs[i % len(kVerbs)]
    noun = kNouns[up][(i // len(kVerbs)) % len(kNouns[up])]
    what = noun.replace("_", " ")
    scope = kScope[up]
    scopeProp = prop("string", f"The {scope} to work in, as owner/name (for example "
                     f"acme/{scope}-main). Must be one the caller has been granted access to.")
    idProp = prop("string", f"The {what} id as returned by list_{noun} or search_{noun}; "
                  "opaque, at most 64 characters.", maxLength=64)
    read = verb in ("list", "get", "search", "export", "watch")
    desc = {
        "list": f"List the {what}s of a {scope}, most recently updated first. Returns at most "
                f"limit items and a cursor for the next page; pass the cursor back unchanged to "
                f"continue. Use search_{noun} for full-text queries.",
        "get": f"Fetch one {what} of a {scope} by id, with every field, its current state and "
               f"the time and author of its last change. Fails with not_found when the id does "
               f"not exist or the caller may not see it.",
        "create": f"Create a new {what} in a {scope} and return it with its id, URL and "
                  f"timestamps. Fails with conflict when a {what} of the same name exists; use "
                  f"update_{noun} to change an existing one.",
        "update": f"Change fields of an existing {what}. Only the fields given in patch change; "
                  f"pass if_match with the etag from get_{noun} to refuse the update when "
                  f"someone else changed the {what} meanwhile.",
        "delete": f"Delete a {what} from a {scope}. Deleted items can be brought back with "
                  f"restore_{noun} for 30 days, unless purge is true. Requires the admin role "
                  f"on the {scope}.",
        "search": f"Full-text search over the {what}s of a {scope}. The query language supports "
                  f"field:value terms, quoted phrases, AND, OR and NOT; results are ordered by "
                  f"relevance and carry a highlighted snippet.",
        "export": f"Export a {what} and everything it references as one document in the given "
                  f"format. Large exports run in the background: the answer then carries a job "
                  f"id to poll instead of the document.",
        "archive": f"Archive a {what}: it becomes read-only and disappears from list_{noun} "
                   f"unless include_archived is set. Archiving is reversible with "
                   f"restore_{noun}; the reason is kept in the audit log.",
        "restore": f"Restore an archived or deleted {what} to its previous state, or to an "
                   f"older version when version is given. Fails with gone when a deleted "
                   f"{what} was purged or is older than 30 days.",
        "watch": f"Subscribe to changes of a {what}. Each event is delivered as a notification "
                 f"while the subscription lasts; subscriptions expire after ttl_seconds and "
                 f"must be renewed by calling watch_{noun} again.",
    }[verb]
    props = {"scope": scopeProp}
    required = ["scope"]
    if verb == "list":
        props["sort"] = prop("string", "Sort key.", enum=["updated", "created", "name"],
                             default="updated")
        props["limit"] = prop("integer", "Items per page.", minimum=1, maximum=100, default=30)
        props["cursor"] = prop("string", "Cursor from the previous page, if any.")
    elif verb == "search":
        props["query"] = prop("string", "The search expression, for example state:open "
                              "label:bug timeout.")
        props["limit"] = prop("integer", "Items per page.", minimum=1, maximum=100, default=20)
        required.append("query")
    elif verb == "create":
        props["name"] = prop("string", f"Name of the new {what}.", minLength=1, maxLength=200)
        props["fields"] = prop("object", f"Further fields of the {what}, by name.",
                               additionalProperties=True)
        required.append("name")
    else:
        props["id"] = idProp
        required.append("id")
        if verb == "update":
            props["patch"] = prop("object", "The fields to change, by name.",
                                  additionalProperties=True)
            props["if_match"] = prop("string", f"Etag from get_{noun}; optional.")
            required.append("patch")
        elif verb == "delete":
            props["purge"] = prop("boolean", "Delete at once instead of after 30 days.",
                                  default=False)
        elif verb == "export":
            props["format"] = prop("string", "Output format.", enum=["json", "ndjson", "csv"],
                                   default="json")
        elif verb == "archive":
            props["reason"] = prop("string", "Why, for the audit log.", maxLength=500)
        elif verb == "restore":
            props["version"] = prop("integer", "Version to restore; the latest when absent.",
                                    minimum=1)
        elif verb == "watch":
            props["ttl_seconds"] = prop("integer", "Lifetime of the subscription.", minimum=60,
                                        maximum=86400, default=3600)
        elif verb == "get":
            props["include"] = {"type": "array", "items": {"type": "string"},
                                "description": "Related objects to embed, for example "
                                               "comments or history."}
    tool = {
        "name": toolName(up, i),
        "title": f"{verb.capitalize()} {what}",
        "description": desc,
        "inputSchema": {"type": "object", "properties": props, "required": required,
                        "additionalProperties": False},
        "annotations": {"readOnlyHint": read, "destructiveHint": verb == "delete",
                        "idempotentHint": verb not in ("create", "watch"),
                        "openWorldHint": False},
    }
    text = json.dumps(tool, separators=(",", ":"))
    # The list goes into nginx's config as single-quoted strings with variables: none of these.
    for bad in ("$", "\\", "'"):
        assert bad not in text, f"tool JSON holds {bad!r}: {text}"
    return text


def toolItems(up, count):
    """The JSON array members (comma-joined, no brackets) of one upstream's tools/list."""
    return ",".join(toolJson(up, i) for i in range(count))


def listTail(cached):
    extra = f',"ttlMs":{kTtlMs},"cacheScope":"public"' if cached else ""
    return "]" + extra + "}}"


kListHead = '{"jsonrpc":"2.0","id":1,"result":{"tools":['


def listBodyOf(ups, cached, count):
    """What the upstream serving `ups` answers to tools/list (as nginx builds it)."""
    return kListHead + ",".join(toolItems(u, count) for u in ups) + listTail(cached)


def callAnswer(up):
    head = '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"'
    tail = '"}],"isError":false}}'
    return head + kFill[up] * (B.kResponseBytes - len(head) - len(tail)) + tail


# ---- requests ---------------------------------------------------------------------------------

def listBody(rid=1):
    return ('{"jsonrpc":"2.0","id":' + str(rid) + ',"method":"tools/list","params":{"_meta":'
            '{"io.modelcontextprotocol/protocolVersion":"' + kProtocol + '",'
            '"io.modelcontextprotocol/clientCapabilities":{}}}}')


def callBody(name):
    head = ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"' + name +
            '","arguments":{"q":"')
    tail = '"},"_meta":{"io.modelcontextprotocol/protocolVersion":"' + kProtocol + '","io.modelcontextprotocol/clientCapabilities":{}}}}'
    return head + "x" * (250 - len(head) - len(tail)) + tail


# ---- configs ----------------------------------------------------------------------------------

def nginxChunks(text, size=3000):
    return [text[i:i + size] for i in range(0, len(text), size)]


def writeConfigs(tmp, ports, tools, gwProcs):
    temps = f"""client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy;
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 300s;"""
    common = """daemon off;
worker_processes 1;
worker_rlimit_nofile 16384;
events { worker_connections 4096; }
"""
    # nginx reads a config token into a 4 KiB buffer ("too long parameter"): each upstream's
    # tool list is held in 3000-byte pieces (one `map` variable each, constant: no copy until
    # `return` joins them) and every listener's `return` names the pieces of its list.
    maps, pieces = [], {}
    for up in kUps:
        pieces[up] = []
        for k, chunk in enumerate(nginxChunks(toolItems(up, tools))):
            var = f"t_{up}_{k}"
            pieces[up].append("${" + var + "}")
            maps.append(f"    map 1 ${var} {{ default '{chunk}'; }}")
    servers = []
    for cached in (False, True):
        for up in kUps + [kDirect]:
            members = [up] if up != kDirect else kUps
            body = (kListHead + ",".join("".join(pieces[u]) for u in members) + listTail(cached))
            key = f"up-{up}" + ("-cached" if cached else "")
            servers.append(f"""    server {{
        listen 127.0.0.1:{ports[key]} backlog=4096;
        location / {{
            default_type application/json;
            add_header X-Bench-Name $http_mcp_name always;
            if ($http_mcp_method = "tools/list") {{
                return 200 '{body}';
            }}
            return 200 '{callAnswer(up)}';
        }}
    }}""")
    with open(f"{tmp}/upstream.conf", "w") as f:
        f.write(common + f"""pid {tmp}/upstream.pid;
error_log {tmp}/upstream-error.log warn;
http {{
    {temps}
{chr(10).join(maps)}
{chr(10).join(servers)}
}}
""")

    # nginx reference: tools/list (no Mcp-Name) → direct; the four call names → their owners.
    calls = callNames("plain")
    ups, mapLines = [], {"": [], "-cached": []}
    for sfx in ("", "-cached"):
        tag = sfx.replace("-", "_")
        for up in kUps + [kDirect]:
            ups.append(f"    upstream up_{up}{tag} "
                       f"{{ server 127.0.0.1:{ports['up-' + up + sfx]}; keepalive 64; }}")
        mapLines[sfx] = [f"        {n} up_{u}{tag};" for n, u in zip(calls, kUps)]
        mapLines[sfx].append(f"        default up_{kDirect}{tag};")
    nginxServers = []
    for sfx in ("", "-cached"):
        tag = sfx.replace("-", "_")
        nginxServers.append(f"""    map $http_mcp_name $be{tag} {{
{chr(10).join(mapLines[sfx])}
    }}
    server {{
        listen 127.0.0.1:{ports['nginx' + sfx]} backlog=4096;
        location / {{
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffer_size 16k;
            proxy_buffers 32 16k;
            proxy_busy_buffers_size 64k;
            proxy_pass http://$be{tag};
        }}
    }}""")
    with open(f"{tmp}/nginx.conf", "w") as f:
        f.write(common + f"""pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
http {{
    {temps}
{chr(10).join(ups)}
{chr(10).join(nginxServers)}
}}
""")

    fes, bes = [], []
    for sfx in ("", "-cached"):
        tag = sfx.replace("-", "_")
        acls = "\n".join(f"    acl name_{u} req.hdr(mcp-name) -m str {n}\n"
                         f"    use_backend be_{u}{tag} if name_{u}" for n, u in zip(calls, kUps))
        fes.append(f"""frontend fe{tag}
    bind 127.0.0.1:{ports['haproxy' + sfx]}
{acls}
    default_backend be_{kDirect}{tag}
""")
        for up in kUps + [kDirect]:
            bes.append(f"""backend be_{up}{tag}
    server s1 127.0.0.1:{ports['up-' + up + sfx]}""")
    with open(f"{tmp}/haproxy.cfg", "w") as f:
        f.write("""global
    nbthread 1
    maxconn 4096

defaults
    mode http
    timeout connect 5s
    timeout client 300s
    timeout server 60s
    timeout http-keep-alive 300s
    http-reuse always

""" + "\n".join(fes) + "\n" + "\n".join(bes) + "\n")

    for name in gwProcs:
        setup = name[3:].replace("-cached", "")
        sfx = "-cached" if name.endswith("-cached") else ""
        members = kUps if setup.startswith("fed-") else [kDirect]
        upstreams = "\n".join(f"""  - name: {up}
    endpoints: [127.0.0.1:{ports['up-' + up + sfx]}]
    max_idle_connections: 64""" for up in members)
        if setup.startswith("fed-"):
            route = f"""  - name: fed
    upstreams: [{', '.join(kUps)}]
    names: {setup[4:]}"""
        else:
            route = f"""  - name: plain
    upstream: {kDirect}"""
        with open(f"{tmp}/{name}.yaml", "w") as f:
            f.write(f"""listen: 127.0.0.1:{ports[name]}
endpoint: /mcp
workers: 1
admin: 127.0.0.1:{ports[name + '-admin']}
limits:
  max_connections: 4096
  max_connections_per_client: 0
  keepalive_timeout: 300s
mcp:
  protocol_versions: [{kProtocol}]
upstreams:
{upstreams}
routes:
{route}
federation:
  separator: "{kSeparator}"
  list_timeout: 5s
  max_items: 10000
access_log:
  path: "off"
log_level: warn
drain_timeout: 1s
""")


# ---- probes and measurement -------------------------------------------------------------------

def post(port, headers, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("POST", "/mcp", body=body.encode(), headers=headers)
        r = c.getresponse()
        return r.status, r.getheader("Content-Type", ""), r.getheader("X-Bench-Name"), r.read()
    finally:
        c.close()


def mcpHeaders(method, name=None):
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
         "MCP-Protocol-Version": kProtocol, "Mcp-Method": method}
    if name is not None:
        h["Mcp-Name"] = name
    return h


def expectedList(setup, tools):
    if setup == "fed-prefix":
        return [f"{u}{kSeparator}{toolName(u, i)}" for u in kUps for i in range(tools)]
    return [toolName(u, i) for u in kUps for i in range(tools)]


def probeList(setup, port, tools, cached):
    """Problems with what `setup`'s tools/list answers (empty = as expected), and notes."""
    problems, notes = [], []
    status, ctype, _, data = post(port, mcpHeaders("tools/list"), listBody(1))
    if status != 200:
        return [f"tools/list: HTTP {status}: {data[:300]!r}"], notes
    try:
        doc = json.loads(data)
        result = doc["result"]
        got = [t["name"] for t in result["tools"]]
    except (ValueError, KeyError, TypeError) as e:
        return [f"tools/list: not a tools result ({e}): {data[:300]!r}"], notes
    want = expectedList(setup, tools)
    if sorted(got) != sorted(want):
        problems.append(f"tools/list: {len(got)} tools {got[:4]}…, expected {len(want)} "
                        f"{want[:4]}…")
    if doc.get("id") != 1:
        problems.append(f"tools/list: id {doc.get('id')!r}, expected 1")
    scope = (result.get("ttlMs"), result.get("cacheScope"))
    if setup.startswith("fed-"):
        notes.append(f"merged answer: {len(data):,} bytes, {len(got)} tools, ttlMs {scope[0]}, "
                     f"cacheScope {scope[1]!r}, Content-Type {ctype!r}")
        if cached and (not scope[0] or scope[1] != "public"):
            problems.append(f"tools/list: cached route answered ttlMs {scope[0]}, cacheScope "
                            f"{scope[1]!r}; expected ttlMs > 0 and public")
        # The merged answer is the gateway's own: it must carry the client's id, not the
        # upstreams' fixed 1.
        _, _, _, data7 = post(port, mcpHeaders("tools/list"), listBody(7))
        try:
            rid = json.loads(data7).get("id")
        except ValueError:
            rid = None
        if rid != 7:
            problems.append(f"tools/list with id 7 answered id {rid!r}")
        else:
            notes.append("the merged answer echoes the client's id (sent 7, got 7; the "
                         "upstreams always answer id 1)")
    else:
        notes.append(f"answer: {len(data):,} bytes, {len(got)} tools, ttlMs {scope[0]}")
    return problems, notes


def probeCall(setup, port):
    """Each call name answers 200 with the owner's 300-byte result, and the owner saw its own
    (unprefixed) name in Mcp-Name."""
    problems = []
    plainNames = callNames("plain")
    for i, name in enumerate(callNames(setup)):
        status, _, echoed, data = post(port, mcpHeaders("tools/call", name), callBody(name))
        owner = ownerOfCall(setup, i)
        if status != 200 or data.decode(errors="replace") != callAnswer(owner):
            problems.append(f"tools/call {name}: HTTP {status}, {len(data)} bytes: "
                            f"{data[:120]!r}; expected {owner}'s answer")
        if echoed != plainNames[i]:
            problems.append(f"tools/call {name}: upstream saw Mcp-Name {echoed!r}, expected "
                            f"{plainNames[i]!r}")
    return problems


def metrics(adminPort):
    """(list fetches, fetches not ok, {rejection reason: count}) from the gateway's /metrics."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{adminPort}/metrics", timeout=10).read()
    fetches = notOk = 0.0
    rejections = {}
    for line in text.decode().splitlines():
        if line.startswith("mcp_gateway_federation_list_fetches_total{"):
            v = float(line.rsplit(" ", 1)[1])
            fetches += v
            if 'outcome="ok"' not in line:
                notOk += v
        elif line.startswith("mcp_gateway_rejections_total"):
            m = re.search(r'reason="([^"]*)"', line)
            reason = m.group(1) if m else "?"
            rejections[reason] = rejections.get(reason, 0.0) + float(line.rsplit(" ", 1)[1])
    return fetches, notOk, rejections


def wrkArgv(port, seconds, conns, latency, workload, setup):
    argv = ["taskset", "-c", B.kLoadCpu, "wrk", "-t1", f"-c{conns}", f"-d{seconds}s",
            "-s", os.path.join(kHere, "federation.lua")]
    if latency:
        argv.append("--latency")
    argv += [f"http://127.0.0.1:{port}/mcp", "--"]
    argv += ["call"] + callNames(setup) if workload == "call" else ["list"]
    return argv


def parseWrk(out):
    m = re.search(r"^BENCH (.*)$", out, re.M)
    if not m:
        raise RuntimeError(f"wrk printed no BENCH line:\n{out}")
    r = {k: float(v) for k, v in (kv.split("=") for kv in m.group(1).split())}
    r["rps"] = r["requests"] / (r["duration_us"] / 1e6)
    r["errors"] = r["connect"] + r["read"] + r["write"] + r["status"] + r["timeout"]
    return r


def runWrk(port, seconds, conns, latency, workload, setup):
    out = subprocess.run(wrkArgv(port, seconds, conns, latency, workload, setup),
                         capture_output=True, text=True, timeout=seconds + 60).stdout
    return parseWrk(out)


def procOf(workload, setup):
    suffix = "-cached" if workload == "list-cached" else ""
    return (f"gw-{setup}" if isGateway(setup) else setup) + suffix


def measure(procs, ports, workload, setup, seconds, conns, latency):
    """One wrk run of (workload, setup) with the proxy's CPU, CPU 1's and (gateways) the
    /metrics counters around it."""
    name = procOf(workload, setup)
    pid = procs[name].pid
    admin = ports.get(name + "-admin")
    m0 = metrics(admin) if admin else None
    u0, s0 = B.cpuTicksSplit(pid)
    l0 = B.cpuBusyTicks(B.kLoadCpu)
    r = runWrk(ports[name], seconds, conns, latency, workload, setup)
    l1 = B.cpuBusyTicks(B.kLoadCpu)
    u1, s1 = B.cpuTicksSplit(pid)
    m1 = metrics(admin) if admin else None
    tick = os.sysconf("SC_CLK_TCK")
    r["cpu_s"] = (u1 - u0 + s1 - s0) / tick
    r["cpu_us_per_req"] = r["cpu_s"] / r["requests"] * 1e6 if r["requests"] else None
    r["busy_pct"] = 100 * r["cpu_s"] / (r["duration_us"] / 1e6)
    r["load_busy_pct"] = 100 * (l1[0] - l0[0]) / max(1, sum(l1) - sum(l0))
    if m0 is not None:
        r["fetches"] = m1[0] - m0[0]
        r["fetches_not_ok"] = m1[1] - m0[1]
        # Requests cut by wrk itself when its duration ends (client_closed: at most one per
        # connection) are kept apart from everything else.
        reasons = {k: v - m0[2].get(k, 0.0) for k, v in m1[2].items()}
        r["reasons"] = {k: v for k, v in reasons.items() if v}
        r["client_closed"] = r["reasons"].get("client_closed", 0.0)
        r["rejections"] = sum(r["reasons"].values()) - r["client_closed"]
        r["fetches_per_req"] = r["fetches"] / r["requests"] if r["requests"] else None
    return r


def perRun(data, key, a, b):
    if a not in data or b not in data:
        return []
    return [x.get(key) / y.get(key) if x.get(key) and y.get(key) else None
            for x, y in zip(data[a], data[b])]


# ---- profile ----------------------------------------------------------------------------------

# "   12.34%  mcp-gateway  [.] gw::http::scanFields  -  -" (the two trailing columns are
# perf's IPC figures, "-" without branch data).
kPerfRow = re.compile(r"^\s+([\d.]+)%\s+(\S+)\s+\[([.k])\]\s+(.*?)(?:\s+-\s+-)?\s*$")
kPerfLimit = 0.1  # percent: symbols below it are summed as "the rest"


def profileCalls(procs, ports, seconds, tmp):
    """perf record -e cpu-clock -g on each call gateway (plain, fed-keep, fed-prefix) while wrk
    -c50 runs its call workload: self time per symbol (share of the gateway's samples, and that
    share of its CPU per request over the sampled window, in µs)."""
    out = {}
    for setup in ["plain", "fed-keep", "fed-prefix"]:
        if shutil.which("perf") is None:
            out[setup] = {"error": "perf is not installed (Debian: linux-perf)"}
            continue
        name = procOf("call", setup)
        pid = procs[name].pid
        data = f"{tmp}/perf-{setup}.data"
        wrk = subprocess.Popen(wrkArgv(ports[name], seconds + 2, 50, False, "call", setup),
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               start_new_session=True)
        try:
            time.sleep(1)
            c0 = B.cpuTicks(pid)
            m0 = metrics(ports[name + "-admin"])
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
        r = parseWrk(wrkOut)
        cpuUs = (c1 - c0) / os.sysconf("SC_CLK_TCK") * 1e6
        # Requests during the sampled window, at the run's average rate.
        reqs = r["rps"] * elapsed
        cpuPerReq = cpuUs / reqs if reqs else None
        if rec.returncode != 0 or not os.path.exists(data):
            out[setup] = {"error": (rec.stdout + rec.stderr).strip()[-500:]}
            continue
        rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children",
                              "-g", "none", "--sort", "dso,symbol", "--percent-limit",
                              str(kPerfLimit)], capture_output=True, text=True,
                             timeout=300).stdout
        rows = []
        for line in rep.splitlines():
            m = kPerfRow.match(line)
            if m:
                rows.append((float(m.group(1)), m.group(2), m.group(4).strip(),
                             m.group(3) == "k"))
        out[setup] = {"rows": rows, "cpu_us_per_req": cpuPerReq, "rps": r["rps"],
                      "fetches": metrics(ports[name + "-admin"])[0] - m0[0]}
        B.log(f"profile {setup}: {r['rps']:,.0f} req/s, {fmt(cpuPerReq, 1)} us/req, "
              f"{len(rows)} symbols ≥ {kPerfLimit}%")
    return out


# ---- main -------------------------------------------------------------------------------------

def main():
    gateway, resultsDir = sys.argv[1:3]
    seconds = int(os.environ.get("BENCH_SECONDS", "10"))
    latSeconds = int(os.environ.get("BENCH_LATENCY_SECONDS", str(min(5, seconds))))
    runs = max(3, int(os.environ.get("BENCH_RUNS", "3")))
    tools = max(1, int(os.environ.get("BENCH_FED_TOOLS", "100")))
    listModes = [m.strip() for m in os.environ.get("BENCH_FED_LIST_NAMES", "prefix").split(",")
                 if m.strip()]
    if not listModes or any(m not in ("keep", "prefix") for m in listModes):
        raise RuntimeError("BENCH_FED_LIST_NAMES must be prefix, keep or keep,prefix")
    profileMode = os.environ.get("BENCH_FED_PROFILE", "auto")
    profileSeconds = int(os.environ.get("BENCH_FED_PROFILE_SECONDS", str(seconds)))
    listSetups = [f"fed-{m}" for m in listModes] + ["plain"] + kRefs
    setupsOf = {"list": listSetups, "list-cached": listSetups, "call": kCallSetups}

    tmp = tempfile.mkdtemp(prefix="mcp-bench-fed-")
    gwProcs = []
    for w in kWorkloads:
        for s in setupsOf[w]:
            if isGateway(s) and procOf(w, s) not in gwProcs:
                gwProcs.append(procOf(w, s))
    names = ([f"up-{u}{s}" for s in ("", "-cached") for u in kUps + [kDirect]] + gwProcs +
             [f"{r}{s}" for s in ("", "-cached") for r in kRefs])
    ports = {n: B.freePort() for n in names}
    for n in gwProcs:
        ports[n + "-admin"] = B.freePort()
    stamp = datetime.datetime.now().strftime("%Y-%m-%d-%H%M")
    loads = [("start", B.loadavg())]
    B.log(f"federation: work dir {tmp}; {tools} tools per upstream; list via "
          f"{', '.join(listSetups)}; gateways {', '.join(gwProcs)}")
    writeConfigs(tmp, ports, tools, gwProcs)
    sizes = {
        "tool": [len(toolJson(u, i)) for u in kUps for i in range(tools)],
        "upstream": len(listBodyOf([kUps[0]], False, tools)),
        "direct": len(listBodyOf(kUps, False, tools)),
    }
    for n in gwProcs:
        chk = subprocess.run([gateway, "check", "-c", f"{tmp}/{n}.yaml"], capture_output=True,
                             text=True)
        if chk.returncode != 0:
            raise RuntimeError(f"gateway check failed for {n}:\n{chk.stdout}{chk.stderr}")
    for conf in ("upstream", "nginx"):
        chk = subprocess.run(["nginx", "-t", "-p", tmp, "-e", f"{tmp}/{conf}-error.log", "-c",
                              f"{tmp}/{conf}.conf"], capture_output=True, text=True)
        if chk.returncode != 0:
            raise RuntimeError(f"nginx -t failed for {conf}.conf:\n{chk.stderr}")

    procs = {}
    procs["upstream"] = B.spawn(["nginx", "-p", tmp, "-e", f"{tmp}/upstream-error.log",
                                 "-c", f"{tmp}/upstream.conf"], f"{tmp}/upstream.out", B.kLoadCpu)
    for s in ("", "-cached"):
        for u in kUps + [kDirect]:
            B.waitPort(ports[f"up-{u}{s}"], procs["upstream"], "upstream nginx")
    for n in gwProcs:
        procs[n] = B.spawn([gateway, "run", "-c", f"{tmp}/{n}.yaml"], f"{tmp}/{n}.log",
                           B.kProxyCpu)
    procs["nginx"] = B.spawn(["nginx", "-p", tmp, "-e", f"{tmp}/nginx-error.log",
                              "-c", f"{tmp}/nginx.conf"], f"{tmp}/nginx.out", B.kProxyCpu)
    procs["haproxy"] = B.spawn(["haproxy", "-db", "-f", f"{tmp}/haproxy.cfg"],
                               f"{tmp}/haproxy.log", B.kProxyCpu)
    procs["nginx-cached"] = procs["nginx"]
    procs["haproxy-cached"] = procs["haproxy"]
    for n in gwProcs + ["nginx", "nginx-cached", "haproxy", "haproxy-cached"]:
        B.waitPort(ports[n], procs[n], n)
    for n in gwProcs:
        B.waitPort(ports[n + "-admin"], procs[n], n + " admin")

    # Probe: every process's tools/list first (a `names: keep` route learns ownership from the
    # lists it relays; the call gateways too), then every call setup.
    notes = {}

    def probeAll(strict):
        problems = {}
        for n in gwProcs + ["nginx", "haproxy", "nginx-cached", "haproxy-cached"]:
            setup = n[3:].replace("-cached", "") if n.startswith("gw-") else n.split("-")[0]
            p, note = probeList(setup, ports[n], tools, n.endswith("-cached"))
            problems[("list", n)] = p
            notes.setdefault(("tools/list", n), note)
        for setup in kCallSetups:
            problems[("call", procOf("call", setup))] = probeCall(setup, ports[procOf("call",
                                                                                      setup)])
        bad = {k: p for k, p in problems.items() if p}
        if strict and bad:
            raise RuntimeError("setups do not answer as expected:\n" + "\n".join(
                f"{w} via {n}: " + "; ".join(p) for (w, n), p in bad.items()))
        return bad

    probeAll(True)
    B.log("every setup answers tools/list and tools/call as expected")

    B.log("warm-up")
    for workload in kWorkloads:
        for setup in setupsOf[workload]:
            runWrk(ports[procOf(workload, setup)], 1, 50, False, workload, setup)
    rssNames = gwProcs + ["nginx", "haproxy"]
    rssStart = {n: B.rssKiB(procs[n].pid) for n in rssNames}

    cap = {w: {s: [] for s in setupsOf[w]} for w in kWorkloads}
    lat = {w: {s: [] for s in setupsOf[w]} for w in kWorkloads}
    for phase, data, conns, secs, latency in (("capacity", cap, 50, seconds, False),
                                              ("latency", lat, 1, latSeconds, True)):
        loads.append((phase, B.loadavg()))
        for run in range(runs):
            for workload in B.rotated(kWorkloads, run):
                for setup in B.rotated(setupsOf[workload], run):
                    r = measure(procs, ports, workload, setup, secs, conns, latency)
                    data[workload][setup].append(r)
                    extra = ""
                    if "fetches" in r:
                        extra = (f", fetches {r['fetches']:.0f}, rejections "
                                 f"{r['reasons'] or 0}")
                    B.log(f"{phase} run {run + 1} {workload} {setup}: {r['rps']:,.0f} req/s, "
                          f"p50 {r['p50_us']:.0f}us, cpu {fmt(r['cpu_us_per_req'], 1)}us/req, "
                          f"errors {r['errors']:.0f}{extra}")
    rssEnd = {n: B.rssKiB(procs[n].pid) for n in rssNames}

    callRatios = {s: med(perRun(cap["call"], "rps", s, "plain")) for s in ("fed-keep",
                                                                            "fed-prefix")}
    profile = None
    if profileMode == "1" or (profileMode == "auto" and any(
            x is not None and x < kCallGoal for x in callRatios.values())):
        loads.append(("profile", B.loadavg()))
        B.log(f"profiling the call path ({profileSeconds} s per gateway)")
        profile = profileCalls(procs, ports, profileSeconds, tmp)
    loads.append(("end", B.loadavg()))
    after = probeAll(False)  # still answering as expected after the runs?
    logs = {n: tailOf(f"{tmp}/{n}.log") for n in gwProcs}
    B.stopAll()

    os.makedirs(resultsDir, exist_ok=True)
    report = os.path.join(resultsDir, f"{stamp}-federation.md")
    summary = writeReport(report, gateway, seconds, latSeconds, runs, tools, listModes, setupsOf,
                          cap, lat, rssStart, rssEnd, notes, after, logs, loads, sizes, profile,
                          profileSeconds)
    shutil.rmtree(tmp, ignore_errors=True)
    print(summary, flush=True)
    B.log(f"federation report: {report}")


fmt = B.fmt
med = B.med


def gatewayState():
    """Whether the gateway sources of the checkout differ from HEAD (the build includes them)."""
    try:
        p = subprocess.run(["git", "-C", os.path.dirname(kHere), "status", "--porcelain",
                            "--", "gateway", "CMakeLists.txt"], capture_output=True, text=True,
                           timeout=10)
        changed = [l for l in p.stdout.splitlines() if l.strip()]
        return (f"working tree: {len(changed)} uncommitted change(s) under gateway/ and "
                "CMakeLists.txt, built as they are" if changed else "working tree clean")
    except (OSError, subprocess.TimeoutExpired):
        return "?"


# ---- report pieces shared with bench/tls.py ---------------------------------------------------

def tailOf(path, lines=20):
    """The last non-empty lines of a log file ([] when it cannot be read)."""
    try:
        with open(path, errors="replace") as f:
            return [l.rstrip() for l in f if l.strip()][-lines:]
    except OSError:
        return []


def writeEnvironment(w, gateway, loads):
    """The report's environment lines: host, load averages, versions (and whether the checkout's
    gateway sources are committed)."""
    w("### Environment\n")
    w(f"- host: {platform.node()}, {os.cpu_count()} CPUs, kernel {platform.release()}")
    w("- load average (1/5/15 min) when each phase began: "
      + "; ".join(f"{n} {x}" for n, x in loads) + " — **the machine is shared; only same-round "
      "ratios are meaningful**")
    for k, x in B.versions(gateway).items():
        w(f"- {k}: {x}" + (f"; {gatewayState()}" if k == "mcp-gateway" and
                            not os.environ.get("BENCH_GATEWAY") else ""))


def ratioLine(label, rs, goal=None):
    """A table row: the per-round ratios and their median in bold (with the verdict on goal)."""
    m = med(rs)
    g = ""
    if goal is not None and m is not None:
        g = " — goal ≥ %.2f: %s" % (goal, "**MET**" if m >= goal else "**NOT MET**")
    return (f"| {label} | " + " | ".join(fmt(x, 2) for x in rs) + f" | **{fmt(m, 2)}**{g} |")


def roundsTable(w, title, data, key, digits, unit, runs, setupsOf, workloads):
    """data[workload][setup] = per-round dicts: one row per workload and setup, every round's
    `key` and the median."""
    w(f"#### {title}\n")
    w("| workload | setup | " + " | ".join(f"round {i + 1}" for i in range(runs))
      + " | median |")
    w("|---|---|" + "---|" * (runs + 1))
    for workload in workloads:
        for s in setupsOf[workload]:
            vals = [r.get(key) for r in data[workload][s]]
            w(f"| {workload} | {s} | " + " | ".join(fmt(x, digits) for x in vals)
              + f" | **{fmt(med(vals), digits)}** {unit} |")
    w("")


def writeLogs(w, logs):
    """The report's section of gateway log lines ({name: lines}; nothing when all are empty)."""
    logged = {n: l for n, l in logs.items() if l}
    if logged:
        w("### Gateway log lines (last 20 per gateway, `log_level: warn`)\n")
        for n, lines in logged.items():
            w(f"- {n}:")
            w("```")
            w("\n".join(lines))
            w("```")
        w("")


def writeReport(path, gateway, seconds, latSeconds, runs, tools, listModes, setupsOf, cap, lat,
                rssStart, rssEnd, notes, after, logs, loads, sizes, profile, profileSeconds):
    L = []
    w = L.append
    total = tools * len(kUps)
    fedList = [f"fed-{m}" for m in listModes]
    w(f"## Federation — {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}\n")
    writeEnvironment(w, gateway, loads)
    w(f"- capacity: `wrk -t1 -c50 -d{seconds}s`; latency: `wrk -t1 -c1 -d{latSeconds}s "
      f"--latency`; {runs} rounds per phase, each visiting every workload and setup once (order "
      "rotated per round); every figure is the median over the rounds, every ratio the median "
      "of the same-round ratios")
    w("- proxies pinned to CPU 0 (`taskset -c 0`; `workers: 1` / one worker / `nbthread 1`); "
      "wrk and the upstream nginx on CPU 1")
    tsz = sizes["tool"]
    w(f"- upstreams: one nginx worker, ten listeners ({', '.join(kUps)}, {kDirect} × uncached / "
      f"cached). tools/list: {tools} tools per upstream ({', '.join(kUps)}; names like "
      f"`{toolName('git', 0)}`, `{toolName('fs', 1)}`, `{toolName('sql', 2)}`, none shared), "
      f"each with a title, a 2-3 sentence description, an inputSchema of 2-5 described "
      f"properties and annotations: {min(tsz)}-{max(tsz)} bytes of JSON per tool, median "
      f"{med(tsz):.0f}; one upstream's answer {sizes['upstream']:,} bytes, `{kDirect}`'s "
      f"({total} tools, the four lists in one) {sizes['direct']:,} bytes. Cached listeners add "
      f"`\"ttlMs\": {kTtlMs}, \"cacheScope\": \"public\"`. Anything else gets a 300-byte "
      "tools/call result whose filler letter names the upstream. Answers are static (id 1); "
      "the requests use id 1 too")
    w(f"- gateway YAML of the federated routes: `upstreams: [{', '.join(kUps)}]`, `names: keep` "
      f"or `prefix`; `federation: {{separator: \"{kSeparator}\", list_timeout: 5s, max_items: "
      "10000}`; access log off, `log_level: warn`")
    w("")
    w("| setup | what |")
    w("|---|---|")
    for s in kCallSetups:
        w(f"| {s} | {setupText(s, tools)} |")
    w("")
    calls = callNames("plain")
    w(f"Workloads: **list** = `tools/list` against the uncached upstreams via "
      f"{', '.join(setupsOf['list'])}: the federated route fans out to all four upstreams on "
      f"every request and merges {total} tools (`names: prefix` renames every one); the plain "
      f"route, nginx and HAProxy relay `{kDirect}`'s {total}. **list-cached** = the same "
      "against the cached upstreams: the federated route answers from its merged cache, the "
      "others relay as before. **call** = 250-byte `tools/call`, `Mcp-Name` rotating over "
      f"{', '.join(f'`{n}`' for n in calls)} (one tool of each upstream; "
      f"`{kUps[0]}{kSeparator}{calls[0]}` … on `fed-prefix`, where the gateway rewrites "
      "`Mcp-Name` and `params.name`; `fed-keep` routes by header to the owner it learned from "
      f"the list, body unchanged; `plain` sends all four to `{kDirect}`). Each gateway setup "
      "and cache mode runs as its own gateway process; nginx and HAProxy serve both cache "
      "modes with one process and two listeners.\n")

    head = "| ratio | " + " | ".join(f"round {i + 1}" for i in range(runs)) + " | median |"
    sep = "|" + "---|" * (runs + 2)
    w(f"### Headline: tools/list, federated ({len(kUps)} × {tools}) ÷ direct (plain route, one "
      f"{total}-tool upstream), same round\n")
    w(head)
    w(sep)
    for f_ in fedList:
        tag = f" ({f_})"
        for label, data, workload, key in (
                ("p50 latency, uncached", lat, "list", "p50_us"),
                ("p50 latency, cached", lat, "list-cached", "p50_us"),
                ("CPU per request, uncached", cap, "list", "cpu_us_per_req"),
                ("CPU per request, cached", cap, "list-cached", "cpu_us_per_req"),
                ("req/s, uncached", cap, "list", "rps"),
                ("req/s, cached", cap, "list-cached", "rps")):
            w(ratioLine(label + tag, perRun(data[workload], key, f_, "plain")))
    w("")
    w("Latency and CPU per request: < 1 means the federated route is cheaper/faster; req/s: > 1 "
      "means it is faster.\n")
    w("### Headline: tools/call, federated ÷ plain (same round)\n")
    w(head)
    w(sep)
    for f_ in ("fed-keep", "fed-prefix"):
        w(ratioLine(f"req/s, {f_} ÷ plain", perRun(cap["call"], "rps", f_, "plain"), kCallGoal))
        w(ratioLine(f"CPU per request, {f_} ÷ plain",
                    perRun(cap["call"], "cpu_us_per_req", f_, "plain")))
        w(ratioLine(f"p50 latency, {f_} ÷ plain", perRun(lat["call"], "p50_us", f_, "plain")))
    w(ratioLine("req/s, fed-prefix ÷ fed-keep",
                perRun(cap["call"], "rps", "fed-prefix", "fed-keep")))
    w("")
    w("### Against nginx and HAProxy (same round)\n")
    w("Gateway figure ÷ the reference's figure for the same workload. req/s: > 1 = the gateway "
      "is faster; CPU per request and p50: < 1 = the gateway is cheaper/faster. The references "
      f"relay `{kDirect}`'s {total}-tool list as it is (and route the calls by `Mcp-Name` to "
      "the four upstreams, like `fed-keep`); the federated list is fanned out and merged.\n")
    gws = [s for s in kCallSetups if isGateway(s)]
    w("| workload | figure | " + " | ".join(f"{g} ÷ {r}" for g in gws for r in kRefs) + " |")
    w("|---|---|" + "---|" * (len(gws) * len(kRefs)))
    for workload in kWorkloads:
        for key, label, data in (("rps", "req/s", cap), ("cpu_us_per_req", "CPU per request", cap),
                                 ("p50_us", "p50 latency", lat)):
            cells = [fmt(med(perRun(data[workload], key, g, r)), 2)
                     if g in data[workload] else "—" for g in gws for r in kRefs]
            w(f"| {workload} | {label} | " + " | ".join(cells) + " |")
    w("")

    def table(title, data, key, digits, unit):
        roundsTable(w, title, data, key, digits, unit, runs, setupsOf, kWorkloads)

    w("### Raw figures\n")
    table("requests per second (wrk -c50)", cap, "rps", 0, "req/s")
    table("proxy CPU per request (µs; utime + stime of the process tree ÷ requests, clock-tick "
          f"resolution {1000 // os.sysconf('SC_CLK_TCK')} ms)", cap, "cpu_us_per_req", 1, "µs")
    table("proxy CPU busy during the capacity run (% of one CPU)", cap, "busy_pct", 0, "%")
    table("CPU 1 (wrk + upstream) busy during the capacity run (%)", cap, "load_busy_pct", 0, "%")
    table("p50 latency (µs, wrk -c1)", lat, "p50_us", 0, "µs")
    table("p99 latency (µs, wrk -c1)", lat, "p99_us", 0, "µs")

    w("### Did the federated routes fan out when they should, and only then?\n")
    w("`mcp_gateway_federation_list_fetches_total` (summed over route, upstream, method, "
      "outcome) from the gateway's `/metrics` before and after each run: on `list` every request "
      f"should cost {len(kUps)} fetches (one per upstream), on `list-cached` none (the cache "
      f"holds for {kTtlMs // 1000} s; one refresh of {len(kUps)} fetches may fall into a run "
      "when the ttl runs out), on `call` none (`names: keep` learned the owners from the "
      "probe's list; `names: prefix` routes by the prefix). *requests* are the ones wrk "
      "completed; the requests it cuts when its duration ends (up to one per connection, "
      "counted by the gateway as `client_closed`) had been fanned out too, so an uncached "
      f"capacity run shows slightly more than {len(kUps)}.0.\n")
    w("| workload | setup | phase | round | requests | fetches | fetches per request | "
      "fetches not ok | client_closed | other rejections |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    for workload in kWorkloads:
        for s in setupsOf[workload]:
            if not s.startswith("fed-"):
                continue
            for phase, data in (("capacity", cap), ("latency", lat)):
                for i, r in enumerate(data[workload][s]):
                    w(f"| {workload} | {s} | {phase} | {i + 1} | {r['requests']:,.0f} | "
                      f"{r['fetches']:,.0f} | {fmt(r['fetches_per_req'], 3)} | "
                      f"{r['fetches_not_ok']:,.0f} | {r['client_closed']:,.0f} | "
                      f"{r['rejections']:,.0f} |")
    w("")
    w("### Errors\n")
    w("wrk errors (connect/read/write/non-2xx/timeout) summed over all runs, and the increase "
      "of the gateways' `mcp_gateway_rejections_total` over their runs, by reason "
      "(`client_closed` = requests wrk cut when its duration ended; anything else is a "
      "finding):\n")
    w("| workload | setup | wrk errors | gateway rejections |")
    w("|---|---|---|---|")
    for workload in kWorkloads:
        for s in setupsOf[workload]:
            errs = sum(r["errors"] for d in (cap, lat) for r in d[workload][s])
            tot = {}
            for d in (cap, lat):
                for r in d[workload][s]:
                    for k, x in r.get("reasons", {}).items():
                        tot[k] = tot.get(k, 0.0) + x
            rej = (", ".join(f"{k} {x:.0f}" for k, x in sorted(tot.items())) or "none") \
                if isGateway(s) else "—"
            w(f"| {workload} | {s} | {errs:.0f} | {rej} |")
    w("")
    if after:
        w("**After the runs some setups no longer answered as expected:**\n")
        for (workload, n), p in after.items():
            w(f"- {workload} via {n}: " + "; ".join(p))
        w("")
    else:
        w("Every process was probed before and after the runs (status 200; tools/list: exactly "
          f"the expected {total} tool names and id; tools/call: on all four names the 300-byte "
          "result of the upstream that owns the name, which saw the name unprefixed in "
          "`Mcp-Name`) and answered as expected both times.\n")
    w("Probe notes:\n")
    for (what, n), x in notes.items():
        for line in x:
            w(f"- {what} via {n}: {line}")
    w("")
    if profile:
        writeProfile(w, profile, profileSeconds)
    w("### RSS\n")
    w("VmRSS of the process tree after the warm-up and after all rounds (nginx and HAProxy: one "
      "process serving both the uncached and the cached listener).\n")
    w("| process | after warm-up (MiB) | after the runs (MiB) |")
    w("|---|---|---|")
    for n in rssEnd:
        w(f"| {n} | {rssStart[n] / 1024:.1f} | {rssEnd[n] / 1024:.1f} |")
    w("")
    writeLogs(w, logs)
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")

    # The summary printed to the terminal.
    S = ["", "Federation benchmark (medians of same-round ratios)", ""]
    S.append("| figure | ratio | ÷ nginx | ÷ haproxy |")
    S.append("|---|---|---|---|")
    for f_ in fedList:
        for label, data, workload, key in (
                ("list p50, uncached", lat, "list", "p50_us"),
                ("list p50, cached", lat, "list-cached", "p50_us"),
                ("list CPU/req, uncached", cap, "list", "cpu_us_per_req"),
                ("list CPU/req, cached", cap, "list-cached", "cpu_us_per_req")):
            d = data[workload]
            S.append(f"| {label}: {f_} ÷ plain | {fmt(med(perRun(d, key, f_, 'plain')), 2)} | "
                     f"{fmt(med(perRun(d, key, f_, 'nginx')), 2)} | "
                     f"{fmt(med(perRun(d, key, f_, 'haproxy')), 2)} |")
    for f_ in ("fed-keep", "fed-prefix", "plain"):
        d = cap["call"]
        r = fmt(med(perRun(d, "rps", f_, "plain")), 2) if f_ != "plain" else "1"
        S.append(f"| call req/s: {f_} ÷ plain | {r} | {fmt(med(perRun(d, 'rps', f_, 'nginx')), 2)}"
                 f" | {fmt(med(perRun(d, 'rps', f_, 'haproxy')), 2)} |")
    S.append("")
    S.append("| workload | setup | req/s | CPU µs/req | p50 µs | p99 µs |")
    S.append("|---|---|---|---|---|---|")
    for workload in kWorkloads:
        for s in setupsOf[workload]:
            S.append(f"| {workload} | {s} | {fmt(med([r['rps'] for r in cap[workload][s]]))} | "
                     f"{fmt(med([r['cpu_us_per_req'] for r in cap[workload][s]]), 1)} | "
                     f"{fmt(med([r['p50_us'] for r in lat[workload][s]]))} | "
                     f"{fmt(med([r['p99_us'] for r in lat[workload][s]]))} |")
    other = {}
    for workload in kWorkloads:
        for s in setupsOf[workload]:
            for d in (cap, lat):
                for r in d[workload][s]:
                    for k, x in r.get("reasons", {}).items():
                        if k != "client_closed":
                            key = f"{workload}/{s}/{k}"
                            other[key] = other.get(key, 0.0) + x
    S.append("")
    S.append("gateway rejections other than client_closed (wrk's cut-off requests): "
             + (", ".join(f"{k} {x:.0f}" for k, x in sorted(other.items())) or "none"))
    S.append("setups not answering as expected after the runs: "
             + (", ".join(f"{w_}/{n}" for w_, n in after) or "none"))
    return "\n".join(S)


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
    if re.search(r"gw::federation::|FanOut|[Ff]ederat|RouteCatalog|Ownership|routeByName|"
                 r"proceedTo|rewriteForOwner|captureTask|catalogOf|catalogFor", sym):
        return "gateway: federation code"
    if sym.startswith("gw::") or dso == "mcp-gateway":
        return "gateway: everything else"
    if dso.startswith("libc"):
        return "libc, other"
    return "other (" + dso + ")"


def writeProfile(w, profile, seconds):
    w("### Profile of the call path\n")
    w(f"`perf record -e cpu-clock -F 2000 -g -p <gateway pid> -- sleep {seconds}` on each call "
      "gateway while `wrk -t1 -c50` runs its call workload (as in the capacity runs; "
      "`BENCH_FED_PROFILE`), then `perf report --no-children --sort dso,symbol` (self time, "
      f"symbols ≥ {kPerfLimit} %). *share* = the symbol's share of that gateway's samples "
      "(user and kernel); *µs/req* = that share of the gateway's CPU per request over the "
      "sampled window (utime + stime ÷ requests; perf's own cost is included, so these run a "
      "little above the capacity runs). The comparison tables line the three gateways up: what "
      "the federated routes spend beyond the plain one.\n")
    w("| setup | req/s while sampled | CPU µs/req | list fetches while sampled |")
    w("|---|---|---|---|")
    for setup, p in profile.items():
        if "error" in p:
            w(f"| {setup} | perf failed: {p['error']} | | |")
        else:
            w(f"| {setup} | {fmt(p['rps'])} | {fmt(p['cpu_us_per_req'], 1)} | "
              f"{fmt(p['fetches'])} |")
    w("")
    ok = {s: p for s, p in profile.items() if "rows" in p}
    if not ok:
        return
    feds = [s for s in ("fed-keep", "fed-prefix") if s in ok]
    order = [s for s in ("plain", "fed-keep", "fed-prefix") if s in ok]

    def usOf(p, key):
        d = {}
        for share, dso, sym, kern in p["rows"]:
            k = key(dso, sym, kern)
            d[k] = d.get(k, 0.0) + (p["cpu_us_per_req"] or 0) * share / 100
        rest = 100 - sum(r[0] for r in p["rows"])
        return d, (p["cpu_us_per_req"] or 0) * max(0.0, rest) / 100

    if "plain" in ok:
        w("#### By area (µs per request, self time summed)\n")
        per = {s: usOf(ok[s], areaOf) for s in order}
        areas = sorted(set().union(*(d[0].keys() for d in per.values())),
                       key=lambda a: -per["plain"][0].get(a, 0))
        w("| area | " + " | ".join(order) + " | "
          + " | ".join(f"{f} − plain" for f in feds) + " |")
        w("|---|" + "---|" * (len(order) + len(feds)))
        for a in areas:
            w(f"| {a} | " + " | ".join(fmt(per[s][0].get(a, 0), 2) for s in order) + " | "
              + " | ".join("%+.2f" % (per[f][0].get(a, 0) - per["plain"][0].get(a, 0))
                           for f in feds) + " |")
        w(f"| symbols below {kPerfLimit} % each | "
          + " | ".join(fmt(per[s][1], 2) for s in order) + " | "
          + " | ".join("%+.2f" % (per[f][1] - per["plain"][1]) for f in feds) + " |")
        w("| **total** | " + " | ".join(f"**{fmt(ok[s]['cpu_us_per_req'], 2)}**" for s in order)
          + " | " + " | ".join("**%+.2f**" % (ok[f]["cpu_us_per_req"]
                                             - ok["plain"]["cpu_us_per_req"]) for f in feds)
          + " |")
        w("")
        w("#### Federated minus plain, by symbol (µs per request, self time)\n")
        w(f"The 25 symbols with the largest federated excess; a symbol below {kPerfLimit} % in "
          "a profile counts as 0 there.\n")
        per = {s: usOf(ok[s], lambda dso, sym, kern: (dso, sym))[0] for s in order}
        keys = set().union(*(d.keys() for d in per.values()))
        rows = sorted(keys, key=lambda k: -max(per[f].get(k, 0) - per["plain"].get(k, 0)
                                               for f in feds))
        w("| symbol | dso | plain µs | " + " | ".join(f"{f} µs | {f} − plain" for f in feds)
          + " |")
        w("|---|---|---|" + "---|---|" * len(feds))
        for k in rows[:25]:
            cells = []
            for f in feds:
                cells += [fmt(per[f].get(k, 0), 2),
                          "%+.2f" % (per[f].get(k, 0) - per["plain"].get(k, 0))]
            w(f"| `{shortSym(k[1], 80)}` | {k[0]} | {fmt(per['plain'].get(k, 0), 2)} | "
              + " | ".join(cells) + " |")
        w("")
    for setup in order:
        p = ok[setup]
        w(f"#### {setup}: top 20 symbols by self time\n")
        w("| share | µs/req | dso | symbol |")
        w("|---|---|---|---|")
        for share, dso, sym, kern in p["rows"][:20]:
            us = p["cpu_us_per_req"] * share / 100 if p["cpu_us_per_req"] else None
            w(f"| {share:.2f}% | {fmt(us, 2)} | {dso} | {'[k] ' if kern else ''}"
              f"`{shortSym(sym)}` |")
        w("")


if __name__ == "__main__":
    B.runDriver(main, "[federation] failed; the work directory /tmp/mcp-bench-fed-* above is "
                      "kept (configs and every process's log)")
