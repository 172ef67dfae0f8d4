#!/usr/bin/env python3
"""The Python ctypes client's tracing: submit(trace_parent=...) gives the traceparent naming brisk's request span, and
the runtime's otlp_trace_path file holds that request's spans under it; a malformed traceparent raises BriskError.

    python_trace_test.py LIBBRISK
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python"))
from brisk_client import Brisk, BriskError  # noqa: E402

PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def main(lib: str) -> int:
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "spans.jsonl")
        with Brisk(lib, os.environ.get("BRISK_MODEL_DIR", os.path.expanduser("~/.cache/brisk/models/all-MiniLM-L6-v2")),
                   num_threads=2, cache_result_bytes=0, otlp_trace_path=path, otlp_service_name="py-client") as b:
            future = b.submit("how do I reset my card PIN?", trace_parent=PARENT)
            if len(future.result(timeout=60)) != b.dim:
                failures.append("the traced submit's embedding has the wrong width")
            try:
                b.submit("x", trace_parent="00-not-a-traceparent")
                failures.append("a malformed traceparent was accepted")
            except BriskError as e:
                if "traceparent is '00-not-a-traceparent'" not in str(e):
                    failures.append(f"the error does not name the traceparent: {e}")
            untraced = b.submit("no trace")
            untraced.result(timeout=60)
            if untraced.traceparent != "":
                failures.append(f"an untraced submit got traceparent {untraced.traceparent!r}")
        version, trace_id, span_id, flags = future.traceparent.split("-")
        if (version, trace_id, flags) != ("00", "4bf92f3577b34da6a3ce929d0e0e4736", "01") or len(span_id) != 16:
            failures.append(f"traceparent out is {future.traceparent!r}")
        lines = [json.loads(line) for line in open(path, encoding="utf-8")]
        if len(lines) != 1:
            failures.append(f"{len(lines)} OTLP lines; expected 1 (one traced request)")
        else:
            rs = lines[0]["resourceSpans"][0]
            spans = rs["scopeSpans"][0]["spans"]
            service = rs["resource"]["attributes"][0]["value"]["stringValue"]
            request = [s for s in spans if s["name"] == "brisk.request"]
            if service != "py-client" or len(request) != 1 or request[0]["spanId"] != span_id:
                failures.append(f"service {service!r}; request spans {request}; expected one with spanId {span_id}")
            names = sorted(s["name"] for s in spans)
            print(f"traceparent out {future.traceparent}; spans: {', '.join(names)}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
