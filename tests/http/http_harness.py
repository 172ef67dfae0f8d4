"""Helpers of the HTTP server tests: start examples/http_server on a free loopback port, stop it, talk raw sockets."""
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time

import requests

FAILURES = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILURES.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """examples/http_server started with `args` on a port it picks (--port 0), parsed from its first line."""

    def __init__(self, binary, args, startup_s=60, env=None):
        self.proc = subprocess.Popen([binary, "--port", "0", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env={**os.environ, **(env or {})})
        deadline = time.monotonic() + startup_s
        line = ""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.5)
            if ready:
                line = self.proc.stdout.readline()
                break
            if self.proc.poll() is not None:
                break
        m = re.match(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if not m:
            self.proc.kill()
            raise RuntimeError(f"http_server did not start: {line!r} {self.proc.stderr.read()}")
        self.port = int(m.group(1))
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self, timeout_s=30):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def metric(text, name, **labels):
    """The value of the sample `name` whose labels include `labels`, in a Prometheus exposition; None when absent."""
    for line in text.splitlines():
        series, _, value = line.rpartition(" ")
        base, _, label_part = series.partition("{")
        if base == name and all(f'{k}="{v}"' in label_part for k, v in labels.items()):
            return float(value)
    return None


def scrape_until(url, ready, timeout_s=10, headers=None):
    """GET url/metrics until ready(text) holds or timeout_s passes; the last exposition. httplib calls the logger,
    which counts a request, just after the response is written: a client can see a reply before its count."""
    deadline = time.monotonic() + timeout_s
    while True:
        text = requests.get(f"{url}/metrics", headers=headers or {}).text
        if ready(text) or time.monotonic() > deadline:
            return text
        time.sleep(0.05)


def raw_request(port, head, body=b""):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(head.encode() + body)
    return s


def read_status(sock, timeout_s=20):
    sock.settimeout(timeout_s)
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return int(data.split(b" ")[1]) if data.startswith(b"HTTP/1.1") else None


def read_responses(sock, count, timeout_s=10):
    """Up to `count` HTTP/1.1 responses read from sock, in order, as (status, {lowercase header: value}, body); fewer
    when the connection closes or timeout_s passes first. Bodies are framed by Content-Length."""
    sock.settimeout(timeout_s)
    deadline = time.monotonic() + timeout_s
    data, out = b"", []
    while len(out) < count:
        head_end = data.find(b"\r\n\r\n")
        if head_end >= 0:
            lines = data[:head_end].decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
            end = head_end + 4 + int(headers.get("content-length", "0"))
            if len(data) >= end:
                out.append((int(lines[0].split(" ")[1]), headers, data[head_end + 4:end]))
                data = data[end:]
                continue
        if time.monotonic() > deadline:
            break
        try:
            chunk = sock.recv(65536)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return out


def rss_bytes(pid):
    """The resident set of process pid (VmRSS), in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def fail_exit():
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed:", *FAILURES, sep="\n  ")
        sys.exit(1)
    print("all checks passed")
