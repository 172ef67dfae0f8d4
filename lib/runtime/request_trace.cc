// RequestTrace: one traced submit's spans (request_trace.h).
#include "request_trace.h"

#include "runtime_impl.h"

namespace brisk {

namespace {

Span make_span(const TraceContext& context, const SpanId& id, const SpanId& parent, std::string_view name,
               TimePoint start, TimePoint end, const Status& status) {
  Span span;
  span.trace_id = context.trace_id;
  span.span_id = id;
  span.parent_span_id = parent;
  span.name = std::string(name);
  span.start_unix_nanos = unix_nanos(start);
  span.end_unix_nanos = unix_nanos(end);
  if (!status.ok()) {
    span.status = SpanStatusCode::kError;
    span.status_message = std::string(absl::StatusCodeToString(status.code())) + ": " + std::string(status.message());
  }
  return span;
}

}  // namespace

StatusOr<std::shared_ptr<RequestTrace>> RequestTrace::start(const std::shared_ptr<SpanSink>& sink,
                                                            const EmbedRequestOptions& options, std::string_view call,
                                                            std::string_view task) {
  if (options.trace_parent.empty()) return nullptr;
  const TimePoint now = std::chrono::steady_clock::now();
  StatusOr<TraceContext> parent = parse_traceparent(options.trace_parent);
  if (!parent.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(call), ": ", parent.status().message()));
  }
  if (sink == nullptr || !parent->sampled()) {
    if (options.trace_context_out != nullptr) *options.trace_context_out = *parent;
    return nullptr;
  }
  const TraceContext self = child_of(*parent);
  if (options.trace_context_out != nullptr) *options.trace_context_out = self;
  auto trace = std::make_shared<RequestTrace>(sink, *parent, self, now);
  trace->set_attribute({"brisk.task", std::string(task)});
  trace->set_attribute({"brisk.priority", static_cast<int64_t>(options.priority)});
  return trace;
}

RequestTrace::RequestTrace(std::shared_ptr<SpanSink> sink, const TraceContext& parent, const TraceContext& self,
                           TimePoint start)
    : sink_(std::move(sink)), parent_(parent), self_(self), start_(start) {}

void RequestTrace::add(std::string_view name, TimePoint start, TimePoint end, const Status& status,
                       std::vector<SpanAttribute> attributes) {
  Span span = make_span(self_, random_span_id(), self_.span_id, name, start, end, status);
  span.attributes = std::move(attributes);
  std::lock_guard lock(mu_);
  if (!finished_) spans_.push_back(std::move(span));
}

void RequestTrace::set_attribute(SpanAttribute attribute) {
  std::lock_guard lock(mu_);
  attributes_.push_back(std::move(attribute));
}

void RequestTrace::finish(const Status& status, TimePoint end) {
  std::vector<Span> spans;
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    finished_ = true;
    Span request = make_span(self_, self_.span_id, parent_.span_id, "brisk.request", start_, end, status);
    request.attributes = std::move(attributes_);
    spans = std::move(spans_);
    spans.insert(spans.begin(), std::move(request));
  }
  try {
    sink_->export_spans(spans);
  } catch (...) {  // a sink must not take the completing thread down
  }
}

ResultCallback traced_callback(std::shared_ptr<RequestTrace> trace, ResultCallback done) {
  return [trace = std::move(trace), done = std::move(done)](uint64_t id, StatusOr<std::vector<float>> r,
                                                            AnswerPath path) mutable {
    trace->set_attribute({"brisk.request_id", std::to_string(id)});
    if (r.ok()) trace->set_attribute({"brisk.answer_path", std::string(answer_path_name(path))});
    if (Flights::is_follower_id(id)) trace->set_attribute({"brisk.single_flight", std::string("joined")});
    const Status status = r.status();
    const TimePoint start = std::chrono::steady_clock::now();
    try {
      done(id, std::move(r), path);
    } catch (...) {
      const TimePoint end = std::chrono::steady_clock::now();
      trace->add("brisk.callback", start, end, absl::InternalError("the callback threw"));
      trace->finish(status, end);
      throw;
    }
    const TimePoint end = std::chrono::steady_clock::now();
    trace->add("brisk.callback", start, end, absl::OkStatus());
    trace->finish(status, end);
  };
}

void record_cache_lookup(RequestTrace& trace, TimePoint start, bool hit) {
  trace.add("brisk.cache_lookup", start, std::chrono::steady_clock::now(), absl::OkStatus(),
            {{"brisk.cache", std::string(hit ? "hit" : "miss")}});
}

void record_batch_spans(const batch::BatchInfo& info, std::span<const TaskRequest> requests, TimePoint computed_at,
                        const Status& status) {
  for (size_t i = 0; i < requests.size() && i < info.requests.size(); ++i) {
    RequestTrace* trace = requests[i].trace.get();
    if (trace == nullptr) continue;
    trace->add("brisk.queue", info.requests[i].enqueued_at, info.started_at, absl::OkStatus());
    trace->add("brisk.batch_compute", info.started_at, computed_at, status,
               {{"brisk.batch_size", static_cast<int64_t>(info.shape.size)},
                {"brisk.batch_tokens", static_cast<int64_t>(info.shape.total_cost)},
                {"brisk.batch_sequence", static_cast<int64_t>(info.sequence)},
                {"brisk.tokens", static_cast<int64_t>(info.requests[i].cost)}});
  }
}

}  // namespace brisk
