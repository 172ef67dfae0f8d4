// SemanticCache on synthetic embeddings (unit vectors with a chosen cosine between them): threshold, guards,
// tenants, TTL, eviction with slot reuse, replacement, tags, persistence and hostile files, bad arguments,
// concurrency. One test runs the real model.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "brisk/cache/semantic_cache.h"
#include "brisk/runtime/runtime.h"
#include "test_util.h"

#if defined(__SANITIZE_THREAD__)
// hnswlib's insert locks the link lists of several graph nodes in data-dependent order. SemanticCache never runs
// two inserts on one index at once (its per-tenant lock is exclusive), so the cycles ThreadSanitizer's deadlock
// detector infers from them cannot happen. Weak, so that another test file's suppressions can take over.
extern "C" __attribute__((weak)) const char* __tsan_default_suppressions() {
  return "deadlock:hnswlib::HierarchicalNSW\n";
}
#endif

namespace {

using namespace brisk::cache;
using brisk::ManualClock;
using brisk::testing::TempDir;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

constexpr size_t kDim = 16;

std::vector<float> basis(size_t i, float scale = 1.0f) {
  std::vector<float> v(kDim, 0.0f);
  v[i % kDim] = scale;
  return v;
}

// A unit vector whose cosine with basis(i) is `cosine` (and with basis(j) is sqrt(1 - cosine^2)).
std::vector<float> near(size_t i, size_t j, float cosine) {
  std::vector<float> v(kDim, 0.0f);
  v[i] = cosine;
  v[j] = std::sqrt(1.0f - cosine * cosine);
  return v;
}

SemanticCacheOptions options(std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>()) {
  SemanticCacheOptions o;
  o.dim = kDim;
  o.threshold = 0.8f;
  o.clock = std::move(clock);
  return o;
}

std::unique_ptr<SemanticCache> make(SemanticCacheOptions o) {
  auto c = SemanticCache::create(std::move(o));
  REQUIRE(c.ok());
  return std::move(*c);
}

bool contains(absl::string_view haystack, std::string_view needle) {
  return std::string_view(haystack.data(), haystack.size()).find(needle) != std::string_view::npos;
}

PutOptions with_ttl(brisk::Duration ttl) {
  PutOptions o;
  o.ttl = ttl;
  return o;
}

}  // namespace

TEST_CASE("semantic cache options are validated", "[cache][semantic]") {
  auto bad = [](auto edit, std::string_view field) {
    SemanticCacheOptions o = options();
    edit(o);
    auto c = SemanticCache::create(o);
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().code() == absl::StatusCode::kInvalidArgument);
    INFO(c.status().message());
    CHECK(contains(c.status().message(), field));
  };
  bad([](SemanticCacheOptions& o) { o.dim = 0; }, "dim");
  bad([](SemanticCacheOptions& o) { o.threshold = 1.5f; }, "threshold");
  bad([](SemanticCacheOptions& o) { o.threshold = NAN; }, "threshold");
  bad([](SemanticCacheOptions& o) { o.M = 1; }, "M is");
  bad([](SemanticCacheOptions& o) { o.ef_search = 0; }, "ef_search");
  bad([](SemanticCacheOptions& o) { o.ef_construction = 0; }, "ef_construction");
  bad([](SemanticCacheOptions& o) { o.max_entries = 0; }, "max_entries");
  bad([](SemanticCacheOptions& o) { o.max_tenants = 0; }, "max_tenants");
  bad([](SemanticCacheOptions& o) { o.default_ttl = brisk::Duration::zero(); }, "default_ttl");
  bad([](SemanticCacheOptions& o) { o.candidates = 0; }, "candidates");
  bad([](SemanticCacheOptions& o) { o.guards.push_back(nullptr); }, "guards[3]");
  SemanticCacheOptions defaults;
  CHECK(defaults.guards.size() == 3);
  CHECK(defaults.default_ttl == hours(1));
}

TEST_CASE("semantic cache hits at or above the threshold only", "[cache][semantic]") {
  auto cache = make(options());
  REQUIRE(cache->insert("t", "How do I reset my PIN?", basis(0), "Use the app.").ok());
  CHECK(cache->size("t") == 1);

  SemanticLookup exact = cache->lookup("t", "How do I reset my PIN?", basis(0, 3.0f));  // scale does not matter
  REQUIRE(exact.hit);
  CHECK(exact.answer == "Use the app.");
  CHECK(exact.similarity == Approx(1.0f).margin(1e-5));
  CHECK(exact.cached_question == "How do I reset my PIN?");

  SemanticLookup close = cache->lookup("t", "How can I change my PIN?", near(0, 1, 0.85f));
  REQUIRE(close.hit);
  CHECK(close.similarity == Approx(0.85f).margin(1e-4));

  SemanticLookup far = cache->lookup("t", "How can I change my PIN?", near(0, 1, 0.75f));
  CHECK_FALSE(far.hit);
  CHECK(far.reason == SemanticMissReason::kBelowThreshold);
  CHECK(far.similarity == Approx(0.75f).margin(1e-4));
  CHECK(far.cached_question == "How do I reset my PIN?");

  SemanticLookup other = cache->lookup("nobody", "How do I reset my PIN?", basis(0));
  CHECK(other.reason == SemanticMissReason::kNoCandidate);

  auto s = cache->stats();
  CHECK(s.lookups == 4);
  CHECK(s.hits == 2);
  CHECK(s.misses == 2);
  CHECK(s.below_threshold == 1);
  CHECK(s.no_candidate == 1);
  CHECK(s.inserts == 1);
  CHECK(s.hit_rate() == Approx(0.5));
}

TEST_CASE("semantic cache guards veto close but different questions", "[cache][semantic]") {
  auto cache = make(options());
  REQUIRE(cache->insert("t", "How do I enable notifications?", basis(0), "Settings > On").ok());
  SemanticLookup r = cache->lookup("t", "How do I disable notifications?", basis(0));
  CHECK_FALSE(r.hit);
  CHECK(r.reason == SemanticMissReason::kRejectedByGuard);
  CHECK(r.guard == "polarity");
  CHECK(r.cached_question == "How do I enable notifications?");
  CHECK(r.answer.empty());

  REQUIRE(cache->insert("t", "Can I withdraw 500 dollars?", basis(1), "yes").ok());
  CHECK(cache->lookup("t", "Can I withdraw 5000 dollars?", basis(1)).guard == "number");
  REQUIRE(cache->insert("t", "Do you ship to Canada?", basis(2), "yes").ok());
  CHECK(cache->lookup("t", "Do you ship to Australia?", basis(2)).guard == "entity");

  auto s = cache->stats();
  CHECK(s.rejected == 3);
  REQUIRE(s.rejections_by_guard.size() == 3);
  CHECK(s.rejections_by_guard[0] == std::pair<std::string, uint64_t>{"polarity", 1});
  CHECK(s.rejections_by_guard[1] == std::pair<std::string, uint64_t>{"number", 1});
  CHECK(s.rejections_by_guard[2] == std::pair<std::string, uint64_t>{"entity", 1});

  // Without guards (GPTCache-style cosine only) the same lookup is a false hit.
  SemanticCacheOptions o = options();
  o.guards.clear();
  auto plain = make(o);
  REQUIRE(plain->insert("t", "How do I enable notifications?", basis(0), "Settings > On").ok());
  CHECK(plain->lookup("t", "How do I disable notifications?", basis(0)).hit);
}

TEST_CASE("semantic cache falls through a vetoed neighbour to the next candidate", "[cache][semantic]") {
  auto cache = make(options());
  REQUIRE(cache->insert("t", "Is the branch open on Sunday?", basis(0), "open").ok());
  REQUIRE(cache->insert("t", "Is the branch shut on Sunday?", near(0, 1, 0.9f), "shut").ok());
  SemanticLookup r = cache->lookup("t", "Is the branch closed on Sunday?", basis(0));
  REQUIRE(r.hit);
  CHECK(r.answer == "shut");
  CHECK(r.similarity == Approx(0.9f).margin(1e-4));
  CHECK(cache->stats().rejections_by_guard[0].second == 1);  // the nearer entry was vetoed first

  SemanticCacheOptions o = options();
  o.candidates = 1;  // only the nearest is considered
  auto one = make(o);
  REQUIRE(one->insert("t", "Is the branch open on Sunday?", basis(0), "open").ok());
  REQUIRE(one->insert("t", "Is the branch shut on Sunday?", near(0, 1, 0.9f), "shut").ok());
  CHECK(one->lookup("t", "Is the branch closed on Sunday?", basis(0)).reason == SemanticMissReason::kRejectedByGuard);
}

TEST_CASE("semantic cache tenants are a hard partition", "[cache][semantic]") {
  auto cache = make(options());
  REQUIRE(cache->insert("acme", "What is the refund policy?", basis(0), "acme: 30 days").ok());
  SemanticLookup r = cache->lookup("globex", "What is the refund policy?", basis(0));
  CHECK_FALSE(r.hit);
  CHECK(r.reason == SemanticMissReason::kNoCandidate);

  REQUIRE(cache->insert("globex", "Where is the office?", basis(5), "globex: Springfield").ok());
  r = cache->lookup("globex", "What is the refund policy?", basis(0));  // identical embedding to acme's entry
  CHECK_FALSE(r.hit);
  CHECK(r.reason == SemanticMissReason::kBelowThreshold);
  CHECK(r.cached_question == "Where is the office?");

  REQUIRE(cache->insert("globex", "What is the refund policy?", basis(0), "globex: 14 days").ok());
  CHECK(cache->lookup("acme", "What is the refund policy?", basis(0)).answer == "acme: 30 days");
  CHECK(cache->lookup("globex", "What is the refund policy?", basis(0)).answer == "globex: 14 days");
  CHECK(cache->size("acme") == 1);
  CHECK(cache->size("globex") == 2);
  CHECK(cache->size() == 3);
  CHECK(cache->stats().tenants == 2);
  CHECK(cache->erase("acme", "What is the refund policy?"));
  CHECK(cache->lookup("globex", "What is the refund policy?", basis(0)).hit);
}

TEST_CASE("semantic cache refuses a tenant past max_tenants, naming the limit", "[cache][semantic]") {
  SemanticCacheOptions o = options();
  o.max_tenants = 2;
  auto cache = make(o);
  REQUIRE(cache->insert("acme", "What is the refund policy?", basis(0), "30 days").ok());
  REQUIRE(cache->insert("globex", "What is the refund policy?", basis(0), "14 days").ok());
  const brisk::Status third = cache->insert("initech\n", "What is the refund policy?", basis(0), "none");
  REQUIRE(third.code() == absl::StatusCode::kResourceExhausted);
  INFO(third.message());
  CHECK(contains(third.message(), "tenant 'initech?' would be tenant 3; expected at most max_tenants (2)"));
  CHECK(cache->admit_tenant("initech").code() == absl::StatusCode::kResourceExhausted);
  CHECK(cache->admit_tenant("acme").ok());
  // The tenants there keep working, and a lookup for an unknown tenant creates none.
  REQUIRE(cache->insert("acme", "Where is the office?", basis(5), "Springfield").ok());
  CHECK_FALSE(cache->lookup("initech", "What is the refund policy?", basis(0)).hit);
  CHECK(cache->stats().tenants == 2);
  CHECK(cache->size() == 3);
}

TEST_CASE("semantic cache entries expire", "[cache][semantic]") {
  auto clock = std::make_shared<ManualClock>();
  auto cache = make(options(clock));
  REQUIRE(cache->insert("t", "short lived", basis(0), "a", with_ttl(seconds(10))).ok());
  REQUIRE(cache->insert("t", "default ttl", basis(1), "b").ok());  // default_ttl: 1 hour
  clock->advance(seconds(9));
  CHECK(cache->lookup("t", "short lived", basis(0)).hit);
  clock->advance(seconds(2));
  SemanticLookup r = cache->lookup("t", "short lived", basis(0));
  CHECK_FALSE(r.hit);
  CHECK(r.reason == SemanticMissReason::kExpired);
  CHECK(r.cached_question == "short lived");
  CHECK(cache->size("t") == 1);  // the lookup removed it
  CHECK(cache->stats().expirations == 1);
  CHECK(cache->lookup("t", "short lived", basis(0)).reason == SemanticMissReason::kBelowThreshold);

  clock->advance(minutes(58));
  CHECK(cache->lookup("t", "default ttl", basis(1)).hit);
  clock->advance(minutes(2));
  CHECK(cache->purge_expired() == 1);
  CHECK(cache->size("t") == 0);
  CHECK(cache->lookup("t", "default ttl", basis(1)).reason == SemanticMissReason::kNoCandidate);

  CHECK(cache->insert("t", "forever", basis(2), "c", with_ttl(brisk::Duration::max())).ok());
  clock->advance(hours(24 * 365));
  CHECK(cache->lookup("t", "forever", basis(2)).hit);
  CHECK(cache->insert("t", "x", basis(3), "d", with_ttl(seconds(-1))).code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("semantic cache evicts the least recently used entry and reuses its slot", "[cache][semantic]") {
  auto clock = std::make_shared<ManualClock>();
  SemanticCacheOptions o = options(clock);
  o.max_entries = 3;
  auto cache = make(o);
  for (size_t i = 0; i < 3; ++i) REQUIRE(cache->insert("t", "q" + std::to_string(i), basis(i), "a").ok());
  CHECK(cache->lookup("t", "q0", basis(0)).hit);  // q1 is now the least recently used
  REQUIRE(cache->insert("t", "q3", basis(3), "a").ok());
  CHECK(cache->size("t") == 3);
  CHECK(cache->stats().evictions == 1);
  CHECK_FALSE(cache->lookup("t", "q1", basis(1)).hit);
  CHECK(cache->lookup("t", "q0", basis(0)).hit);
  CHECK(cache->lookup("t", "q2", basis(2)).hit);
  CHECK(cache->lookup("t", "q3", basis(3)).hit);

  // Expired entries go before live ones.
  REQUIRE(cache->insert("t", "q4", basis(4), "a", with_ttl(seconds(1))).ok());  // evicts q0 (LRU)
  CHECK(cache->lookup("t", "q4", basis(4)).hit);
  clock->advance(seconds(2));
  uint64_t evictions = cache->stats().evictions;
  REQUIRE(cache->insert("t", "q5", basis(5), "a").ok());
  CHECK(cache->stats().evictions == evictions);  // q4 expired: no live entry was evicted
  CHECK(cache->lookup("t", "q2", basis(2)).hit);
  CHECK(cache->lookup("t", "q3", basis(3)).hit);
  CHECK(cache->lookup("t", "q5", basis(5)).hit);

  // The HNSW index holds max_entries elements at most: a thousand inserts only work if slots are reused.
  for (int i = 0; i < 1000; ++i) {
    std::vector<float> v = near(i % kDim, (i + 1) % kDim, 0.5f + 0.0004f * float(i % 1000));
    REQUIRE(cache->insert("t", "round " + std::to_string(i), v, std::to_string(i)).ok());
  }
  CHECK(cache->size("t") == 3);
  std::vector<float> last = near(999 % kDim, 1000 % kDim, 0.5f + 0.0004f * 999);
  SemanticLookup r = cache->lookup("t", "round 999", last);
  REQUIRE(r.hit);
  CHECK(r.answer == "999");
}

TEST_CASE("semantic cache re-insert of the same question replaces it", "[cache][semantic]") {
  auto cache = make(options());
  REQUIRE(cache->insert("t", "How do I reset my PIN?", basis(0), "old", {.tags = {"v1"}}).ok());
  REQUIRE(cache->insert("t", "  how do I reset my pin ", basis(1), "new", {.tags = {"v2"}}).ok());
  CHECK(cache->size("t") == 1);
  SemanticLookup r = cache->lookup("t", "How do I reset my PIN?", basis(1));
  REQUIRE(r.hit);
  CHECK(r.answer == "new");
  CHECK(r.cached_question == "how do I reset my pin");
  CHECK_FALSE(cache->lookup("t", "How do I reset my PIN?", basis(0)).hit);  // the old vector is gone
  CHECK(cache->invalidate_tag("v1") == 0);                                  // and its tags
  auto s = cache->stats();
  CHECK(s.inserts == 1);
  CHECK(s.replacements == 1);
  CHECK(cache->invalidate_tag("v2") == 1);
}

TEST_CASE("semantic cache invalidates by tag across tenants", "[cache][semantic]") {
  auto cache = make(options());
  REQUIRE(cache->insert("a", "q0", basis(0), "x", {.tags = {"faq:v1"}}).ok());
  REQUIRE(cache->insert("a", "q1", basis(1), "x", {.tags = {"faq:v1", "promo", "faq:v1"}}).ok());
  REQUIRE(cache->insert("b", "q2", basis(2), "x", {.tags = {"promo"}}).ok());
  REQUIRE(cache->insert("b", "q3", basis(3), "x", {.tags = {"faq:v1"}}).ok());
  CHECK(cache->invalidate_tag("faq:v1") == 3);
  CHECK(cache->size("a") == 0);
  CHECK(cache->size("b") == 1);
  CHECK_FALSE(cache->lookup("a", "q0", basis(0)).hit);
  CHECK(cache->lookup("b", "q2", basis(2)).hit);
  CHECK(cache->invalidate_tag("promo") == 1);
  CHECK(cache->invalidate_tag("promo") == 0);
  CHECK(cache->invalidate_tag("none") == 0);
  CHECK(cache->stats().invalidations == 4);
  REQUIRE(cache->insert("a", "q4", basis(4), "y").ok());  // slots freed by invalidation are reused
  CHECK(cache->lookup("a", "q4", basis(4)).answer == "y");
  CHECK(cache->erase("a", "q4"));
  CHECK_FALSE(cache->erase("a", "q4"));
  CHECK_FALSE(cache->erase("zzz", "q4"));
  CHECK(cache->stats().erasures == 1);
}

TEST_CASE("semantic cache rejects bad arguments with clear errors", "[cache][semantic]") {
  auto cache = make(options());
  auto insert_error = [&](std::string_view q, std::vector<float> e) {
    brisk::Status st = cache->insert("t", q, e, "a");
    CHECK(st.code() == absl::StatusCode::kInvalidArgument);
    return std::string(st.message());
  };
  CHECK(contains(insert_error("q", std::vector<float>(kDim + 1, 1.0f)), "expected dim = 16"));
  CHECK(contains(insert_error("q", std::vector<float>{}), "has 0 floats"));
  std::vector<float> nan = basis(0);
  nan[3] = NAN;
  CHECK(contains(insert_error("q", nan), "embedding[3]"));
  std::vector<float> inf = basis(0);
  inf[0] = INFINITY;
  CHECK(contains(insert_error("q", inf), "finite"));
  CHECK(contains(insert_error("q", std::vector<float>(kDim, 0.0f)), "zero norm"));
  CHECK(contains(insert_error("bad \xC3\x28 utf8", basis(0)), "UTF-8"));
  CHECK(contains(insert_error(" \t ", basis(0)), "empty"));
  CHECK(cache->size() == 0);

  SemanticLookup r = cache->lookup("t", "q", std::vector<float>(3, 1.0f));
  CHECK(r.reason == SemanticMissReason::kInvalidInput);
  CHECK(contains(r.error.message(), "expected dim"));
  CHECK(cache->lookup("t", "q\xFF", basis(0)).reason == SemanticMissReason::kInvalidInput);
  CHECK(cache->stats().invalid == 2);
  CHECK(to_string(SemanticMissReason::kRejectedByGuard) == "rejected by guard");
}

TEST_CASE("semantic cache saves and loads its entries", "[cache][semantic]") {
  TempDir dir;
  auto clock = std::make_shared<ManualClock>();
  auto cache = make(options(clock));
  REQUIRE(cache->insert("a", "How do I reset my PIN?", basis(0), "Use the app.", {.tags = {"faq"}}).ok());
  REQUIRE(cache->insert("a", "Short lived?", basis(1), "soon gone", with_ttl(seconds(30))).ok());
  REQUIRE(cache->insert("b", "Où est l'agence ?", basis(2), "Rue de la Paix", with_ttl(brisk::Duration::max())).ok());
  REQUIRE(cache->insert("b", "gone", basis(3), "x", with_ttl(seconds(1))).ok());
  clock->advance(seconds(2));  // "gone" has expired: not saved
  const std::string path = dir.file("semantic.bin");
  REQUIRE(cache->save(path).ok());

  auto loaded = SemanticCache::load(path, options(clock));
  REQUIRE(loaded.ok());
  auto& c = **loaded;
  CHECK(c.size("a") == 2);
  CHECK(c.size("b") == 1);
  CHECK(c.lookup("a", "How do I reset my PIN?", basis(0)).answer == "Use the app.");
  CHECK(c.lookup("b", "Où est l'agence ?", basis(2)).answer == "Rue de la Paix");
  CHECK(c.lookup("b", "How do I reset my PIN?", basis(0)).reason == SemanticMissReason::kBelowThreshold);
  CHECK(c.stats().inserts == 0);  // restoring is not traffic
  clock->advance(seconds(29));    // "Short lived?" had 28 s left when saved
  CHECK(c.lookup("a", "Short lived?", basis(1)).reason == SemanticMissReason::kExpired);
  CHECK(c.invalidate_tag("faq") == 1);
  clock->advance(hours(1000));
  CHECK(c.lookup("b", "Où est l'agence ?", basis(2)).hit);

  SemanticCacheOptions other_dim = options(clock);
  other_dim.dim = 32;
  auto mismatch = SemanticCache::load(path, other_dim);
  REQUIRE_FALSE(mismatch.ok());
  CHECK(contains(mismatch.status().message(), path));
  CHECK(contains(mismatch.status().message(), "dim 16"));
  // The file records the embedding model (here none): a cache for a named model refuses it.
  SemanticCacheOptions named = options(clock);
  named.embedding_model_id = "minilm-l6-0123";
  auto unrecorded = SemanticCache::load(path, named);
  REQUIRE_FALSE(unrecorded.ok());
  CHECK(unrecorded.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(contains(unrecorded.status().message(), "an unrecorded model; expected model 'minilm-l6-0123'"));
  auto missing = SemanticCache::load(dir.file("nope.bin"), options(clock));
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(contains(missing.status().message(), "nope.bin"));
  CHECK_FALSE(cache->save(dir.file("no/such/dir/x.bin")).ok());
}

TEST_CASE("semantic cache files load for the embedding model they were saved for only", "[cache][semantic]") {
  TempDir dir;
  SemanticCacheOptions a = options();
  a.embedding_model_id = "minilm-l6-0123-mean-n";
  auto cache = make(a);
  REQUIRE(cache->insert("t", "How do I reset my PIN?", basis(0), "Use the app.").ok());
  const std::string path = dir.file("a.bin");
  REQUIRE(cache->save(path).ok());

  REQUIRE(SemanticCache::load(path, a).ok());
  SemanticCacheOptions b = options();
  b.embedding_model_id = "e5-small-4567-mean-n";  // the same width, another model
  auto refused = SemanticCache::load(path, b);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(contains(refused.status().message(), path));
  CHECK(contains(refused.status().message(),
                 "embeddings of model 'minilm-l6-0123-mean-n'; expected model 'e5-small-4567-mean-n'"));

  // Unchecked when no model is named; the file's id is kept by the next save.
  auto unchecked = SemanticCache::load(path, options());
  REQUIRE(unchecked.ok());
  CHECK((*unchecked)->options().embedding_model_id == "minilm-l6-0123-mean-n");
  const std::string again = dir.file("again.bin");
  REQUIRE((*unchecked)->save(again).ok());
  CHECK_FALSE(SemanticCache::load(again, b).ok());
  CHECK(SemanticCache::load(again, a).ok());

  SemanticCacheOptions huge = options();
  huge.embedding_model_id = std::string(4097, 'm');
  CHECK(contains(SemanticCache::create(huge).status().message(), "embedding_model_id is 4097 bytes"));
}

TEST_CASE("semantic cache load refuses every truncated or corrupted file", "[cache][semantic]") {
  TempDir dir;
  auto cache = make(options());
  REQUIRE(cache->insert("a", "How do I reset my PIN?", basis(0), "Use the app.", {.tags = {"faq", "x"}}).ok());
  REQUIRE(cache->insert("b", "Where is the branch?", basis(1), "Main St").ok());
  const std::string good = dir.file("good.bin");
  REQUIRE(cache->save(good).ok());
  std::ifstream in(good, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() > 40);
  const std::string bad = dir.file("bad.bin");
  auto load_bytes = [&](const std::string& content) {
    std::ofstream(bad, std::ios::binary | std::ios::trunc) << content;
    return SemanticCache::load(bad, options());
  };
  REQUIRE(load_bytes(bytes).ok());

  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = load_bytes(bytes.substr(0, n));
    INFO("truncated to " << n << " bytes");
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.status().message(), "bad.bin"));
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (unsigned char flip : {0x01, 0x80, 0xFF}) {
      std::string corrupt = bytes;
      corrupt[i] = static_cast<char>(corrupt[i] ^ flip);
      auto r = load_bytes(corrupt);
      INFO("byte " << i << " ^ " << int(flip));
      REQUIRE_FALSE(r.ok());
      CHECK(contains(r.status().message(), "bad.bin"));
    }
  }
  CHECK_FALSE(load_bytes(bytes + "x").ok());  // trailing garbage

  // Hostile files with a valid checksum: huge lengths, counts and bad values must be refused, not allocated.
  // Version 1 (no model id before the entries): files from before version 2 still load.
  auto forge = [&](uint64_t count, const std::string& payload, uint32_t version = 1) {
    std::string f(bytes.substr(0, 16));  // magic, version, dim
    std::memcpy(f.data() + 8, &version, 4);
    auto put64 = [&](uint64_t v) { f.append(reinterpret_cast<const char*>(&v), 8); };
    put64(count);
    put64(payload.size());
    put64(XXH64(payload.data(), payload.size(), 0));
    return f + payload;
  };
  auto u32 = [](uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); };
  auto i64 = [](int64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); };
  auto floats = [](std::vector<float> v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4); };
  std::string entry = u32(1) + "t" + u32(1) + "q" + u32(1) + "a" + u32(0) + i64(1000000000) + floats(basis(0));
  REQUIRE(load_bytes(forge(1, entry)).ok());
  CHECK_FALSE(load_bytes(forge(1000000000000ULL, entry)).ok());                                      // count cannot fit
  CHECK_FALSE(load_bytes(forge(1, u32(0xFFFFFFFF) + entry.substr(4))).ok());                         // tenant length
  CHECK_FALSE(load_bytes(forge(1, entry.substr(0, 15) + u32(0x7FFFFFFF) + entry.substr(19))).ok());  // tags
  std::vector<float> nan = basis(0);
  nan[0] = NAN;
  auto r = load_bytes(forge(1, u32(1) + "t" + u32(1) + "q" + u32(1) + "a" + u32(0) + i64(1000000000) + floats(nan)));
  REQUIRE_FALSE(r.ok());
  CHECK(contains(r.status().message(), "entry 0"));
  CHECK_FALSE(load_bytes(forge(1, u32(1) + "t" + u32(2) + "\xFF\xFE" + u32(1) + "a" + u32(0) + i64(1000000000) +
                                      floats(basis(0))))
                  .ok());                                 // invalid UTF-8 question
  REQUIRE(load_bytes(forge(1, u32(0) + entry, 2)).ok());  // version 2: the model id (here none) first
  CHECK(contains(load_bytes(forge(1, u32(0xFFFFFFFF) + entry, 2)).status().message(), "truncated embedding model id"));
  CHECK(contains(load_bytes(forge(0, u32(4097) + std::string(4097, 'm'), 2)).status().message(),
                 "embedding model id of 4097 bytes; expected at most 4096"));
  std::string v3 = bytes;
  v3[8] = 3;
  CHECK(contains(load_bytes(v3).status().message(), "version 3; this build reads versions 1 and 2"));
}

TEST_CASE("semantic cache serves concurrent lookups and inserts", "[cache][semantic][concurrency]") {
  SemanticCacheOptions o = options(std::make_shared<ManualClock>());
  o.max_entries = 64;
  auto cache = make(o);
  const int kOps = 400;
  std::atomic<int> hits{0}, failures{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < kOps; ++i) {
        std::vector<float> v = brisk::testing::random_floats(kDim, -1, 1, uint32_t(w * 100000 + i));
        std::string tenant = (i % 2) ? "odd" : "even";
        brisk::Status st = cache->insert(tenant, "question " + std::to_string(i % 100), v, "answer",
                                         {.tags = {i % 7 == 0 ? "seven" : "other"}});
        if (!st.ok()) failures.fetch_add(1);  // Catch2 assertions are not thread-safe: count, check after
      }
    });
  }
  for (int rd = 0; rd < 2; ++rd) {
    threads.emplace_back([&, rd] {
      for (int i = 0; i < kOps; ++i) {
        std::vector<float> v = brisk::testing::random_floats(kDim, -1, 1, uint32_t(i));  // writer 0's vectors
        SemanticLookup r = cache->lookup((i % 2) ? "odd" : "even", "question " + std::to_string(i % 100), v);
        if (r.hit) hits.fetch_add(1);
        if (r.reason == SemanticMissReason::kInvalidInput) failures.fetch_add(1);
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 50; ++i) {
      cache->invalidate_tag("seven");
      cache->erase("odd", "question " + std::to_string(i));
      cache->purge_expired();
      (void)cache->stats();
      std::this_thread::yield();
    }
  });
  for (auto& t : threads) t.join();
  CHECK(failures.load() == 0);
  CHECK(cache->size("odd") <= 64);
  CHECK(cache->size("even") <= 64);
  auto s = cache->stats();
  CHECK(s.lookups == 2 * kOps);
  CHECK(s.hits == uint64_t(hits.load()));
  CHECK(s.hits + s.misses == s.lookups);
  CHECK(s.inserts + s.replacements == 2 * kOps);
}

TEST_CASE("semantic cache with the real model: paraphrase hits, variants are vetoed", "[cache][semantic][model]") {
  const auto dir = brisk::testing::model_dir();
  INFO(dir << " is missing: run scripts/setup");
  REQUIRE(std::filesystem::exists(dir / "config.json"));
  brisk::RuntimeOptions ro;
  ro.model_dir = dir.string();
  ro.num_threads = brisk::testing::compute_threads();
  auto rt = brisk::Runtime::create(ro);
  REQUIRE(rt.ok());
  const std::vector<std::string_view> texts = {
      "How do I turn on push notifications?",           // 0 cached
      "How can I switch on push notifications?",        // 1 paraphrase of 0
      "How do I turn off push notifications?",          // 2 polarity variant of 0
      "Can I take out 300 euros per day at the ATM?",   // 3 cached
      "Can I take out 3000 euros per day at the ATM?",  // 4 number variant of 3
      "Do you deliver parcels to Germany?",             // 5 cached
      "Do you deliver parcels to Brazil?",              // 6 entity variant of 5
  };
  auto emb = (*rt)->embed(texts);
  REQUIRE(emb.ok());
  const size_t d = size_t((*rt)->embedding_dim());
  auto row = [&](size_t i) { return std::span<const float>(emb->data() + i * d, d); };

  SemanticCacheOptions o;
  o.dim = d;
  auto cache = make(o);
  for (size_t i : {0, 3, 5}) REQUIRE(cache->insert("t", texts[i], row(i), "answer " + std::to_string(i)).ok());

  SemanticLookup para = cache->lookup("t", texts[1], row(1));
  INFO("paraphrase cosine " << para.similarity);
  CHECK(para.hit);
  CHECK(para.answer == "answer 0");
  struct Variant {
    size_t index;
    const char* guard;
  };
  for (Variant v : {Variant{2, "polarity"}, Variant{4, "number"}, Variant{6, "entity"}}) {
    SemanticLookup r = cache->lookup("t", texts[v.index], row(v.index));
    INFO(texts[v.index] << ": cosine " << r.similarity << ", " << to_string(r.reason));
    CHECK_FALSE(r.hit);
    if (r.similarity >= o.threshold) {
      CHECK(r.reason == SemanticMissReason::kRejectedByGuard);
      CHECK(r.guard == v.guard);
    }
  }
  // Cosine alone would have returned at least one of these wrong answers.
  SemanticCacheOptions cosine_only = o;
  cosine_only.guards.clear();
  auto plain = make(cosine_only);
  for (size_t i : {0, 3, 5}) REQUIRE(plain->insert("t", texts[i], row(i), "answer " + std::to_string(i)).ok());
  int false_hits = 0;
  for (size_t i : {2, 4, 6}) false_hits += plain->lookup("t", texts[i], row(i)).hit ? 1 : 0;
  CHECK(false_hits >= 1);
}
