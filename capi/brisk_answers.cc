// The C API's semantic answer cache (brisk.h: brisk_answer_cache_insert / _lookup) over brisk::AnswerCache, and the
// handle that owns it (make_handle).
#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>

#include "brisk_internal.h"

namespace brisk_capi {
namespace {

static_assert(BRISK_LOOKUP_HIT == static_cast<int>(brisk::cache::SemanticMissReason::kHit) &&
                  BRISK_LOOKUP_NO_CANDIDATE == static_cast<int>(brisk::cache::SemanticMissReason::kNoCandidate) &&
                  BRISK_LOOKUP_BELOW_THRESHOLD == static_cast<int>(brisk::cache::SemanticMissReason::kBelowThreshold) &&
                  BRISK_LOOKUP_REJECTED_BY_GUARD ==
                      static_cast<int>(brisk::cache::SemanticMissReason::kRejectedByGuard) &&
                  BRISK_LOOKUP_EXPIRED == static_cast<int>(brisk::cache::SemanticMissReason::kExpired) &&
                  BRISK_LOOKUP_INVALID == static_cast<int>(brisk::cache::SemanticMissReason::kInvalidInput) &&
                  BRISK_LOOKUP_REJECTED_BY_VERIFIER ==
                      static_cast<int>(brisk::cache::SemanticMissReason::kRejectedByVerifier),
              "brisk_lookup_reason values are SemanticMissReason's");

std::string_view tenant_of(const char* tenant) {
  return tenant == nullptr || tenant[0] == '\0' ? std::string_view("default") : std::string_view(tenant);
}

// The handle's answer cache, or BRISK_FAILED_PRECONDITION naming the options that make one.
brisk_status answers_of(const char* function, brisk_runtime* runtime, const brisk::AnswerCache** out) {
  if (runtime == nullptr) return null_argument(function, "runtime");
  if (runtime->answers == nullptr) {
    return fail(BRISK_FAILED_PRECONDITION,
                std::string(function) +
                    ": the runtime has no answer cache; expected brisk_runtime_options.answer_cache = 1 or "
                    "semantic_verifier at brisk_runtime_create");
  }
  *out = runtime->answers.get();
  return BRISK_OK;
}

}  // namespace

brisk_status make_handle(const char* function, const brisk_runtime_options* options,
                         std::unique_ptr<brisk::Runtime> runtime, brisk_runtime** out) {
  auto handle = std::make_unique<brisk_runtime>(std::move(runtime));
  brisk_runtime_options o = over_defaults(*options, brisk_runtime_options_init);
  // answer_cache sits in what was the tail padding of 0.8's struct (after redis_allow_unsigned): a caller built
  // against 0.8 passes struct_size offsetof(semantic_verifier), and those four bytes are whatever its stack held.
  if (options->struct_size <= offsetof(brisk_runtime_options, semantic_verifier)) o.answer_cache = 0;
  const auto bad = [&](const char* field, int64_t value, const char* expected) {
    return fail(BRISK_INVALID_ARGUMENT, std::string(function) + ": options->" + field + " is " + std::to_string(value) +
                                            "; expected " + expected);
  };
  if (o.answer_cache != 0 && o.answer_cache != 1) return bad("answer_cache", o.answer_cache, "0 or 1");
  if (o.answer_cache_entries < 0) {
    return bad("answer_cache_entries", o.answer_cache_entries, ">= 0 (0: 10000 per tenant)");
  }
  const bool verifier = o.semantic_verifier != nullptr && o.semantic_verifier[0] != '\0';
  if (o.answer_cache == 1 || verifier) {
    brisk::AnswerCacheOptions ao;
    if (o.answer_cache_entries > 0) ao.semantic.max_entries = static_cast<size_t>(o.answer_cache_entries);
    if (verifier) ao.verifier_path = o.semantic_verifier;
    auto answers = brisk::AnswerCache::create(*handle->runtime, std::move(ao));
    if (!answers.ok()) {
      return fail(code_of(answers.status()), std::string(function) + ": " + std::string(answers.status().message()));
    }
    handle->answers = std::move(*answers);
  }
  *out = handle.release();
  return BRISK_OK;
}

}  // namespace brisk_capi

using namespace brisk_capi;

extern "C" {

brisk_status brisk_answer_cache_insert(brisk_runtime* runtime, const char* tenant, const char* question,
                                       const char* answer, int64_t ttl_ms) {
  constexpr const char* kFn = "brisk_answer_cache_insert";
  return guarded(kFn, [&]() -> brisk_status {
    const brisk::AnswerCache* answers = nullptr;
    if (brisk_status s = answers_of(kFn, runtime, &answers); s != BRISK_OK) return s;
    if (question == nullptr) return null_argument(kFn, "question");
    if (answer == nullptr) return null_argument(kFn, "answer");
    const int64_t max_ms = std::chrono::duration_cast<std::chrono::milliseconds>(brisk::kMaxCacheTtl).count();
    if (ttl_ms < 0 || ttl_ms > max_ms) {
      return fail(BRISK_INVALID_ARGUMENT, std::string(kFn) + ": ttl_ms is " + std::to_string(ttl_ms) +
                                              "; expected 0 (one hour) to " + std::to_string(max_ms) + " (366 days)");
    }
    brisk::cache::PutOptions put;
    put.ttl = std::chrono::milliseconds(ttl_ms);
    return from_status(answers->insert(tenant_of(tenant), question, answer, put));
  });
}

brisk_status brisk_answer_cache_lookup(brisk_runtime* runtime, const char* tenant, const char* question,
                                       brisk_answer_cache_result* result, char* answer, size_t answer_len) {
  constexpr const char* kFn = "brisk_answer_cache_lookup";
  return guarded(kFn, [&]() -> brisk_status {
    if (result == nullptr) return null_argument(kFn, "result");
    std::memset(result, 0, sizeof *result);
    result->reason = BRISK_LOOKUP_INVALID;
    const brisk::AnswerCache* answers = nullptr;
    if (brisk_status s = answers_of(kFn, runtime, &answers); s != BRISK_OK) return s;
    if (question == nullptr) return null_argument(kFn, "question");
    auto found = answers->lookup(tenant_of(tenant), question);
    if (!found.ok()) return from_status(found.status());
    result->reason = static_cast<int32_t>(found->reason);
    result->similarity = found->similarity;
    result->verified = found->verified ? 1 : 0;
    result->verifier_score = found->verifier_score;
    if (!found->hit) return BRISK_OK;
    result->answer_size = found->answer.size() + 1;
    if (answer_len < result->answer_size) {
      return fail(BRISK_OUT_OF_RANGE, std::string(kFn) + ": answer_len is " + std::to_string(answer_len) +
                                          " bytes; the answer needs " + std::to_string(result->answer_size) +
                                          " (NUL included)");
    }
    if (answer == nullptr) return null_argument(kFn, "answer");
    std::memcpy(answer, found->answer.c_str(), result->answer_size);
    result->hit = 1;
    return BRISK_OK;
  });
}

}  // extern "C"
