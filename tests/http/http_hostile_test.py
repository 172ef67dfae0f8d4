"""The hostile-input run of examples/http_server (issue 30), with raw sockets on loopback and bounded loops:

  - the API key and the length are checked from the head alone, before a byte of the body is read (401, 413; for
    "Expect: 100-continue" too, instead of 100 Continue);
  - ambiguous framing is refused: two different Content-Length headers, Content-Length with Transfer-Encoding, a
    transfer coding other than chunked, no length at all, a head over its cap;
  - chunked bodies are held to --max-body-bytes while they are read;
  - pipelined requests are all answered, in order;
  - idle connections (more than --http-threads) hold no worker: /health answers within 100 ms, a parked connection
    is served when it sends again, and one idle past --keep-alive-s is closed;
  - the server's resident set stays under 2x its idle size plus --max-body-bytes x workers throughout.

  http_hostile_test.py HTTP_SERVER [--big] [--sanitized]

--big sends the issue's sizes (a 512 MiB chunked body, 256 MiB unauthenticated); by default (ctest) 64 MiB each.
--sanitized (an ASan build, whose quarantine keeps freed memory resident) checks only the issue's RSS bound, not
the tighter one on what the run adds.
"""
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import requests

sys.path.insert(0, os.path.dirname(__file__))
from http_harness import (Server, check, fail_exit, metric, raw_request, read_responses,  # noqa: E402
                          read_status, rss_bytes)

MODEL = os.environ.get("BRISK_MODEL_DIR", os.path.expanduser("~/.cache/brisk/models/all-MiniLM-L6-v2"))
KEY = "hostile-test-key"
WORKERS = 4
MAX_BODY = 2 << 20
MIB = 1 << 20


def head(method="POST", path="/embed", key=KEY, extra=""):
    auth = f"Authorization: Bearer {key}\r\n" if key else ""
    return f"{method} {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\n{extra}\r\n"


def status_of_head(port, text, timeout_s=5):
    """The status answered to a request head alone: no body byte is sent."""
    s = raw_request(port, text)
    try:
        return read_status(s, timeout_s)
    except OSError:
        return None
    finally:
        s.close()


def hostile_upload(port, text, total, chunked):
    """Sends the head, then `total` body bytes whatever the server answers (as a hostile client would), while a
    second thread reads the answer. (status or None, bytes sent)."""
    s = raw_request(port, text)
    answer = {}

    def reader():
        try:
            answer["status"] = read_status(s, 30)
        except OSError:
            answer["status"] = None

    t = threading.Thread(target=reader)
    t.start()
    block = b" " * MIB
    frame = (b"%x\r\n" % len(block)) + block + b"\r\n" if chunked else block
    sent = 0
    try:
        while sent < total:
            s.sendall(frame)
            sent += len(block)
        if chunked:
            s.sendall(b"0\r\n\r\n")
    except OSError:
        pass
    t.join(timeout=30)
    s.close()
    return answer.get("status"), sent


class RssSampler:
    """VmRSS of pid every 20 ms while running; .peak is the largest seen."""

    def __init__(self, pid):
        self.pid, self.peak, self.stop = pid, 0, threading.Event()
        self.thread = threading.Thread(target=self.run)

    def run(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, rss_bytes(self.pid))
            time.sleep(0.02)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def test_refused_from_the_head(port):
    big = 256 * MIB
    st = status_of_head(port, head(key=None, extra=f"Content-Length: {big}\r\n"))
    check(st == 401, f"an unauthenticated 256 MiB body is 401 before a byte of it is sent (got {st})")
    st = status_of_head(port, head(key=None, extra="Transfer-Encoding: chunked\r\n"))
    check(st == 401, f"an unauthenticated chunked body is 401 before a chunk is sent (got {st})")
    st = status_of_head(port, head(extra=f"Content-Length: {big}\r\n"))
    check(st == 413, f"a 256 MiB Content-Length is 413 before a byte of it is sent (got {st})")
    st = status_of_head(port, head(extra=f"Content-Length: {big}\r\nExpect: 100-continue\r\n"))
    check(st == 413, f"Expect: 100-continue with an oversize Content-Length is 413, not 100 (got {st})")
    st = status_of_head(port, head(key="wrong", extra="Content-Length: 20\r\nExpect: 100-continue\r\n"))
    check(st == 401, f"Expect: 100-continue with a wrong key is 401, not 100 (got {st})")

    body = b'{"inputs": "hello"}'
    s = raw_request(port, head(extra=f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\n"))
    first = read_responses(s, 1, timeout_s=5)
    s.sendall(body)
    second = read_responses(s, 1, timeout_s=20)
    s.close()
    check([r[0] for r in first + second] == [100, 200],
          f"Expect: 100-continue on a fine request is 100 Continue, then 200 ({[r[0] for r in first + second]})")

    cases = [
        ("Content-Length: 19\r\nContent-Length: 20\r\n", 400, "Content-Length is given twice",
         "two different Content-Length headers"),
        ("Content-Length: 19\r\nTransfer-Encoding: chunked\r\n", 400, "both given",
         "Content-Length with Transfer-Encoding"),
        ("Transfer-Encoding: gzip\r\n", 501, "expected chunked", "a transfer coding other than chunked"),
        ("", 411, "Content-Length is missing", "a POST without a length"),
        ("Content-Length: abc\r\n", 400, "expected a byte count", "a Content-Length that is not a number"),
    ]
    for extra, want, words, what in cases:
        s = raw_request(port, head(extra=extra), body)
        r = read_responses(s, 1, timeout_s=10)
        s.close()
        got = (r[0][0], r[0][2].decode(errors="replace")) if r else (None, "")
        check(got[0] == want and words in got[1] and r[0][1].get("connection") == "close",
              f"{what} is {want} naming it, and the connection closes ({got[0]} {got[1][:90]})")

    s = raw_request(port, head(extra="Content-Length: 19\r\nContent-Length: 19\r\n"), body)
    r = read_responses(s, 1, timeout_s=20)
    s.close()
    check(r and r[0][0] == 200, f"the same Content-Length twice is one length (RFC 9112 6.3) ({r and r[0][0]})")

    filler = "".join(f"X-Filler-{i}: {'a' * 1000}\r\n" for i in range(80))
    st = status_of_head(port, head(extra=filler + "Content-Length: 19\r\n"))
    check(st == 431, f"a request head over 64 KiB is 431 (got {st})")


def test_chunked(port, size):
    body = b'{"inputs": ["chunked", "body"]}'
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 7]), body[i:i + 7]) for i in range(0, len(body), 7))
    s = raw_request(port, head(extra="Transfer-Encoding: chunked\r\n"), chunks + b"0\r\n\r\n")
    r = read_responses(s, 1, timeout_s=20)
    s.close()
    check(r and r[0][0] == 200 and r[0][2].startswith(b"[["), f"a chunked body is read whole ({r and r[0][0]})")

    s = raw_request(port, head(extra="Transfer-Encoding: chunked\r\n"), b"zz\r\nabc\r\n")
    r = read_responses(s, 1, timeout_s=10)
    s.close()
    check(r and r[0][0] == 400 and b"chunked" in r[0][2], f"a malformed chunk size is 400 ({r and r[0][2][:80]})")

    t0 = time.monotonic()
    st, sent = hostile_upload(port, head(extra="Transfer-Encoding: chunked\r\n"), size, chunked=True)
    check(st == 413, f"a {size // MIB} MiB chunked body is 413 while it is read (got {st}, {sent // MIB} MiB sent, "
                     f"{time.monotonic() - t0:.1f} s)")
    st, sent = hostile_upload(port, head(key=None, extra=f"Content-Length: {size // 2}\r\n"), size // 2, chunked=False)
    check(st == 401, f"an unauthenticated {size // 2 // MIB} MiB body is 401 (got {st}, {sent // MIB} MiB sent)")


def test_pipelining(port):
    get = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
    s = raw_request(port, "")
    s.sendall(get * 3)
    r = read_responses(s, 3, timeout_s=3)
    s.close()
    check([x[0] for x in r] == [200] * 3 and all(x[2] == b'{"status":"ok"}' for x in r),
          f"three pipelined GET /health in one send get three answers ({len(r)})")

    body = b'{"inputs": "pipelined"}'
    post = head(extra=f"Content-Length: {len(body)}\r\n").encode() + body
    s = raw_request(port, "")
    s.sendall(post + get + post)
    r = read_responses(s, 3, timeout_s=20)
    s.close()
    check([x[0] for x in r] == [200] * 3 and r[0][2].startswith(b"[[") and r[1][2] == b'{"status":"ok"}' and
          r[2][2] == r[0][2], f"POST, GET, POST pipelined are answered in order ({[x[0] for x in r]})")

    # A refused body is never taken for the next request: the connection closes after the refusal.
    s = raw_request(port, "")
    s.sendall(head(key="wrong", extra=f"Content-Length: {len(get)}\r\n").encode() + get)
    r = read_responses(s, 2, timeout_s=5)
    s.close()
    check([x[0] for x in r] == [401] and r[0][1].get("connection") == "close",
          f"a body refused unread is not served as a request; the connection closes ({[x[0] for x in r]})")


def test_idle_connections(srv):
    idle = [socket.create_connection(("127.0.0.1", srv.port), timeout=10) for _ in range(4 * WORKERS)]
    time.sleep(0.3)
    times = []
    for _ in range(5):
        t = time.monotonic()
        ok = requests.get(f"{srv.url}/health", timeout=10).status_code == 200
        times.append(time.monotonic() - t if ok else 99)
    check(statistics.median(times) < 0.1,
          f"/health answers within 100 ms while {len(idle)} idle connections exceed the {WORKERS} workers "
          f"(median {statistics.median(times) * 1000:.1f} ms)")
    idle[0].sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    t = time.monotonic()
    r = read_responses(idle[0], 1, timeout_s=5)
    check(r and r[0][0] == 200, f"a parked connection is served when its request comes ({r and r[0][0]}, "
                                f"{time.monotonic() - t:.3f} s)")
    time.sleep(3.5)  # past --keep-alive-s 2 and the scan
    idle[1].settimeout(5)
    try:
        closed = idle[1].recv(1) == b""
    except OSError:
        closed = True
    check(closed, "a connection idle past --keep-alive-s is closed")
    m = requests.get(f"{srv.url}/metrics", headers={"Authorization": f"Bearer {KEY}"}).text
    check((metric(m, "brisk_http_idle_connections_closed_total") or 0) >= len(idle) - 1,
          f"idle connections closed are counted ({metric(m, 'brisk_http_idle_connections_closed_total')})")
    for s in idle:
        s.close()


def test_api_key_sources(binary):
    with tempfile.NamedTemporaryFile("w", suffix=".key") as f:
        f.write("from-a-file\n")
        f.flush()
        with Server(binary, ["--model", MODEL, "--api-key-file", f.name]) as srv:
            ok = requests.get(f"{srv.url}/info", headers={"Authorization": "Bearer from-a-file"}).status_code
            bad = requests.get(f"{srv.url}/info").status_code
            check(ok == 200 and bad == 401, f"--api-key-file's first line is the key ({ok}, {bad})")
        p = subprocess.run([binary, "--model", MODEL, "--api-key-file", f.name], capture_output=True, text=True,
                           timeout=60, env={**os.environ, "BRISK_HTTP_API_KEY": "x"})
        check(p.returncode != 0 and "both set" in p.stderr, f"a key from both sources is refused ({p.stderr.strip()})")
    p = subprocess.run([binary, "--model", MODEL, "--api-key", "secret"], capture_output=True, text=True, timeout=60)
    check(p.returncode != 0 and "--api-key" in p.stderr, "a key on the command line is refused")


def main():
    binary = sys.argv[1]
    size = 512 * MIB if "--big" in sys.argv[2:] else 64 * MIB
    args = ["--model", MODEL, "--http-threads", str(WORKERS), "--keep-alive-s", "2", "--threads", "1",
            "--max-body-bytes", str(MAX_BODY)]
    with Server(binary, args, env={"BRISK_HTTP_API_KEY": KEY}) as srv:
        auth = {"Authorization": f"Bearer {KEY}"}
        for _ in range(3):
            requests.post(f"{srv.url}/embed", json={"inputs": ["warm up", "the model"]}, headers=auth)
        idle_rss = rss_bytes(srv.proc.pid)
        with RssSampler(srv.proc.pid) as rss:
            for test in (test_refused_from_the_head, test_pipelining, lambda p: test_chunked(p, size)):
                test(srv.port)
            test_idle_connections(srv)
        bound = 2 * idle_rss + MAX_BODY * WORKERS
        check(rss.peak <= bound, f"peak RSS {rss.peak / MIB:.0f} MiB <= 2 x idle {idle_rss / MIB:.0f} MiB + "
                                 f"--max-body-bytes x {WORKERS} workers = {bound / MIB:.0f} MiB")
        # The bound is loose beside an idle RSS of hundreds of MiB; what a body may add is the real one.
        slack = 32 * MIB
        check("--sanitized" in sys.argv[2:] or rss.peak - idle_rss <= MAX_BODY * WORKERS + slack,
              f"the hostile run adds {(rss.peak - idle_rss) / MIB:.0f} MiB to the idle RSS, at most --max-body-bytes "
              f"x {WORKERS} workers + {slack // MIB} MiB")
        check(requests.get(f"{srv.url}/health").status_code == 200, "the server still answers after all of it")
        check(srv.stop() == 0, "and stops cleanly (exit 0)")
    test_api_key_sources(binary)
    fail_exit()


if __name__ == "__main__":
    main()
