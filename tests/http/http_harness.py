"""Helpers of the HTTP server tests: start examples/http_server on a free loopback port, stop it, talk raw sockets."""
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time

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

    def __init__(self, binary, args, startup_s=60):
        self.proc = subprocess.Popen([binary, "--port", "0", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
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


def fail_exit():
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed:", *FAILURES, sep="\n  ")
        sys.exit(1)
    print("all checks passed")
