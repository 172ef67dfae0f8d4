// AnswerCache: the runtime's semantic answer cache. It stores an answer per question and serves it to a later
// question that asks the same thing in other words: the runtime embeds the incoming question (its result cache in
// front, so a repeated question costs no forward pass), the semantic cache (brisk/cache/semantic_cache.h) finds the
// nearest stored questions, and a learned pair verifier (brisk/runtime/pair_verifier.h, `brisk fit-verifier`)
// decides whether the stored answer answers it. Without a verifier file, cosine and the default guards decide.
//
//   brisk::AnswerCacheOptions ao;
//   ao.verifier_path = "verifier.safetensors";          // fitted for rt's model; another model's is refused
//   BRISK_ASSIGN_OR_RETURN(auto answers, brisk::AnswerCache::create(*rt, ao));
//   BRISK_RETURN_IF_ERROR(answers->insert("bank", "How do I close my account?", "Visit a branch with your ID."));
//   BRISK_ASSIGN_OR_RETURN(brisk::cache::SemanticLookup r, answers->lookup("bank", "how can I shut my account"));
//   if (r.hit) serve(r.answer);                          // else: answer it, then insert() the answer
//
// A verifier file makes the cache ask the verifier about each candidate from cosine
// AnswerCacheOptions::verifier_cosine_floor on, serving the first it scores at or above the file's threshold (its
// calibrated point), and drops the guards in front of it: the verifier weighs their verdicts among its features,
// and as vetoes they cost it recall at the same precision (benchmarks/RESULTS.md, "Learned pair verifier"). The
// verifier's calls, verdicts and latency are in stats() (SemanticCacheStats::verifier_*).
//
// Thread safety: every member may be called from any thread at once (SemanticCache's and Runtime::embed's
// guarantees). The Runtime must outlive the AnswerCache.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "brisk/cache/semantic_cache.h"
#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/runtime/pair_verifier.h"
#include "brisk/runtime/runtime.h"

namespace brisk {

// Candidates from this cosine on are the pair verifier's: below the semantic cache's default threshold (0.72), so
// that the verifier can recover paraphrases that cosine alone would miss.
inline constexpr float kPairVerifierCosineFloor = 0.5f;

// Makes `options` ask `verifier` about every candidate from `cosine_floor` on, at the verifier's calibrated
// threshold, with the guards removed (see the top).
BRISK_API void use_pair_verifier(const PairVerifier& verifier, cache::SemanticCacheOptions& options,
                                 float cosine_floor = kPairVerifierCosineFloor);

struct AnswerCacheOptions {
  // The semantic cache's options. dim: 0 takes the runtime's embedding width; any other value must equal it.
  // embedding_model_id: "" takes the runtime's embedding_model_id() (recorded by semantic_cache().save()); any
  // other value must equal it.
  cache::SemanticCacheOptions semantic;
  // A verifier file written by `brisk fit-verifier` for the runtime's model (its recorded model id must be the
  // runtime's embedding_model_id()). "": none (semantic.verifier, if set, decides instead). Setting both is an error.
  std::string verifier_path;
  float verifier_cosine_floor = kPairVerifierCosineFloor;  // with verifier_path; in [-1, semantic.threshold]
};

class BRISK_API AnswerCache {
 public:
  // InvalidArgument when the runtime does not embed (a classification model) or an option is bad; the verifier
  // file's errors (unreadable, hostile, another model's) name the file.
  static StatusOr<std::unique_ptr<AnswerCache>> create(const Runtime& runtime, AnswerCacheOptions options);
  ~AnswerCache();
  AnswerCache(const AnswerCache&) = delete;
  AnswerCache& operator=(const AnswerCache&) = delete;

  // The stored answer for the nearest acceptable question of `tenant`, or why there is none (SemanticLookup's
  // reason). An error only when the question cannot be embedded (empty, invalid UTF-8, the model failed).
  StatusOr<cache::SemanticLookup> lookup(std::string_view tenant, std::string_view question) const;
  // Stores `answer` for `question` in `tenant` (SemanticCache::insert: a question already stored is replaced).
  Status insert(std::string_view tenant, std::string_view question, std::string answer,
                const cache::PutOptions& options = {}) const;

  cache::SemanticCache& semantic_cache() const;  // erase, invalidate_tag, purge_expired, save, size
  cache::SemanticCacheStats stats() const;
  // stats() as Prometheus text (cache::write_prometheus of a SemanticCacheStats): brisk_answer_cache_lookups_total
  // {result=...}, _verifier_calls_total{result=...}, the _verifier_seconds summary, _entries, ...
  std::string metrics_prometheus() const;
  bool has_verifier() const;  // a verifier (file or callback) decides
  // The loaded verifier file's calibrated threshold and target precision; 0 without a verifier file.
  float verifier_threshold() const;
  float verifier_target_precision() const;

 private:
  struct Impl;
  explicit AnswerCache(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace brisk
