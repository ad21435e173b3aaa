#!/usr/bin/env python3
"""Send the same hostile bytes to mcp-gateway, nginx and HAProxy; tabulate what each answers.

    python3 tests/edge/compare.py            # GW_BINARY=path/to/mcp-gateway (default build/)

Issue #12 ("Edge hardening") asks to compare the gateway's answer for every edge rule with what
nginx 1.22 and HAProxy 2.6 answer to the same bytes. This tool starts, on 127.0.0.1 with ports
picked at run time:
  * three recording upstreams (one per proxy): a tiny threaded HTTP/1.1 server that answers every
    request with a fixed 200 application/json JSON-RPC result (keep-alive) and records the raw
    bytes of every request head and body it receives, with the time the head arrived;
  * nginx (`location /mcp` -> upstream, proxy_http_version 1.1, Connection "", defaults
    otherwise), HAProxy (`mode http`, defaults, one backend) and the gateway (workers: 1,
    legacy passthrough, verify_body, allowed_hosts for 127.0.0.1/localhost);
then sends every case on a fresh connection to each proxy (the three proxies in parallel, the
cases of one proxy one after the other) and records the first answer (status or close / reset /
timeout), whether the connection was closed after it, and what the upstream received.

Python 3 standard library only. Not part of ctest: a tool for the README's comparison table.
Every process it starts is stopped at the end (also on error or Ctrl-C); every socket operation
has a timeout. Output: a Markdown table on stdout and in tests/edge/compare-results.md
(--out FILE to write elsewhere, --out - for stdout only).
"""

import argparse
import datetime
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# Timeouts every proxy is configured with, so the time-based cases compare like with like.
HEADER_TIMEOUT_S = 2
BODY_TIMEOUT_S = 2
# How long the client waits for an answer, and then for a close after it.
READ_TIMEOUT_S = 1.5
CLOSE_WINDOW_S = 0.3
# Bound for the cases that wait for a proxy's own timeout (silent connection, truncated body).
LONG_WAIT_S = 4.5
# The truncated-body case waits longer: HAProxy answers it at `timeout server` (5 s).
TRUNCATED_WAIT_S = 6.0
# Time the upstream gets to receive what a proxy forwards after the client saw its answer.
SETTLE_S = 0.1

PROXIES = ["mcp-gateway", "nginx", "haproxy"]
TITLES = {"mcp-gateway": "mcp-gateway", "nginx": "nginx 1.22", "haproxy": "HAProxy 2.6"}
SHORT = {"mcp-gateway": "gw", "nginx": "nginx", "haproxy": "haproxy"}

UPSTREAM_BODY = b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}'
UPSTREAM_REPLY = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                  + str(len(UPSTREAM_BODY)).encode() + b"\r\n\r\n" + UPSTREAM_BODY)


# ---------------------------------------------------------------------------------------------
# Recording upstream

class RecordingUpstream:
    """Threaded HTTP/1.1 server: records every request (head at arrival, body when read)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.events = []    # dicts: t (monotonic at head), conn, head (bytes), body, complete
        self.accepts = []   # monotonic times of accepted connections
        self.stopping = threading.Event()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.thread = threading.Thread(target=self._acceptLoop, daemon=True)
        self.thread.start()

    def _acceptLoop(self):
        cid = 0
        while not self.stopping.is_set():
            try:
                c, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            cid += 1
            with self.lock:
                self.accepts.append(time.monotonic())
                self.conns.append(c)
            threading.Thread(target=self._serve, args=(c, cid), daemon=True).start()

    def _recvMore(self, c, buf):
        d = c.recv(65536)
        if not d:
            raise EOFError
        return buf + d

    def _serve(self, c, cid):
        c.settimeout(6.0)
        buf = b""
        try:
            while not self.stopping.is_set():
                while b"\r\n\r\n" not in buf:
                    if len(buf) > (1 << 20):
                        return
                    buf = self._recvMore(c, buf)
                head, buf = buf.split(b"\r\n\r\n", 1)
                while head.startswith(b"\r\n"):
                    head = head[2:]
                ev = {"t": time.monotonic(), "conn": cid, "head": head, "body": b"",
                      "complete": False}
                with self.lock:
                    self.events.append(ev)
                fields = parseFields(head)
                if any(v.strip().lower() == b"100-continue" for v in fields.get(b"expect", [])):
                    c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                te = b",".join(fields.get(b"transfer-encoding", [])).lower()
                if b"chunked" in te:
                    body, buf = self._readChunked(c, buf)
                elif b"content-length" in fields:
                    n = int(fields[b"content-length"][0].strip())
                    while len(buf) < n:
                        buf = self._recvMore(c, buf)
                    body, buf = buf[:n], buf[n:]
                else:
                    body = b""
                ev["body"] = body
                ev["complete"] = True
                c.sendall(UPSTREAM_REPLY)
                conn_tokens = b",".join(fields.get(b"connection", [])).lower()
                if b"close" in conn_tokens:
                    return
        except (OSError, EOFError, ValueError):
            return
        finally:
            try:
                c.close()
            except OSError:
                pass

    def _readChunked(self, c, buf):
        body = b""
        while True:
            while b"\r\n" not in buf:
                if len(buf) > (1 << 20):
                    raise ValueError("chunk line too long")
                buf = self._recvMore(c, buf)
            line, buf = buf.split(b"\r\n", 1)
            size = int(line.split(b";", 1)[0].strip(), 16)  # ValueError: give up on this conn
            if size == 0:
                while True:  # trailer section
                    while b"\r\n" not in buf:
                        buf = self._recvMore(c, buf)
                    t, buf = buf.split(b"\r\n", 1)
                    if t == b"":
                        return body, buf
            if size > (1 << 22):
                raise ValueError("chunk too large")
            while len(buf) < size + 2:
                buf = self._recvMore(c, buf)
            body += buf[:size]
            buf = buf[size + 2:]

    def mark(self):
        with self.lock:
            return len(self.events), len(self.accepts)

    def since(self, mark):
        with self.lock:
            return list(self.events[mark[0]:]), list(self.accepts[mark[1]:])

    def stop(self):
        self.stopping.set()
        try:
            self.sock.close()
        except OSError:
            pass
        with self.lock:
            for c in self.conns:
                try:
                    c.close()
                except OSError:
                    pass


def parseFields(head):
    """Field name (lower-case bytes) -> list of values, from a request head (after line 1)."""
    out = {}
    for line in head.split(b"\r\n")[1:]:
        if b":" not in line:
            continue
        name, value = line.split(b":", 1)
        out.setdefault(name.strip().lower(), []).append(value.strip())
    return out


# ---------------------------------------------------------------------------------------------
# Processes

class Proc:
    def __init__(self, name, argv, logfile, cwd=None):
        self.name = name
        self.argv = argv
        self.logfile = logfile
        self.log = open(logfile, "wb")
        self.p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log,
                                  stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True)

    def alive(self):
        return self.p.poll() is None

    def tail(self, n=600):
        try:
            with open(self.logfile, "rb") as f:
                data = f.read()
            return data[-n:].decode("utf-8", "replace").strip()
        except OSError:
            return ""

    def stop(self):
        if self.p.poll() is None:
            try:
                os.kill(self.p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(timeout=3)
            except subprocess.TimeoutExpired:
                try:
                    os.kill(self.p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                try:
                    self.p.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    pass
        self.log.close()


def freePort():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def waitPort(port, proc, seconds=8.0):
    """True once 127.0.0.1:port accepts; False if proc exits or the time runs out."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc is not None and not proc.alive():
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def nginxConf(tmp, port, up):
    return f"""
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log info;
events {{ worker_connections 512; }}
http {{
    access_log {tmp}/nginx-access.log;
    client_body_temp_path {tmp}/ngx-client-body;
    proxy_temp_path {tmp}/ngx-proxy;
    fastcgi_temp_path {tmp}/ngx-fastcgi;
    uwsgi_temp_path {tmp}/ngx-uwsgi;
    scgi_temp_path {tmp}/ngx-scgi;
    client_header_timeout {HEADER_TIMEOUT_S}s;
    client_body_timeout {BODY_TIMEOUT_S}s;
    send_timeout {BODY_TIMEOUT_S}s;
    keepalive_timeout 5s;
    server {{
        listen 127.0.0.1:{port};
        location /mcp {{
            proxy_pass http://127.0.0.1:{up};
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_connect_timeout 2s;
            proxy_send_timeout 5s;
            proxy_read_timeout 5s;
        }}
    }}
}}
"""


def haproxyCfg(port, up):
    return f"""
global
    maxconn 512
defaults
    mode http
    timeout connect 2s
    timeout client {HEADER_TIMEOUT_S}s
    timeout server 5s
    timeout http-request {HEADER_TIMEOUT_S}s
    timeout http-keep-alive 5s
frontend fe
    bind 127.0.0.1:{port}
    default_backend be
backend be
    server up 127.0.0.1:{up}
"""


GW_ALLOWED_HOSTS = '["127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*"]'


def gatewayYaml(port, up, tmp, allowed_hosts=True):
    # Shape as tests/integration/harness.cc gatewayYaml; limits as nginx's defaults where the
    # gateway has the same knob (max_body_bytes = client_max_body_size 1m).
    hosts = f"  allowed_hosts: {GW_ALLOWED_HOSTS}\n" if allowed_hosts else ""
    return (f"listen: 127.0.0.1:{port}\n"
            "endpoint: /mcp\n"
            "workers: 1\n"
            "limits:\n"
            "  max_body_bytes: 1MiB\n"
            f"  header_timeout: {HEADER_TIMEOUT_S}s\n"
            f"  body_timeout: {BODY_TIMEOUT_S}s\n"
            "  keepalive_timeout: 5s\n"
            "mcp:\n"
            "  legacy: passthrough\n"
            "  verify_body: true\n"
            + hosts +
            "upstreams:\n"
            "  - name: main\n"
            f"    endpoints: [127.0.0.1:{up}]\n"
            "    path: /mcp\n"
            "    connect_timeout: 2s\n"
            "    response_timeout: 5s\n"
            "routes:\n"
            "  - name: default\n"
            "    upstream: main\n"
            "access_log:\n"
            f"  path: {tmp}/gw-access.log\n"
            "log_level: warn\n"
            "drain_timeout: 1s\n"
            "watch_files: false\n")


def firstLine(argv):
    try:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=10)
        return r.stdout.decode("utf-8", "replace").strip().splitlines()[0]
    except (OSError, subprocess.TimeoutExpired, IndexError):
        return "unknown"


# ---------------------------------------------------------------------------------------------
# Client side

def parseResponse(buf, eof):
    """(status, length) of the first complete response in buf, or None if incomplete."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = buf[:end]
    line = head.split(b"\r\n", 1)[0]
    parts = line.split(b" ", 2)
    try:
        status = int(parts[1])
    except (IndexError, ValueError):
        return ("garbage", len(buf))
    fields = parseFields(head)
    start = end + 4
    if 100 <= status < 200 or status in (204, 304):
        return (status, start)
    te = b",".join(fields.get(b"transfer-encoding", [])).lower()
    if b"chunked" in te:
        pos = start
        while True:
            nl = buf.find(b"\r\n", pos)
            if nl < 0:
                return None
            try:
                size = int(buf[pos:nl].split(b";")[0].strip(), 16)
            except ValueError:
                return (status, len(buf))
            if size == 0:
                tend = buf.find(b"\r\n\r\n", nl - 2 if nl >= 2 else nl)
                # "0\r\n\r\n": the blank line right after the last-chunk line
                if buf[nl:nl + 4] == b"\r\n\r\n":
                    return (status, nl + 4)
                if tend < 0:
                    return None
                return (status, tend + 4)
            if len(buf) < nl + 2 + size + 2:
                return None
            pos = nl + 2 + size + 2
    if b"content-length" in fields:
        try:
            n = int(fields[b"content-length"][0])
        except ValueError:
            n = 0
        if len(buf) < start + n:
            return None
        return (status, start + n)
    if eof:
        return (status, len(buf))
    return None


class Conn:
    """One client connection with bounded reads; collects every response it sees."""

    def __init__(self, port):
        self.t0 = time.monotonic()
        self.s = socket.create_connection(("127.0.0.1", port), timeout=2.0)
        self.buf = b""
        self.eof = False
        self.reset = False
        self.responses = []   # statuses, 1xx included
        self.raw = []         # the bytes of each response
        self.notes = []

    def send(self, data):
        if self.eof or self.reset:
            self.notes.append("send after close skipped")
            return False
        try:
            self.s.settimeout(3.0)
            self.s.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError):
            self.notes.append("send failed (peer closed)")
            return False
        except socket.timeout:
            self.notes.append("send timed out")
            return False

    def _recv(self, timeout):
        """Read once; returns False on timeout."""
        if self.eof or self.reset:
            return False
        self.s.settimeout(max(timeout, 0.01))
        try:
            d = self.s.recv(65536)
        except socket.timeout:
            return False
        except ConnectionResetError:
            self.reset = True
            return True
        except OSError:
            self.reset = True
            return True
        if not d:
            self.eof = True
        else:
            self.buf += d
        return True

    def _drainParsed(self):
        while True:
            r = parseResponse(self.buf, self.eof)
            if r is None:
                return
            self.responses.append(r[0])
            self.raw.append(self.buf[:r[1]])
            self.buf = self.buf[r[1]:]
            if not self.buf:
                return

    def readAnswer(self, timeout, stop_on_interim=False):
        """Read until a final response (or an interim one if stop_on_interim), EOF, reset or
        timeout. Returns 'final', 'interim', 'close', 'reset' or 'timeout'."""
        deadline = time.monotonic() + timeout
        seen = len(self.responses)
        while True:
            self._drainParsed()
            for st in self.responses[seen:]:
                if isinstance(st, int) and 100 <= st < 200:
                    if stop_on_interim:
                        return "interim"
                else:
                    return "final"
            seen = len(self.responses)
            if self.reset:
                return "reset"
            if self.eof:
                return "close"
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            self._recv(left)

    def closeState(self, window=CLOSE_WINDOW_S, extra_answers=False):
        """After a final answer: 'closed', 'reset' or 'open' (nothing within window). Any further
        responses that arrive meanwhile are collected (pipelining)."""
        deadline = time.monotonic() + window
        while True:
            self._drainParsed()
            if self.reset:
                return "reset"
            if self.eof:
                return "closed"
            left = deadline - time.monotonic()
            if left <= 0:
                return "open"
            got = self._recv(left)
            if got and self.buf and extra_answers:
                deadline = max(deadline, time.monotonic() + window)

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


# ---------------------------------------------------------------------------------------------
# Cases

HOST = b"127.0.0.1"
META = b'"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}'


def rpc(head, params=b'"name":"echo","arguments":{}'):
    """A JSON-RPC message: head is what precedes "params" (jsonrpc, id, method)."""
    return b"{" + head + b',"params":{' + params + b"," + META + b"}}"


BODY = rpc(b'"jsonrpc":"2.0","id":1,"method":"tools/call"')


def request(method=b"POST", target=b"/mcp", version=b"HTTP/1.1", hosts=(HOST,), extra=b"",
            body=BODY, content_length=True, mcp=True, prefix=b"", content_type=True,
            mcp_method=b"tools/call", mcp_name=b"echo"):
    r = prefix + method + b" " + target + b" " + version + b"\r\n"
    for h in hosts:
        r += b"Host: " + h + b"\r\n"
    if content_type:
        r += b"Content-Type: application/json\r\n"
    r += b"Accept: application/json, text/event-stream\r\n"
    if mcp:
        r += b"MCP-Protocol-Version: 2026-07-28\r\n"
        if mcp_method is not None:
            r += b"Mcp-Method: " + mcp_method + b"\r\n"
        if mcp_name is not None:
            r += b"Mcp-Name: " + mcp_name + b"\r\n"
    if content_length and body:
        r += b"Content-Length: " + str(len(body)).encode() + b"\r\n"
    r += extra
    return r + b"\r\n" + body


def chunked(size_line, extra=b"", body=BODY):
    """A chunked MCP POST whose only data chunk has the given chunk-size line (no CRLF)."""
    head = request(content_length=False, body=b"", extra=b"Transfer-Encoding: chunked\r\n" + extra)
    return head + size_line + b"\r\n" + body + b"\r\n0\r\n\r\n"


SMUGGLED = b"GET /mcp?smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def hexlen(b=BODY):
    return b"%x" % len(b)


class Case:
    def __init__(self, name, item, rule, steps=None, data=None, watch=(), mcp_only=False,
                 kind="plain", note=""):
        self.name = name
        self.item = item
        self.rule = rule
        self.steps = steps if steps is not None else [("send", data)]
        self.watch = [w.lower().encode() for w in watch]
        self.mcp_only = mcp_only
        self.kind = kind      # plain | silent | slowbody | truncated | expect
        self.note = note


def buildCases():
    L = hexlen()
    big = b"x" * 65536
    cases = [
        Case("baseline: valid MCP POST", "-", "sanity", data=request()),
        # --- item 1: Host and the request target
        Case("Host missing (HTTP/1.1)", "1", "RFC 9112 §3.2: 400", data=request(hosts=()),
             watch=["Host"]),
        Case("Host missing (HTTP/1.0)", "1", "RFC 9112 §3.2 (1.0 may omit Host)",
             data=request(hosts=(), version=b"HTTP/1.0"), watch=["Host"]),
        Case("Host twice, same value", "1", "RFC 9112 §3.2: 400",
             data=request(hosts=(HOST, HOST)), watch=["Host"]),
        Case("Host twice, different values", "1", "RFC 9112 §3.2: 400",
             data=request(hosts=(HOST, b"evil.example")), watch=["Host"]),
        Case("Host list `127.0.0.1, evil.example`", "1", "RFC 9112 §3.2: 400",
             data=request(hosts=(b"127.0.0.1, evil.example",)), watch=["Host"]),
        Case("Host with userinfo `u@127.0.0.1`", "1", "RFC 9112 §3.2.2 / RFC 9110 §4.2.4: 400",
             data=request(hosts=(b"u@127.0.0.1",)), watch=["Host"]),
        Case("Host empty (HTTP/1.1, origin-form)", "1", "RFC 9112 §3.2: 400",
             data=request(hosts=(b"",)), watch=["Host"]),
        Case("Host bad chars `127.0.0.1/x`", "1", "RFC 9110 §7.2 (uri-host): 400",
             data=request(hosts=(b"127.0.0.1/x",)), watch=["Host"]),
        Case("Host bad chars `a b`", "1", "RFC 9110 §7.2 (uri-host): 400",
             data=request(hosts=(b"a b",)), watch=["Host"]),
        Case("Host not in allowed_hosts (`evil.example`)", "1", "allowed_hosts: 403 JSON-RPC",
             data=request(hosts=(b"evil.example",)),
             note="nginx/HAProxy: no Host allow-list in a default config", watch=["Host"]),
        Case("absolute-form, authority ≠ Host", "1",
             "RFC 9112 §3.2.2: 400; origin-form upstream",
             data=request(target=b"http://evil.example/mcp"), watch=["Host"]),
        Case("absolute-form, authority = Host", "1",
             "RFC 9112 §3.2.2: accept; origin-form upstream",
             data=request(target=b"http://127.0.0.1/mcp"), watch=["Host"]),
        Case("fragment in target `/mcp#x`", "1", "RFC 9112 §3.2 (no fragment): 400",
             data=request(target=b"/mcp#x")),
        Case("raw NUL in target", "1", "RFC 9112 §3: 400",
             data=request(target=b"/mcp\x00x")),
        Case("`%00` in target", "1", "item 1: 400",
             data=request(target=b"/mcp%00")),
        Case("CONNECT", "1", "item 1: answered locally (405)",
             data=b"CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n"),
        Case("TRACE /mcp", "1", "item 1: answered locally (405)",
             data=request(method=b"TRACE", body=b"", mcp=False, content_type=False)),
        Case("OPTIONS *", "1", "item 1: answered locally (400/405)",
             data=request(method=b"OPTIONS", target=b"*", body=b"", mcp=False,
                          content_type=False)),
        # --- item 2: field names and hop-by-hop abuse
        Case("`Content_Length: 5` beside Content-Length", "2", "item 2 (`_` read as `-`): 400",
             data=request(extra=b"Content_Length: 5\r\n"), watch=["Content_Length"]),
        Case("`Transfer_Encoding: chunked`", "2", "item 2 (`_` read as `-`): 400",
             data=request(extra=b"Transfer_Encoding: chunked\r\n"), watch=["Transfer_Encoding"]),
        Case("`Mcp_Method: tools/list`", "2", "item 2 (`_` read as `-`): 400",
             data=request(extra=b"Mcp_Method: tools/list\r\n"), watch=["Mcp_Method"],
             mcp_only=True),
        Case("`MCP_Protocol_Version`", "2", "item 2 (`_` read as `-`): 400",
             data=request(extra=b"MCP_Protocol_Version: 2025-06-18\r\n"),
             watch=["MCP_Protocol_Version"], mcp_only=True),
        Case("`Connection: Content-Length`", "2", "RFC 9110 §7.6.1 + item 2: 400",
             data=request(extra=b"Connection: Content-Length\r\n"), watch=["Content-Length"]),
        Case("`Connection: Authorization`", "2", "RFC 9110 §7.6.1 + item 2: 400",
             data=request(extra=b"Authorization: Bearer abc\r\nConnection: Authorization\r\n"),
             watch=["Authorization"]),
        Case("`Connection: X-Forwarded-For`", "2", "RFC 9110 §7.6.1 + item 2: 400",
             data=request(extra=b"X-Forwarded-For: 1.2.3.4\r\nConnection: X-Forwarded-For\r\n"),
             watch=["X-Forwarded-For"]),
        Case("Content-Length and Transfer-Encoding: chunked", "2",
             "RFC 9112 §6.1: 400 (or chunked wins + close)",
             data=request(extra=b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
                          body=b"")
             + hexlen() + b"\r\n" + BODY + b"\r\n0\r\n\r\n"),
        Case("two different Content-Length", "2", "RFC 9112 §6.3: 400",
             data=request(extra=b"Content-Length: %d\r\n" % (len(BODY) + 1))),
        Case("two `Authorization` fields", "2", "RFC 9110 §5.3 (singleton): 400",
             data=request(extra=b"Authorization: Bearer a\r\nAuthorization: Bearer b\r\n"),
             watch=["Authorization"]),
        # --- item 3: chunked request bodies
        Case("chunk-size `2c ;ext` (space before `;`)", "3", "RFC 9112 §7.1 (1*HEXDIG): 400",
             data=chunked(L + b" ;a=b")),
        Case("chunk-size `2c ` (space before CRLF)", "3", "RFC 9112 §7.1: 400",
             data=chunked(L + b" ")),
        Case("chunk-size `0x2c`", "3", "RFC 9112 §7.1: 400", data=chunked(b"0x" + L)),
        Case("chunk-size 20 hex digits (leading zeros)", "3", "item 3 (bounded digits): 400",
             data=chunked(L.rjust(20, b"0"))),
        Case("chunk-size 20 hex digits (overflow)", "3", "item 3 (bounded digits): 400",
             data=chunked(b"f" * 20)),
        Case("chunk-ext `;=x` (no name)", "3", "RFC 9112 §7.1.1: 400",
             data=chunked(L + b";=x")),
        Case("chunk-ext `;a=\"b` (unterminated quote)", "3", "RFC 9112 §7.1.1: 400",
             data=chunked(L + b';a="b')),
        Case("chunk-ext 8 KiB", "3", "item 3 (bounded extensions): 400",
             data=chunked(L + b";x=" + b"a" * 8192)),
        # --- item 4: limits
        Case("one 9 KiB header line", "4", "item 4 (max_header_line 8KiB): 431",
             data=request(extra=b"X-Big: " + b"a" * 9216 + b"\r\n")),
        Case("33 `Mcp-Param-*` fields", "4", "item 4 (max_param_headers 32): 431",
             data=request(extra=b"".join(b"Mcp-Param-P%d: v\r\n" % i for i in range(33))),
             mcp_only=True),
        # --- item 5: Expect
        Case("`Expect: foo`", "5", "RFC 9110 §10.1.1: 417",
             data=request(extra=b"Expect: foo\r\n"), watch=["Expect"]),
        Case("`Expect: 100-continue`, allowed request", "5", "RFC 9110 §10.1.1: 100 then 200",
             kind="expect", watch=["Expect"],
             steps=[("head", request(body=b"", extra=b"Expect: 100-continue\r\n"
                                     b"Content-Length: %d\r\n" % len(BODY))),
                    ("body", BODY)]),
        Case("`Expect: 100-continue`, Host refused", "5", "item 5: 403, no 100, body unread",
             kind="expect", watch=["Expect"],
             note="nginx/HAProxy have no Host allow-list: not refused there",
             steps=[("head", request(hosts=(b"evil.example",), body=b"",
                                     extra=b"Expect: 100-continue\r\nContent-Length: %d\r\n"
                                     % len(BODY))),
                    ("body", BODY)]),
        Case("`Expect: 100-continue`, Content-Length 2 MB > limit, 1 KB sent", "5",
             "item 5: 413, no 100, body unread", kind="expect", watch=["Expect"],
             steps=[("head", request(body=b"", extra=b"Expect: 100-continue\r\n"
                                     b"Content-Length: 2000000\r\n")),
                    ("body", b"x" * 1000)]),
        # --- item 7: buffering, pipelining, empty lines
        Case("empty lines before the request line", "7", "RFC 9112 §2.2: ignore, 200",
             data=request(prefix=b"\r\n\r\n")),
        Case("GET with Content-Length body = a second request", "7",
             "RFC 9112 §6.3: body is body, never a request", kind="pipeline",
             data=(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                   b"Content-Length: %d\r\n\r\n" % len(SMUGGLED) + SMUGGLED)),
        Case("slow body (head, 1 s pause, body)", "7", "item 7: upstream contacted after body",
             kind="slowbody", steps=[("send", request(body=b"", extra=b"Content-Length: %d\r\n"
                                                      % len(BODY))),
                                     ("pause", 1.0), ("send", BODY)]),
        Case("truncated body (head + 10 of 100 bytes, silence)", "7",
             "item 7: upstream never contacted", kind="truncated",
             steps=[("send", request(body=b"", extra=b"Content-Length: 100\r\n") + BODY[:10])]),
        # --- item 9: connections that never speak, lingering close
        Case("silent connection (nothing sent)", "9", "item 9: close at header_timeout (2 s)",
             kind="silent", steps=[]),
        Case("400 with 64 KiB body in flight", "9", "item 9: lingering close, client reads 400",
             data=request(hosts=(), body=big, mcp=False)),
        # --- item 10: client address headers
        Case("`X-Forwarded-For`/`Forwarded`/`X-Real-IP` from untrusted peer", "10",
             "item 10: replaced by `X-Forwarded-For: <peer>`",
             data=request(extra=b"X-Forwarded-For: 1.2.3.4\r\nForwarded: for=1.2.3.4\r\n"
                                b"X-Real-IP: 1.2.3.4\r\nX-Forwarded-Proto: https\r\n"),
             watch=["X-Forwarded-For", "Forwarded", "X-Real-IP", "X-Forwarded-Proto"]),
        # --- item 11: verify mode
        Case("`Content-Encoding: gzip` (body not gzip)", "11", "item 11: 415",
             data=request(extra=b"Content-Encoding: gzip\r\n"), watch=["Content-Encoding"]),
        Case("`Content-Type: application/json; charset=latin1`", "11", "item 11: 415",
             data=request(content_type=False,
                          extra=b"Content-Type: application/json; charset=latin1\r\n")),
        Case("JSON-RPC `id: null`", "11", "JSON-RPC 2.0 §4 / item 11: 400 -32600",
             data=request(body=rpc(b'"jsonrpc":"2.0","id":null,"method":"tools/call"')),
             mcp_only=True),
        Case("JSON-RPC `id: true`", "11", "JSON-RPC 2.0 §4 / item 11: 400 -32600",
             data=request(body=rpc(b'"jsonrpc":"2.0","id":true,"method":"tools/call"')),
             mcp_only=True),
        Case("`tools/call` without id", "11", "item 11: 400 -32600",
             data=request(body=rpc(b'"jsonrpc":"2.0","method":"tools/call"')), mcp_only=True),
        Case("`Mcp-Name` on `tools/list`", "11", "item 11: 400 -32020",
             data=request(mcp_method=b"tools/list",
                          body=rpc(b'"jsonrpc":"2.0","id":1,"method":"tools/list"', b'"x":1')),
             mcp_only=True),
        Case("client sends a JSON-RPC response", "11", "item 11: 400 -32600",
             data=request(mcp_method=None, mcp_name=None,
                          body=b'{"jsonrpc":"2.0","id":1,"result":{}}'), mcp_only=True),
    ]
    return cases


# ---------------------------------------------------------------------------------------------
# Running a case

def runCase(port, case, upstream):
    """Run one case against the proxy on port; returns a dict for the table."""
    mark = upstream.mark()
    res = {"status": "", "after": "", "notes": [], "marks": {}}
    try:
        conn = Conn(port)
    except OSError as e:
        res["status"] = f"connect failed ({e.__class__.__name__})"
        return res
    try:
        if case.kind == "silent":
            outcome = conn.readAnswer(LONG_WAIT_S)
            dt = time.monotonic() - conn.t0
            if outcome == "final":
                res["status"] = f"{conn.responses[-1]} after {dt:.1f} s"
                res["after"] = conn.closeState()
            elif outcome in ("close", "reset"):
                res["status"] = f"{outcome} after {dt:.1f} s"
            else:
                res["status"] = f"still open after {LONG_WAIT_S:.1f} s"
        elif case.kind == "expect":
            head, body = case.steps[0][1], case.steps[1][1]
            conn.send(head)
            outcome = conn.readAnswer(1.0, stop_on_interim=True)
            shown = []
            if outcome == "interim":
                shown.append(str(conn.responses[-1]))
                conn.send(body)
                outcome = conn.readAnswer(READ_TIMEOUT_S)
            elif outcome == "timeout":
                shown.append("no 100 in 1 s")
                conn.send(body)
                outcome = conn.readAnswer(READ_TIMEOUT_S)
            shown.append(str(conn.responses[-1]) if outcome == "final" else outcome)
            res["status"] = " → ".join(shown)
            if outcome == "final":
                res["after"] = conn.closeState()
        else:
            for i, (kind, arg) in enumerate(case.steps):
                if kind == "send":
                    if case.kind == "slowbody" and i == len(case.steps) - 1:
                        res["marks"]["body_send"] = time.monotonic()
                    conn.send(arg)
                elif kind == "pause":
                    conn.readAnswer(arg)   # an early answer during the pause is kept
            wait = TRUNCATED_WAIT_S if case.kind == "truncated" else READ_TIMEOUT_S
            t_start = time.monotonic()
            outcome = conn.readAnswer(wait)
            if outcome == "final":
                res["status"] = str(conn.responses[0] if conn.responses else "?")
                if case.kind == "truncated":
                    res["status"] += f" after {time.monotonic() - t_start:.1f} s"
                res["after"] = conn.closeState(extra_answers=(case.kind == "pipeline"))
                if case.kind == "pipeline":
                    res["notes"].append(f"{len(conn.responses)} response(s): "
                                        + ", ".join(str(s) for s in conn.responses))
            else:
                res["status"] = outcome
                if case.kind == "truncated" and outcome != "timeout":
                    res["status"] += f" after {time.monotonic() - t_start:.1f} s"
            if conn.responses and not isinstance(conn.responses[0], int):
                res["status"] = "garbage"
        res["notes"] += conn.notes
        finals = [r for st, r in zip(conn.responses, conn.raw)
                  if not (isinstance(st, int) and 100 <= st < 200)]
        res["reason"] = reason(finals[0]) if finals else ""
    finally:
        conn.close()
    time.sleep(SETTLE_S)
    events, accepts = upstream.since(mark)
    res["upstream"] = summarizeUpstream(case, events, accepts, res["marks"])
    return res


def reason(raw):
    """A short why from a gateway answer: JSON-RPC code + message, or a text/plain line."""
    head, _, body = raw.partition(b"\r\n\r\n")
    ctype = b"".join(parseFields(head).get(b"content-type", [])).lower()
    if b"json" in ctype:
        try:
            err = json.loads(body.decode("utf-8", "replace")).get("error")
            if not isinstance(err, dict):
                return ""
            return f"{err.get('code')} {clip(str(err.get('message', '')).encode(), 60)}"
        except (ValueError, AttributeError):
            return "json"
    if b"text/plain" in ctype:
        return clip(body.strip().split(b"\n", 1)[0], 60)
    return ""


def clip(b, n=48):
    s = b.decode("latin-1")
    s = s.replace("\x00", "\\0").replace("\r", "\\r").replace("\n", "\\n")
    return s if len(s) <= n else s[:n - 1] + "…"


def summarizeUpstream(case, events, accepts, marks):
    if not events:
        return "connected, no request" if accepts else "nothing"
    parts = []
    for ev in events:
        line = ev["head"].split(b"\r\n", 1)[0]
        p = "`" + clip(line) + "`"
        if not ev["complete"]:
            p += " (body incomplete)"
        if case.kind == "slowbody" and "body_send" in marks:
            dt = ev["t"] - marks["body_send"]
            p += " (head arrived before the body was sent)" if dt < 0 else " (after the body)"
        fields = parseFields(ev["head"])
        for w in case.watch:
            vals = fields.get(w, [])
            if vals:
                p += "; " + "; ".join(f"`{clip(w)}: {clip(v, 32)}`" for v in vals)
            else:
                p += f"; no `{clip(w)}`"
        parts.append(p)
    if len(events) > 1:
        return f"{len(events)} requests: " + " + ".join(parts)
    return parts[0]


# ---------------------------------------------------------------------------------------------
# Main

class Setup:
    def __init__(self, name):
        self.name = name
        self.upstream = None
        self.proc = None
        self.port = None
        self.error = None
        self.note = ""


def startAll(tmp, gw_binary, procs):
    setups = {n: Setup(n) for n in PROXIES}
    for s in setups.values():
        s.upstream = RecordingUpstream()
        s.port = freePort()

    # nginx
    s = setups["nginx"]
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    conf = os.path.join(tmp, "nginx.conf")
    with open(conf, "w") as f:
        f.write(nginxConf(tmp, s.port, s.upstream.port))
    try:
        s.proc = Proc("nginx", [nginx, "-p", tmp, "-e", os.path.join(tmp, "nginx-error.log"),
                                "-c", conf, "-g", "daemon off; master_process off;"],
                      os.path.join(tmp, "nginx.out"))
        procs.append(s.proc)
    except OSError as e:
        s.error = f"could not start nginx: {e}"

    # HAProxy
    s = setups["haproxy"]
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    cfg = os.path.join(tmp, "haproxy.cfg")
    with open(cfg, "w") as f:
        f.write(haproxyCfg(s.port, s.upstream.port))
    try:
        s.proc = Proc("haproxy", [haproxy, "-f", cfg, "-db"], os.path.join(tmp, "haproxy.out"))
        procs.append(s.proc)
    except OSError as e:
        s.error = f"could not start haproxy: {e}"

    # gateway: validate first; a binary without allowed_hosts gets the config without it.
    s = setups["mcp-gateway"]
    yml = os.path.join(tmp, "gateway.yaml")
    if not os.access(gw_binary, os.X_OK):
        s.error = f"GW_BINARY {gw_binary} is not an executable"
    else:
        for hosts in (True, False):
            with open(yml, "w") as f:
                f.write(gatewayYaml(s.port, s.upstream.port, tmp, allowed_hosts=hosts))
            chk = subprocess.run([gw_binary, "check", "-c", yml], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, timeout=20)
            if chk.returncode == 0:
                if not hosts:
                    s.note = "this binary rejects mcp.allowed_hosts: run without it"
                break
            s.error = "config rejected: " + chk.stdout.decode("utf-8", "replace").strip()[-300:]
        else:
            return setups
        s.error = None
        try:
            s.proc = Proc("mcp-gateway", [gw_binary, "run", "-c", yml],
                          os.path.join(tmp, "gateway.out"))
            procs.append(s.proc)
        except OSError as e:
            s.error = f"could not start the gateway: {e}"

    for s in setups.values():
        if s.error is None and not waitPort(s.port, s.proc):
            s.error = f"{s.name} did not start: " + (s.proc.tail() or "no output")
    return setups


def runSetup(setup, cases, results):
    out = {}
    for c in cases:
        if setup.error:
            out[c.name] = {"status": "not run", "after": "", "notes": [], "upstream": ""}
            continue
        try:
            out[c.name] = runCase(setup.port, c, setup.upstream)
        except Exception as e:  # one broken case must not end the run  # noqa: BLE001
            out[c.name] = {"status": f"probe error: {e.__class__.__name__}: {e}", "after": "",
                           "notes": [], "upstream": ""}
    results[setup.name] = out


def cell(r, mcp_only, proxy):
    text = r["status"]
    if proxy == "mcp-gateway" and r.get("reason"):
        text += f" `{r['reason']}`"
    if r.get("after"):
        text += ", " + {"open": "kept open", "closed": "closed", "reset": "then reset"}.get(
            r["after"], r["after"])
    if r.get("notes"):
        text += " (" + "; ".join(r["notes"]) + ")"
    if mcp_only and proxy != "mcp-gateway":
        text = "n/a (no MCP awareness): " + text
    return text


def md(s):
    return s.replace("|", "\\|").replace("\n", " ")


def render(cases, results, setups, header):
    lines = [header, "",
             "| case | item / rule | " + " | ".join(TITLES[p] for p in PROXIES)
             + " | upstream saw (gw / nginx / HAProxy) |",
             "|---|---|---|---|---|---|"]
    for c in cases:
        cells = [cell(results[p][c.name], c.mcp_only, p) for p in PROXIES]
        ups = " <br> ".join(f"{SHORT[p]}: {results[p][c.name].get('upstream', '')}"
                            for p in PROXIES)
        rule = f"{c.item}: {c.rule}" if c.item != "-" else c.rule
        if c.note:
            rule += f" ({c.note})"
        lines.append("| " + " | ".join(md(x) for x in [c.name, rule] + cells + [ups]) + " |")
    lines.append("")
    for s in setups.values():
        if s.error:
            lines.append(f"- **{TITLES[s.name]} failed to start**: {md(s.error)}")
        if s.note:
            lines.append(f"- {TITLES[s.name]}: {s.note}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "compare-results.md"),
                    help="Markdown output file ('-': stdout only)")
    ap.add_argument("--only", default="", help="run only cases whose name contains this")
    args = ap.parse_args()
    gw_binary = os.path.abspath(os.environ.get("GW_BINARY",
                                               os.path.join(REPO, "build", "mcp-gateway")))

    def onSignal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, onSignal)

    procs = []
    setups = {}
    tmp = tempfile.mkdtemp(prefix="gw-edge-compare-")
    t0 = time.monotonic()
    try:
        cases = [c for c in buildCases() if args.only.lower() in c.name.lower()]
        setups = startAll(tmp, gw_binary, procs)
        results = {}
        threads = [threading.Thread(target=runSetup, args=(s, cases, results), daemon=True)
                   for s in setups.values()]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)
        for p in PROXIES:  # a thread that did not finish still gets a column
            results.setdefault(p, {c.name: {"status": "not finished", "after": "",
                                            "notes": [], "upstream": ""} for c in cases})
        for s in setups.values():
            if s.proc is not None and not s.proc.alive() and not s.error:
                s.error = f"exited during the run: {s.proc.tail(300)}"
        elapsed = time.monotonic() - t0
        gw_rev = ""
        try:
            r = subprocess.run(["git", "-C", os.path.dirname(os.path.dirname(gw_binary)),
                                "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, timeout=5)
            gw_rev = r.stdout.decode().strip()
        except (OSError, subprocess.TimeoutExpired):
            pass
        header = "\n".join([
            "# Edge cases: mcp-gateway vs nginx vs HAProxy",
            "",
            f"Produced by `python3 tests/edge/compare.py` (GW_BINARY=`{gw_binary}`"
            + (f", checkout {gw_rev}" if gw_rev else "") + ") on "
            + datetime.datetime.now().strftime("%Y-%m-%d %H:%M") + f" in {elapsed:.0f} s.",
            "",
            f"- mcp-gateway: `{firstLine([gw_binary, 'version'])}` (workers 1, legacy passthrough, "
            "verify_body, allowed_hosts 127.0.0.1/localhost, max_body_bytes 1MiB, header/body "
            f"timeout {HEADER_TIMEOUT_S} s)",
            f"- nginx: `{firstLine(['nginx', '-v'])}` (location /mcp → proxy_pass, "
            "proxy_http_version 1.1, Connection \"\", client_header/body_timeout "
            f"{HEADER_TIMEOUT_S} s, defaults otherwise)",
            f"- HAProxy: `{firstLine(['haproxy', '-v'])}` (mode http, one backend, timeout "
            f"http-request/client {HEADER_TIMEOUT_S} s, defaults otherwise)",
            "",
            "Each case is sent on a fresh connection. A cell is the first answer's status (or "
            "`close`/`reset`/`timeout` when none came within "
            f"{READ_TIMEOUT_S} s), then whether the connection was closed after it. *upstream "
            "saw* lists the request line(s) the recording upstream received for that case "
            "(plus the watched fields), `nothing` when it received nothing.",
        ])
        text = render(cases, results, setups, header)
        sys.stdout.write(text)
        if args.out != "-":
            with open(args.out, "w") as f:
                f.write(text)
            print(f"\nwritten to {args.out} ({elapsed:.0f} s)", file=sys.stderr)
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        for p in procs:
            p.stop()
        for s in setups.values():
            if s.upstream is not None:
                s.upstream.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
