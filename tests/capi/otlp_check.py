#!/usr/bin/env python3
"""Checks an OTLP/JSON lines file written by brisk (OtlpJsonLinesSink) with OpenTelemetry's own message types: each line
must parse, with no unknown field, as an opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest (PyPI
opentelemetry-proto; scripts/setup installs it into ~/.cache/brisk/otlp). OTLP/JSON writes traceId, spanId and
parentSpanId as hex where protobuf's JSON mapping expects base64 (the specification's JSON Protobuf Encoding), so the
ids are converted first, as an OTLP/JSON receiver does. Then the span tree is checked on the parsed messages.

    otlp_check.py FILE
"""
import base64
import json
import sys

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def hex_ids_to_base64(request: dict) -> dict:
    for resource_spans in request.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for field in ID_FIELDS:
                    if field in span:
                        raw = bytes.fromhex(span[field])
                        span[field] = base64.b64encode(raw).decode()
    return request


def main(path: str) -> int:
    failures = []
    lines = open(path, encoding="utf-8").read().splitlines()
    if not lines:
        failures.append(f"{path} has no lines")
    for number, line in enumerate(lines, 1):
        raw = json.loads(line)
        # OTLP/JSON allows only integer enums (protobuf's JSON mapping would also take their names).
        for rs in raw.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for span in ss.get("spans", []):
                    if not isinstance(span.get("kind"), int) or not isinstance(span.get("status", {}).get("code"), int):
                        failures.append(f"line {number}: {span.get('name')}: kind and status.code must be integers")
        message = ExportTraceServiceRequest()
        json_format.Parse(json.dumps(hex_ids_to_base64(raw)), message, ignore_unknown_fields=False)
        resource = message.resource_spans[0].resource
        service = {kv.key: kv.value.string_value for kv in resource.attributes}.get("service.name")
        spans = [s for rs in message.resource_spans for ss in rs.scope_spans for s in ss.spans]
        request = [s for s in spans if s.name == "brisk.request"]
        if not service:
            failures.append(f"line {number}: no service.name resource attribute")
        if len(request) != 1:
            failures.append(f"line {number}: {len(request)} brisk.request spans; expected 1")
            continue
        root = request[0]
        for s in spans:
            if len(s.trace_id) != 16 or len(s.span_id) != 8:
                failures.append(f"line {number}: {s.name} has a {len(s.trace_id)}-byte trace id, "
                                f"{len(s.span_id)}-byte span id; expected 16 and 8")
            if s.trace_id != root.trace_id:
                failures.append(f"line {number}: {s.name} is in another trace")
            if s.start_time_unix_nano > s.end_time_unix_nano or s.start_time_unix_nano < 10**18:
                failures.append(f"line {number}: {s.name} times {s.start_time_unix_nano}..{s.end_time_unix_nano}")
            if s.kind != Span.SPAN_KIND_INTERNAL:
                failures.append(f"line {number}: {s.name} kind {s.kind}; expected SPAN_KIND_INTERNAL")
            if s is not root and s.parent_span_id != root.span_id:
                failures.append(f"line {number}: {s.name} is not a child of brisk.request")
            if s.status.code == Status.STATUS_CODE_ERROR and not s.status.message:
                failures.append(f"line {number}: {s.name} is an error without a message")
        names = sorted(s.name for s in spans)
        print(f"line {number}: service {service}, {len(spans)} spans: {', '.join(names)}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
