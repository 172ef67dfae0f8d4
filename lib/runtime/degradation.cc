// Degradation's rules. See degradation.h.
#include "degradation.h"

namespace brisk {

bool fallback_may_answer(const Status& refused) {
  return refused.code() == absl::StatusCode::kResourceExhausted && !batch::is_rate_limited(refused);
}

bool stale_may_answer(const Status& failure) {
  return failure.code() != absl::StatusCode::kCancelled && failure.code() != absl::StatusCode::kInvalidArgument;
}

EmbedRequestOptions fallback_request(const EmbedRequestOptions& request, const batch::BatchPolicy& policy) {
  EmbedRequestOptions to_fallback = request;
  if (to_fallback.timeout == std::chrono::nanoseconds::zero()) {
    to_fallback.timeout = policy.levels[static_cast<size_t>(request.priority)].default_timeout;
  }
  to_fallback.allow_stale = false;
  to_fallback.cache_tags.clear();
  to_fallback.trace_parent.clear();
  to_fallback.trace_context_out = nullptr;
  return to_fallback;
}

AnswerCallback answer_stale_on_failure(AnswerCallback answer, RuntimeCaches& caches, std::vector<int32_t> key) {
  return [&caches, key = std::move(key), next = std::move(answer)](uint64_t id, StatusOr<std::vector<float>> row,
                                                                   AnswerPath path) mutable {
    if (!row.ok() && stale_may_answer(row.status())) {
      if (std::optional<std::vector<float>> stale = caches.lookup_stale(key)) {
        return next(id, std::move(*stale), AnswerPath::kStaleCache);
      }
    }
    next(id, std::move(row), path);
  };
}

}  // namespace brisk
