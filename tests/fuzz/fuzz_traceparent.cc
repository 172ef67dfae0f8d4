// libFuzzer target: W3C traceparent values (brisk/runtime/tracing.h) and the OTLP/JSON of a span named by them.
// Invariants: parse_traceparent either fails with INVALID_ARGUMENT, a message that starts with "traceparent is '",
// stays short and has no raw control byte, or gives non-zero ids whose format_traceparent() parses back to the same
// context (and, for version 00, is the input itself); otlp_json() of a span carrying the input as its name and
// attribute is one line (JSON Lines) whatever the bytes.
#include <string>

#include "brisk/runtime/tracing.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view value(reinterpret_cast<const char*>(data), size);
  brisk::StatusOr<brisk::TraceContext> parsed = brisk::parse_traceparent(value);
  if (!parsed.ok()) {
    const std::string message(parsed.status().message());
    if (parsed.status().code() != absl::StatusCode::kInvalidArgument) {
      brisk_fuzz::invariant_failed("an error other than INVALID_ARGUMENT", message);
    }
    if (message.rfind("traceparent is '", 0) != 0) brisk_fuzz::invariant_failed("message prefix", message);
    if (message.size() > 512) brisk_fuzz::invariant_failed("message longer than 512 bytes", message);
    for (char c : message) {
      if (static_cast<unsigned char>(c) < 0x20) brisk_fuzz::invariant_failed("raw control byte in message", message);
    }
  } else {
    if (parsed->trace_id == brisk::TraceId{} || parsed->span_id == brisk::SpanId{}) {
      brisk_fuzz::invariant_failed("accepted an all-zero id", std::string(value));
    }
    const std::string formatted = brisk::format_traceparent(*parsed);
    brisk::StatusOr<brisk::TraceContext> again = brisk::parse_traceparent(formatted);
    if (!again.ok() || again->trace_id != parsed->trace_id || again->span_id != parsed->span_id ||
        again->flags != parsed->flags) {
      brisk_fuzz::invariant_failed("format_traceparent does not parse back", formatted);
    }
    if (value.substr(0, 2) == "00" && formatted != value) {
      brisk_fuzz::invariant_failed("version 00 does not round-trip", formatted);
    }
  }
  brisk::Span span;
  span.trace_id = parsed.ok() ? parsed->trace_id : brisk::TraceId{};
  span.name = std::string(value);
  span.status = brisk::SpanStatusCode::kError;
  span.status_message = std::string(value);
  span.attributes = {{std::string(value), std::string(value)}, {"n", static_cast<int64_t>(size)}};
  const std::string json = brisk::otlp_json({&span, 1});
  if (json.find('\n') != std::string::npos) brisk_fuzz::invariant_failed("OTLP/JSON spans more than one line");
  return 0;
}
