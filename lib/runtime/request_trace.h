// The spans of one traced submit() (brisk/runtime/tracing.h): the submit path records tokenize and cache_lookup, the
// batch function queue and batch_compute, the wrapped callback its own span; then the request span ends and all of
// them go to the runtime's SpanSink in one export_spans() call.
//
// Thread safety: a RequestTrace may be used from the submit thread, the batcher's executor and the completing thread
// (its members lock); finish() exports once, whichever thread calls it first.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "brisk/batch/policy.h"
#include "brisk/core/clock.h"
#include "brisk/runtime/runtime.h"
#include "brisk/runtime/tracing.h"

namespace brisk {

struct TaskRequest;

class RequestTrace {
 public:
  // Parses options.trace_parent (INVALID_ARGUMENT naming `call` and traceparent when malformed) and sets
  // *options.trace_context_out. Null, recording nothing, when there is no traceparent, no sink or it is not sampled.
  static StatusOr<std::shared_ptr<RequestTrace>> start(const std::shared_ptr<SpanSink>& sink,
                                                       const EmbedRequestOptions& options, std::string_view call,
                                                       std::string_view task);

  RequestTrace(std::shared_ptr<SpanSink> sink, const TraceContext& parent, const TraceContext& self, TimePoint start);

  // A child span of the request span.
  void add(std::string_view name, TimePoint start, TimePoint end, const Status& status,
           std::vector<SpanAttribute> attributes = {});
  // An attribute of the request span.
  void set_attribute(SpanAttribute attribute);
  // Ends the request span at `end` with `status` and exports every span; later calls do nothing.
  void finish(const Status& status, TimePoint end);

 private:
  std::shared_ptr<SpanSink> sink_;
  const TraceContext parent_;
  const TraceContext self_;
  const TimePoint start_;
  std::mutex mu_;
  std::vector<Span> spans_;  // the children, then the request span at finish()
  std::vector<SpanAttribute> attributes_;
  bool finished_ = false;
};

using ResultCallback = absl::AnyInvocable<void(uint64_t, StatusOr<std::vector<float>>, AnswerPath)>;

// Wraps a submit's callback: records "brisk.callback" around it and then finishes the trace with the result's
// status and the path that answered, brisk.answer_path (also when the callback throws, which is then rethrown).
ResultCallback traced_callback(std::shared_ptr<RequestTrace> trace, ResultCallback done);

// Tokenizes through `tokenize` (a text's token ids, or a pair's TokenizedInput) and, when traced, records
// "brisk.tokenize" (a failure also finishes the trace).
template <typename Tokenize>
auto traced_tokenize(RequestTrace* trace, Tokenize&& tokenize) -> decltype(tokenize()) {
  if (trace == nullptr) return tokenize();
  const TimePoint start = std::chrono::steady_clock::now();
  auto ids = tokenize();
  const TimePoint end = std::chrono::steady_clock::now();
  std::vector<SpanAttribute> attributes;
  if (ids.ok()) {
    size_t tokens = 0;
    if constexpr (requires { ids->ids; }) {
      tokens = ids->ids.size();
    } else {
      tokens = ids->size();
    }
    attributes.push_back({"brisk.tokens", static_cast<int64_t>(tokens)});
  }
  trace->add("brisk.tokenize", start, end, ids.status(), std::move(attributes));
  if (!ids.ok()) trace->finish(ids.status(), end);
  return ids;
}

// A submit that failed never calls back: its trace ends here with the error.
inline StatusOr<uint64_t> finish_if_refused(RequestTrace* trace, StatusOr<uint64_t> id) {
  if (trace != nullptr && !id.ok()) trace->finish(id.status(), std::chrono::steady_clock::now());
  return id;
}

// "brisk.cache_lookup" with brisk.cache = "hit" or "miss".
void record_cache_lookup(RequestTrace& trace, TimePoint start, bool hit);

// "brisk.queue" (enqueued to the batch's start) and "brisk.batch_compute" (the batch's start to computed_at) for
// each traced request of a batch; requests[i] is info.requests[i].
void record_batch_spans(const batch::BatchInfo& info, std::span<const TaskRequest> requests, TimePoint computed_at,
                        const Status& status);

}  // namespace brisk
