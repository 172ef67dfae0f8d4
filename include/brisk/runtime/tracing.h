// Request tracing, compatible with OpenTelemetry: W3C Trace Context (the `traceparent` header, level 1) in, spans
// out. A Runtime created with RuntimeOptions::span_sink records, for each submit() whose
// EmbedRequestOptions::trace_parent is sampled, a "brisk.request" span (a child of the traceparent's span) and its
// children "brisk.tokenize", "brisk.cache_lookup", "brisk.queue", "brisk.batch_compute" and "brisk.callback", and
// hands them to the sink in one export_spans() call once the request's callback has returned.
//
//   auto sink = brisk::OtlpJsonLinesSink::open("/var/log/brisk/spans.jsonl", {.service_name = "faq-api"});
//   brisk::RuntimeOptions opts;
//   opts.span_sink = std::move(*sink);
//   ...
//   brisk::TraceContext request_span;
//   rt->submit(text, {.trace_parent = req.header("traceparent"), .trace_context_out = &request_span}, done);
//   res.set_header("traceparent", brisk::format_traceparent(request_span));   // names brisk's request span
//
// Times are Unix-epoch nanoseconds: the runtime's steady-clock instants shifted by one system-minus-steady offset
// taken once per process, so the spans of one request never go backwards when the wall clock is adjusted.
//
// Thread safety: the free functions may be called from any thread. A SpanSink is called from the threads that
// complete requests (batcher threads, and submit() callers for cache hits and refused submits), possibly from several
// at once; OtlpJsonLinesSink serialises its writes with a mutex.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"

namespace brisk {

using TraceId = std::array<uint8_t, 16>;
using SpanId = std::array<uint8_t, 8>;

// One W3C trace context: the trace, the span it names (traceparent's parent-id) and the trace flags.
struct TraceContext {
  TraceId trace_id{};
  SpanId span_id{};
  uint8_t flags = 0;
  bool sampled() const { return (flags & 0x01) != 0; }
};

// Parses a traceparent header value (W3C Trace Context level 1, section 3.2). Version 00 must be exactly
// "00-<32 lowercase hex trace-id>-<16 lowercase hex parent-id>-<2 lowercase hex flags>"; an all-zero trace-id or
// parent-id and version ff are invalid. A higher version is read as the spec's forward-compatibility rule says: the
// version 00 fields from its first 55 characters, followed by the end or a '-'. Errors are INVALID_ARGUMENT naming
// the value and what was expected.
BRISK_API StatusOr<TraceContext> parse_traceparent(std::string_view value);
// "00-<trace-id>-<span-id>-<flags>", lowercase.
BRISK_API std::string format_traceparent(const TraceContext& context);
// A new span of context's trace: a fresh random span id, the trace id, and only the sampled flag (the level 1 spec
// defines no other flag, so none is forwarded).
BRISK_API TraceContext child_of(const TraceContext& context);
// A new trace (a caller without an incoming traceparent): random trace and span ids, sampled or not.
BRISK_API TraceContext new_trace(bool sampled = true);
// Random ids from a per-thread generator (seeded from std::random_device); never all zero.
BRISK_API SpanId random_span_id();
BRISK_API TraceId random_trace_id();
// Lowercase hex of bytes.
BRISK_API std::string to_hex(std::span<const uint8_t> bytes);
// A steady-clock instant as Unix-epoch nanoseconds (one offset per process, taken on the first call).
BRISK_API int64_t unix_nanos(std::chrono::steady_clock::time_point t);

enum class SpanStatusCode { kUnset = 0, kOk = 1, kError = 2 };  // OTLP's Status.code values

struct SpanAttribute {
  std::string key;
  std::variant<std::string, int64_t, double, bool> value;
};

struct BRISK_API Span {
  TraceId trace_id{};
  SpanId span_id{};
  SpanId parent_span_id{};  // all zero: a root span
  std::string name;
  int64_t start_unix_nanos = 0;
  int64_t end_unix_nanos = 0;
  SpanStatusCode status = SpanStatusCode::kUnset;
  std::string status_message;  // with kError: why
  std::vector<SpanAttribute> attributes;

  // The attribute named key, or null.
  const SpanAttribute* attribute(std::string_view key) const;
};

// Receives finished spans. export_spans() runs on the thread that completed the request, between that request's
// callback and the next piece of work: it must not block for long (queue the spans, or write them to a buffered file
// as OtlpJsonLinesSink does) and must not call back into the Runtime's destructor. It may be called from several
// threads at once. Exceptions it throws are swallowed. The spans are valid only during the call.
class BRISK_API SpanSink {
 public:
  virtual ~SpanSink();
  virtual void export_spans(std::span<const Span> spans) = 0;
};

struct OtlpJsonOptions {
  std::string service_name = "brisk";  // the resource's service.name attribute
};

// One OTLP/JSON ExportTraceServiceRequest (resourceSpans -> scopeSpans -> spans; ids as lowercase hex, times as
// decimal strings, enums as integers, as the OTLP specification's JSON Protobuf Encoding says), without a newline.
BRISK_API std::string otlp_json(std::span<const Span> spans, const OtlpJsonOptions& options = {});

// Writes each export_spans() call as one otlp_json() line (JSON Lines), flushed per line, so that an OpenTelemetry
// Collector's file receiver (or `jq`) can read the file while it grows.
class BRISK_API OtlpJsonLinesSink : public SpanSink {
 public:
  // Appends to the file at path (created if missing).
  static StatusOr<std::unique_ptr<OtlpJsonLinesSink>> open(const std::string& path, OtlpJsonOptions options = {});
  // Writes to file, which stays the caller's (not closed); it must outlive the sink.
  static std::unique_ptr<OtlpJsonLinesSink> over(std::FILE* file, OtlpJsonOptions options = {});
  ~OtlpJsonLinesSink() override;

  void export_spans(std::span<const Span> spans) override;
  // The first write error, if any (a full disk); OK otherwise. Spans that failed to write are dropped.
  Status status() const;

 private:
  OtlpJsonLinesSink(std::FILE* file, bool owned, OtlpJsonOptions options);
  mutable std::mutex mu_;
  std::FILE* file_;
  bool owned_;
  OtlpJsonOptions options_;
  Status status_;
};

}  // namespace brisk
