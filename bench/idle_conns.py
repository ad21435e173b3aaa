#!/usr/bin/env python3
"""Scale-check client for bench/run.sh: opens N keep-alive connections to HOST:PORT, sends one
tools/call POST on each and reads the full answer, then leaves them all idle. Prints
`READY ok=<n> failed=<n>` once every connection has been answered (or has failed), then holds
the connections open until stdin reaches EOF, and exits after closing them."""

import resource
import selectors
import socket
import sys
import time

kBatch = 500
kDeadlineSeconds = 120


def makeRequest(port):
    head = ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tool_a",'
            '"arguments":{"q":"')
    tail = '"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
    body = (head + "x" * (250 - len(head) - len(tail)) + tail).encode()
    return (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Content-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\n"
            "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: tool_a\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def answerComplete(buf):
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return False
    length = 0
    for line in buf[:end].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    return len(buf) >= end + 4 + length


def main():
    host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    request = makeRequest(port)
    sel = selectors.DefaultSelector()
    kept, ok, failed = [], 0, 0
    deadline = time.monotonic() + kDeadlineSeconds
    opened = 0
    while opened < count and time.monotonic() < deadline:
        pending = {}
        for _ in range(min(kBatch, count - opened)):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            s.connect_ex((host, port))
            pending[s] = [b"", False]
            sel.register(s, selectors.EVENT_WRITE)
            opened += 1
        while pending and time.monotonic() < deadline:
            for key, events in sel.select(timeout=1.0):
                s = key.fileobj
                state = pending[s]
                try:
                    if events & selectors.EVENT_WRITE and not state[1]:
                        if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                            raise OSError("connect failed")
                        s.send(request)  # small enough for one send on a fresh socket
                        state[1] = True
                        sel.modify(s, selectors.EVENT_READ)
                        continue
                    data = s.recv(65536)
                    if not data:
                        raise OSError("closed")
                    state[0] += data
                    if answerComplete(state[0]):
                        sel.unregister(s)
                        del pending[s]
                        if state[0].startswith(b"HTTP/1.1 200"):
                            ok += 1
                            kept.append(s)
                        else:
                            failed += 1
                            s.close()
                except OSError:
                    sel.unregister(s)
                    del pending[s]
                    failed += 1
                    s.close()
        for s in list(pending):
            sel.unregister(s)
            s.close()
            failed += 1
    print(f"READY ok={ok} failed={failed + count - opened}", flush=True)
    sys.stdin.read()
    for s in kept:
        s.close()


if __name__ == "__main__":
    main()
