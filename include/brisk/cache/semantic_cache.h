// SemanticCache: a nearest-question cache. An answer computed for "How do I reset my online banking
// password?" is returned for "I forgot my internet banking password, how can I change it?" when the two
// questions' sentence embeddings are close (cosine >= threshold) AND every false-hit guard accepts the pair
// (brisk/cache/semantic_guards.h: negation and antonyms, numbers, entities and direction). Cosine alone
// cannot tell "enable" from "disable" or "500" from "5000"; the guards can.
//
//   brisk::cache::SemanticCacheOptions opts;
//   opts.dim = 384;                                          // all-MiniLM-L6-v2
//   BRISK_ASSIGN_OR_RETURN(auto cache, brisk::cache::SemanticCache::create(opts));
//   BRISK_ASSIGN_OR_RETURN(std::vector<float> e, runtime->embed(texts));   // one row per question
//   SemanticLookup r = cache->lookup("acme", question, e);
//   if (r.hit) return r.answer;
//   std::string answer = compute(question);
//   BRISK_RETURN_IF_ERROR(cache->insert("acme", question, e, answer, {.ttl = std::chrono::minutes(10),
//                                                                      .tags = {"faq:v7"}}));
//   cache->invalidate_tag("faq:v7");                         // the knowledge base changed
//
// Index: one hnswlib HierarchicalNSW (inner product on L2-normalised vectors = cosine) per tenant. Tenants are
// a hard partition: a lookup searches its own tenant's index only, so another tenant's entries are never
// seen, even with identical embeddings. lookup() checks the `candidates` nearest entries, most similar first,
// and returns the first that is at or above the threshold, not expired, and accepted by every guard.
//
// Verifier (optional): a second, more precise scorer of a question pair (a cross-encoder, or any callback)
// that must confirm a candidate before it is served. With SemanticCacheOptions::verifier set, lookup() checks
// the same `candidates` nearest entries, most similar first, down to the cosine floor (verifier_cosine_floor,
// default: threshold); each that is unexpired and passes every guard is handed to the verifier, in order, and
// the first whose score is >= verifier_threshold is served. So a lookup calls the verifier at most
// `candidates` times, and stops at the first acceptance. A rejected candidate lets the lookup go on to the next;
// a verifier error (a non-OK status, a NaN or infinite score, a thrown exception) rejects that candidate and
// is counted, never propagated. A floor below the threshold lets the verifier recover paraphrases whose cosine
// alone would miss; the guards still veto before the verifier is asked. Miss reasons: kBelowThreshold when the
// nearest entry is below the floor; kRejectedByVerifier when the nearest decisive candidate (unexpired, passed
// the guards) was refused by the verifier. Stats: verifier calls, acceptances, rejections, errors and a
// latency histogram. Every served candidate is verified, an exact repeat of a cached question included.
//
//   opts.verifier = [&](const SemanticPair& p) -> StatusOr<float> {
//     return cross_encoder->score(p.incoming, p.cached);    // e.g. a probability in [0, 1]
//   };
//   opts.verifier_threshold = 0.5f;                          // on the verifier's own scale
//   opts.verifier_cosine_floor = 0.6f;                       // candidates from cosine 0.6 (threshold: 0.72)
//
// Entries: (embedding, normalised question, answer, tags, expiry). Re-inserting a question with the same
// question_key() (case-folded, trailing ?.! dropped) replaces its entry in place. Removal (erase, tag
// invalidation, expiry, eviction) marks the hnswlib element deleted; the next insert reuses that slot (hnswlib
// 0.6 has no replace_deleted: re-adding a deleted label un-deletes it and rewires its links to the new
// vector), so an index never holds more than max_entries elements.
// Expiry: every entry expires (default_ttl unless the insert gives one); expired entries are never returned,
// and are removed lazily: by the lookup that meets them, by an insert at capacity, or by purge_expired().
// Eviction: at max_entries a tenant first drops its expired entries, then the least recently used one
// (last hit or insert). Finding it scans the tenant's entries: O(max_entries), only on inserts at capacity.
//
// Persistence: save() writes one file: a versioned header (magic, version, dim, entry count, payload size,
// XXH64 of the payload), the embedding model's id and the entries with their remaining TTL, least recently used
// first; load() checks every length against the file size and rebuilds the indexes by re-inserting, so a hostile
// file can give wrong answers at worst, never plant a bad graph. Truncated, corrupt, mismatched-dim files and
// files of another embedding model (SemanticCacheOptions::embedding_model_id) are errors naming the file.
//
// Thread safety: every member may be called from any thread at once. Per tenant, lookups share a reader
// lock (they run concurrently); insert, erase, invalidate_tag, purge_expired and expired-entry removal take
// it exclusively. Guards run under the reader lock and must be thread-safe. The verifier runs with NO lock
// held (a slow scorer never stalls inserts): lookup() copies the candidates' questions and embeddings out under
// the reader lock, releases it, calls the verifier, and takes the reader lock again to serve an accepted candidate only
// if it is still the same live entry (one removed or replaced meanwhile is skipped, as if it had not been
// found). The verifier is called from every looking-up thread at once and must be thread-safe (it may call
// this cache: no lock is held). save() snapshots one tenant at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "brisk/cache/cache.h"
#include "brisk/cache/semantic_guards.h"
#include "brisk/core/clock.h"
#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/metrics/histogram.h"

namespace brisk::cache {

// Per-entry options of insert(): PutOptions of brisk/cache/cache.h. ttl > 0: the entry expires ttl after the
// insert; 0: SemanticCacheOptions::default_ttl. tags: invalidate_tag(t) removes every entry carrying t.
using SemanticPutOptions = PutOptions;

// What a verifier sees of one candidate: the two questions (normalised as the cache stores them: NFC, trimmed,
// inner whitespace collapsed) and their L2-normalised embeddings (dim floats each), so that a verifier can score
// the pair without another forward pass. Valid for the duration of the call only.
struct SemanticPair {
  std::string_view incoming{};
  std::string_view cached{};
  std::span<const float> incoming_embedding{};
  std::span<const float> cached_embedding{};
  float cosine = 0.0f;  // the index's similarity of the two embeddings
};

// Scores a pair of questions; higher means more likely the same question. Any scale: verifier_threshold is on it.
using SemanticVerifier = std::function<StatusOr<float>(const SemanticPair& pair)>;

struct SemanticCacheOptions {
  size_t dim = 0;  // required: embedding length (384 for all-MiniLM-L6-v2)
  // Cosine at or above which a neighbour is a candidate hit. 0.72 is calibrated for all-MiniLM-L6-v2 with
  // the default guards on shared/data/semantic_pairs.tsv (benchmarks/semantic_quality.cc, results in
  // benchmarks/results_parts/semantic.md): the best F0.5 (precision weighted twice: a wrong answer costs more
  // than a model call) of a whole-cache run, precision 0.82 at recall 0.52. Best F1 would be 0.50 (precision
  // 0.62); zero false hits would need 0.95 (recall 0). Recalibrate for another model: cosine scales differ.
  float threshold = 0.72f;
  // HNSW graph: M links per node (2M on the base layer), ef_construction candidates while inserting,
  // ef_search while searching (raised to `candidates` if lower). M = 16 and ef_construction = 200 are
  // hnswlib's recommended values; a cache holds far fewer entries than an ANN corpus, so more links buy
  // nothing. ef_search = 64: with 5000 random 384-d entries, a query near an entry (cosine ~0.9, the only
  // kind that can hit) found it in 100% of probes at 64, 99.9% at 32, 99.4% at 16; a lookup costs ~0.15 ms.
  int M = 16;
  int ef_construction = 200;
  int ef_search = 64;
  size_t max_entries = 10000;  // per tenant; beyond it the least recently used entry is evicted
  // Tenants with an index (created by their first insert, kept until the cache goes, even when their entries are
  // gone). An insert that would create one more is RESOURCE_EXHAUSTED naming the limit (admit_tenant), so that a
  // caller choosing tenant names (an HTTP client) cannot grow the cache past max_tenants x max_entries entries.
  size_t max_tenants = 1024;
  // Every entry expires (GPTCache has no default TTL; answers go stale). Duration::max(): never.
  Duration default_ttl = std::chrono::hours(1);
  std::shared_ptr<Clock> clock;  // null: SteadyClock
  // Checked in order on each candidate; the first that rejects names the miss. Empty: cosine only.
  std::vector<std::shared_ptr<const SemanticGuard>> guards = default_semantic_guards();
  int candidates = 4;  // nearest neighbours checked per lookup, most similar first
  // The embedding model whose vectors the entries hold (brisk::Runtime::embedding_model_id(); AnswerCache sets it).
  // save() records it, and load() with it set refuses a file recorded for another model or for none: another
  // model's vectors, even of the same width, would find the wrong neighbours and serve their answers. "": not
  // checked (load() takes any file of this dim). At most 4096 bytes.
  std::string embedding_model_id;

  // Optional second opinion (see "Verifier" above). Empty: cosine and guards decide alone.
  SemanticVerifier verifier;
  // A candidate is served when verifier(...) >= verifier_threshold. On the VERIFIER's own scale (a
  // cross-encoder's probability, a logit, a callback's score), not a cosine; any finite value.
  float verifier_threshold = 0.5f;
  // With a verifier: the cosine at or above which neighbours are candidates (in [-1, threshold]); unset: the
  // threshold. Lower it to let the verifier recover paraphrases below the threshold. Requires a verifier.
  std::optional<float> verifier_cosine_floor;

  Status validate() const;  // InvalidArgument naming the bad field
};

enum class SemanticMissReason : uint8_t {
  kHit = 0,             // not a miss
  kNoCandidate,         // the tenant has no entries (or, with a verifier, those accepted were removed meanwhile)
  kBelowThreshold,      // the nearest entry's cosine is below the threshold (with a verifier: below the floor)
  kRejectedByGuard,     // the nearest entry at or above the threshold was vetoed by `guard`
  kExpired,             // the nearest entry at or above the threshold had expired
  kInvalidInput,        // bad embedding or question: see `error`
  kRejectedByVerifier,  // the nearest candidate that passed the guards was refused (or failed) by the verifier
};
BRISK_API std::string_view to_string(SemanticMissReason reason);

struct SemanticLookup {
  bool hit = false;
  SemanticMissReason reason = SemanticMissReason::kNoCandidate;
  std::string answer;           // on a hit
  float similarity = 0;         // cosine of the returned entry, or of the entry the reason is about
  std::string cached_question;  // the (normalised) question of that entry
  std::string guard;            // kRejectedByGuard: the guard's name
  Status error;                 // kInvalidInput: what was wrong; kRejectedByVerifier: the verifier's error, if any
  bool verified = false;        // a verifier scored the returned entry (a hit) or the one the reason is about
  float verifier_score = 0;     // that score (when verified and the verifier did not fail)
  explicit operator bool() const { return hit; }
};

struct SemanticCacheStats {
  uint64_t lookups = 0, hits = 0, misses = 0;
  // misses by reason (they add up to misses)
  uint64_t no_candidate = 0, below_threshold = 0, rejected = 0, expired = 0, invalid = 0, rejected_by_verifier = 0;
  // every candidate a guard vetoed (a lookup may veto several), by guard name, in options order
  std::vector<std::pair<std::string, uint64_t>> rejections_by_guard;
  uint64_t inserts = 0, replacements = 0;  // replacements: re-inserts of a question already cached
  uint64_t expirations = 0, evictions = 0, invalidations = 0, erasures = 0;  // entries removed, by cause
  uint64_t entries = 0, tenants = 0;
  // Verifier calls (a lookup may make several): calls = accepted + rejected + errors. Errors are failed calls
  // (non-OK status, non-finite score, exception), each also a rejection of its candidate.
  uint64_t verifier_calls = 0, verifier_accepted = 0, verifier_rejected = 0, verifier_errors = 0;
  metrics::HistogramSnapshot verifier_latency_ns;  // wall time of each verifier call, in nanoseconds
  double hit_rate() const { return lookups == 0 ? 0.0 : double(hits) / double(lookups); }
};

class BRISK_API SemanticCache {
 public:
  static StatusOr<std::unique_ptr<SemanticCache>> create(SemanticCacheOptions options);
  // Reads a file written by save(); `options.dim` must match the file's, and `options.embedding_model_id`, when
  // set, the model the file records (FAILED_PRECONDITION naming both otherwise). Entries whose remaining TTL has
  // run out are skipped; per-tenant capacity applies (the most recently used entries are kept).
  static StatusOr<std::unique_ptr<SemanticCache>> load(const std::string& path, SemanticCacheOptions options);
  ~SemanticCache();
  SemanticCache(const SemanticCache&) = delete;
  SemanticCache& operator=(const SemanticCache&) = delete;

  // Stores `answer` for `question` (UTF-8) in `tenant`. InvalidArgument for an embedding that is not dim
  // floats, has a NaN/Inf or is all zeros, for a question that is empty or not UTF-8, or for ttl < 0.
  Status insert(std::string_view tenant, std::string_view question, std::span<const float> embedding,
                std::string answer, const PutOptions& options = {});
  // OK when `tenant` has an index or one more fits under options().max_tenants; else the RESOURCE_EXHAUSTED an
  // insert into it returns, which lasts as long as the cache (tenants are never dropped). A caller that pays for the
  // embedding (AnswerCache) asks first.
  Status admit_tenant(std::string_view tenant) const;
  // The cached answer for the nearest acceptable question, or why there is none. Never blocks on other
  // lookups; waits for an insert into the same tenant.
  SemanticLookup lookup(std::string_view tenant, std::string_view question, std::span<const float> embedding);

  bool erase(std::string_view tenant, std::string_view question);  // true when an entry was removed
  size_t invalidate_tag(std::string_view tag);                     // entries removed, all tenants
  size_t purge_expired();                                          // expired entries removed, all tenants
  size_t size(std::string_view tenant) const;                      // live entries (expired ones included
                                                                   // until removed)
  size_t size() const;                                             // all tenants
  SemanticCacheStats stats() const;
  const SemanticCacheOptions& options() const;

  // Writes every unexpired entry to `path` (through a temporary file renamed into place).
  Status save(const std::string& path) const;

  struct Impl;  // defined in lib/cache/semantic_cache.cc

 private:
  explicit SemanticCache(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace brisk::cache
