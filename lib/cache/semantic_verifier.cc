// SemanticCache's verifier calls (brisk/cache/semantic_cache.h, "Verifier"): one timed, counted call of the
// user's scorer that never lets its failures (a status, a non-finite score, an exception) escape.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>

#include "absl/strings/str_cat.h"
#include "semantic_cache_impl.h"

namespace brisk::cache {

namespace {

StatusOr<float> call_verifier(const SemanticVerifier& verifier, const SemanticPair& pair) {
  try {
    return verifier(pair);
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("SemanticCacheOptions.verifier threw: ", e.what(), "; expected it to return a status instead"));
  } catch (...) {
    return absl::InternalError(
        "SemanticCacheOptions.verifier threw a non-standard exception; expected it to return a status instead");
  }
}

}  // namespace

SemanticCache::Impl::Verdict SemanticCache::Impl::verify(const SemanticPair& pair) {
  const auto start = std::chrono::steady_clock::now();
  StatusOr<float> score = call_verifier(options.verifier, pair);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
  verifier_ns.record(static_cast<uint64_t>(std::max<int64_t>(0, ns.count())));
  counters.verifier_calls.fetch_add(1, std::memory_order_relaxed);
  Verdict v;
  if (!score.ok()) {
    v.error =
        Status(score.status().code(), absl::StrCat("SemanticCacheOptions.verifier failed: ", score.status().message()));
  } else if (!std::isfinite(*score)) {
    v.error = absl::InvalidArgumentError(
        absl::StrCat("SemanticCacheOptions.verifier returned ", *score, "; expected a finite score"));
  }
  if (!v.error.ok()) {
    counters.verifier_errors.fetch_add(1, std::memory_order_relaxed);
    return v;
  }
  v.score = *score;
  v.accepted = v.score >= options.verifier_threshold;
  (v.accepted ? counters.verifier_accepted : counters.verifier_rejected).fetch_add(1, std::memory_order_relaxed);
  return v;
}

}  // namespace brisk::cache
