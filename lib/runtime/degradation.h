// Degradation: what answers a submitted request that the model cannot answer. Internal to lib/runtime; the rules
// live here, once, and RuntimeImpl::submit_input applies them in this order:
//   1. the fallback model (RuntimeOptions::fallback), for a request the model's queue refuses for overload;
//   2. a stale copy from the result cache, for a request that allows one (EmbedRequestOptions::allow_stale), when
//      the model refuses it or its answer fails.
//
// Thread safety: pure functions, and callbacks that are called once, from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "brisk/batch/policy.h"
#include "brisk/core/status.h"
#include "brisk/runtime/runtime.h"
#include "runtime_cache.h"
#include "runtime_impl.h"

namespace brisk {

// Overload, not a quota: the queue is full or predicts the request late. A rate-limited request is not rerouted.
bool fallback_may_answer(const Status& refused);

// What the model failing means for a request that allows a stale answer: anything but the caller's own doing (a
// cancel) or a bad request.
bool stale_may_answer(const Status& failure);

// The request as the fallback model gets it: the deadline this runtime would have held it to (its own, else its
// level's default), no stale answers (this runtime's stale copies answer a failed fallback too), no cache tags (the
// fallback's results are not cached) and no trace (the request's trace is this runtime's).
EmbedRequestOptions fallback_request(const EmbedRequestOptions& request, const batch::BatchPolicy& policy);

// `answer` wrapped so that a failed answer that stale_may_answer() is replaced by the stale copy of `key` (answered
// as AnswerPath::kStaleCache), when the result cache still holds one.
AnswerCallback answer_stale_on_failure(AnswerCallback answer, RuntimeCaches& caches, std::vector<int32_t> key);

}  // namespace brisk
