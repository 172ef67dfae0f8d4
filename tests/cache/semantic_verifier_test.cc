// SemanticCache's verifier hook on synthetic embeddings (unit vectors with a chosen cosine): a verifier that
// refuses turns a hit into a miss and one that accepts keeps it, refusals fall through to the next candidate
// (at most `candidates` calls), the cosine floor lets the verifier recover pairs below the threshold, guards
// veto first, failures (status, NaN, exception) are counted misses, latency is recorded, the verifier runs
// with no lock held (it may call the cache; an entry removed meanwhile is not served), options are validated,
// and concurrent lookups with a verifier keep consistent stats.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "brisk/cache/cache_metrics.h"
#include "brisk/cache/semantic_cache.h"
#include "test_util.h"

#if defined(__SANITIZE_THREAD__)
// As in semantic_cache_test.cc: hnswlib's insert locks link lists in data-dependent order, under the cache's
// exclusive per-tenant lock, so the lock-order cycles ThreadSanitizer infers cannot happen.
extern "C" __attribute__((weak)) const char* __tsan_default_suppressions() {
  return "deadlock:hnswlib::HierarchicalNSW\n";
}
#endif

namespace {

using namespace brisk::cache;
using brisk::ManualClock;
using brisk::StatusOr;
using namespace std::chrono_literals;

constexpr size_t kDim = 16;

std::vector<float> basis(size_t i) {
  std::vector<float> v(kDim, 0.0f);
  v[i % kDim] = 1.0f;
  return v;
}

// A unit vector whose cosine with basis(i) is `cosine` (and with basis(j) is sqrt(1 - cosine^2)).
std::vector<float> near(size_t i, size_t j, float cosine) {
  std::vector<float> v(kDim, 0.0f);
  v[i] = cosine;
  v[j] = std::sqrt(1.0f - cosine * cosine);
  return v;
}

// Threshold 0.8 and no guards unless a test asks for them: these tests are about the verifier.
SemanticCacheOptions options(SemanticVerifier verifier) {
  SemanticCacheOptions o;
  o.dim = kDim;
  o.threshold = 0.8f;
  o.clock = std::make_shared<ManualClock>();
  o.guards.clear();
  o.verifier = std::move(verifier);
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

// A verifier that scores each cached question from a table (default 0) and records what it was asked.
struct TableVerifier {
  explicit TableVerifier(std::vector<std::pair<std::string, float>> s = {}) : scores(std::move(s)) {}
  std::vector<std::pair<std::string, float>> scores;
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> asked;  // (incoming, cached)
  SemanticVerifier fn() {
    return [this](const SemanticPair& pair) -> StatusOr<float> {
      std::lock_guard<std::mutex> lock(mu);
      asked.emplace_back(pair.incoming, pair.cached);
      for (const auto& [q, s] : scores)
        if (q == pair.cached) return s;
      return 0.0f;
    };
  }
};

}  // namespace

TEST_CASE("semantic verifier: a refusal turns a hit into a miss, an acceptance keeps it",
          "[cache][semantic][verifier]") {
  TableVerifier accept{{{"How do I reset my PIN?", 0.9f}}};
  auto yes = make(options(accept.fn()));
  REQUIRE(yes->insert("t", "How do I reset my PIN?", basis(0), "Use the app.").ok());
  SemanticLookup hit = yes->lookup("t", "  How can I   change my PIN? ", near(0, 1, 0.9f));
  REQUIRE(hit.hit);
  CHECK(hit.answer == "Use the app.");
  CHECK(hit.verified);
  CHECK(hit.verifier_score == 0.9f);
  CHECK(hit.similarity == Approx(0.9f).margin(1e-4));
  REQUIRE(accept.asked.size() == 1);
  // Both questions as the cache normalises them (trimmed, inner whitespace collapsed).
  CHECK(accept.asked[0] == std::pair<std::string, std::string>("How can I change my PIN?", "How do I reset my PIN?"));

  TableVerifier refuse{{{"How do I reset my PIN?", 0.2f}}};
  auto no = make(options(refuse.fn()));
  REQUIRE(no->insert("t", "How do I reset my PIN?", basis(0), "Use the app.").ok());
  SemanticLookup miss = no->lookup("t", "How can I change my PIN?", near(0, 1, 0.9f));
  CHECK_FALSE(miss.hit);
  CHECK(miss.answer.empty());
  CHECK(miss.reason == SemanticMissReason::kRejectedByVerifier);
  CHECK(miss.verified);
  CHECK(miss.verifier_score == 0.2f);
  CHECK(miss.error.ok());
  CHECK(miss.cached_question == "How do I reset my PIN?");
  CHECK(miss.similarity == Approx(0.9f).margin(1e-4));
  CHECK(to_string(miss.reason) == "rejected by verifier");

  // The threshold is on the verifier's scale and inclusive: a score equal to it is accepted.
  SemanticCacheOptions o = options(refuse.fn());
  o.verifier_threshold = 0.2f;
  auto equal = make(o);
  REQUIRE(equal->insert("t", "How do I reset my PIN?", basis(0), "Use the app.").ok());
  CHECK(equal->lookup("t", "How can I change my PIN?", near(0, 1, 0.9f)).hit);

  auto s = no->stats();
  CHECK(s.lookups == 1);
  CHECK(s.misses == 1);
  CHECK(s.rejected_by_verifier == 1);
  CHECK(s.verifier_calls == 1);
  CHECK(s.verifier_rejected == 1);
  CHECK(s.verifier_accepted == 0);
  CHECK(yes->stats().verifier_accepted == 1);
  CHECK(yes->stats().hits == 1);
}

TEST_CASE("semantic verifier: a refused candidate falls through to the next, at most `candidates` calls",
          "[cache][semantic][verifier]") {
  TableVerifier v{{{"second question", 0.7f}}};
  auto cache = make(options(v.fn()));
  REQUIRE(cache->insert("t", "first question", basis(0), "first").ok());
  REQUIRE(cache->insert("t", "second question", near(0, 1, 0.9f), "second").ok());
  REQUIRE(cache->insert("t", "third question", near(0, 2, 0.85f), "third").ok());
  SemanticLookup r = cache->lookup("t", "incoming question", basis(0));
  REQUIRE(r.hit);
  CHECK(r.answer == "second");
  CHECK(r.verifier_score == 0.7f);
  REQUIRE(v.asked.size() == 2);  // most similar first; stops at the first acceptance
  CHECK(v.asked[0].second == "first question");
  CHECK(v.asked[1].second == "second question");

  // Every candidate refused: the miss names the nearest; the verifier ran once per candidate, no more.
  TableVerifier none;
  SemanticCacheOptions o = options(none.fn());
  o.candidates = 3;
  auto all = make(o);
  for (int i = 0; i < 6; ++i) {
    REQUIRE(all->insert("t", "question " + std::to_string(i), near(0, 1 + i, 0.99f - 0.02f * i), "a").ok());
  }
  SemanticLookup m = all->lookup("t", "incoming", basis(0));
  CHECK_FALSE(m.hit);
  CHECK(m.reason == SemanticMissReason::kRejectedByVerifier);
  CHECK(m.cached_question == "question 0");
  CHECK(none.asked.size() == 3);
  CHECK(all->stats().verifier_calls == 3);
}

TEST_CASE("semantic verifier: the cosine floor lets it recover pairs below the threshold",
          "[cache][semantic][verifier]") {
  TableVerifier v{{{"paraphrased question", 0.95f}}};
  SemanticCacheOptions o = options(v.fn());
  o.verifier_cosine_floor = 0.6f;
  auto cache = make(o);
  REQUIRE(cache->insert("t", "paraphrased question", basis(0), "answer").ok());
  SemanticLookup r = cache->lookup("t", "a rewording", near(0, 1, 0.7f));  // below threshold 0.8
  REQUIRE(r.hit);
  CHECK(r.similarity == Approx(0.7f).margin(1e-4));
  // Below the floor: no verifier call, and the miss says below threshold.
  SemanticLookup far = cache->lookup("t", "something else", near(0, 1, 0.5f));
  CHECK_FALSE(far.hit);
  CHECK(far.reason == SemanticMissReason::kBelowThreshold);
  CHECK(far.similarity == Approx(0.5f).margin(1e-4));
  CHECK(v.asked.size() == 1);

  // Without a floor, the threshold bounds the candidates as before: no verifier call at 0.7.
  TableVerifier w{{{"paraphrased question", 0.95f}}};
  auto plain = make(options(w.fn()));
  REQUIRE(plain->insert("t", "paraphrased question", basis(0), "answer").ok());
  CHECK(plain->lookup("t", "a rewording", near(0, 1, 0.7f)).reason == SemanticMissReason::kBelowThreshold);
  CHECK(w.asked.empty());
}

TEST_CASE("semantic verifier: guards veto before the verifier is asked", "[cache][semantic][verifier]") {
  TableVerifier v{{{"How do I enable notifications?", 1.0f}}};
  SemanticCacheOptions o = options(v.fn());
  o.guards = default_semantic_guards();
  auto cache = make(o);
  REQUIRE(cache->insert("t", "How do I enable notifications?", basis(0), "Settings > On").ok());
  SemanticLookup r = cache->lookup("t", "How do I disable notifications?", basis(0));
  CHECK_FALSE(r.hit);
  CHECK(r.reason == SemanticMissReason::kRejectedByGuard);
  CHECK(r.guard == "polarity");
  CHECK_FALSE(r.verified);
  CHECK(v.asked.empty());
}

TEST_CASE("semantic verifier: a failing verifier is a counted miss, never a crash", "[cache][semantic][verifier]") {
  auto run = [](SemanticVerifier verifier) {
    auto cache = make(options(std::move(verifier)));
    REQUIRE(cache->insert("t", "How do I reset my PIN?", basis(0), "Use the app.").ok());
    SemanticLookup r = cache->lookup("t", "How can I change my PIN?", basis(0));
    auto s = cache->stats();
    CHECK(s.verifier_calls == 1);
    CHECK(s.verifier_errors == 1);
    CHECK(s.verifier_rejected == 0);
    CHECK(s.verifier_accepted == 0);
    CHECK(s.rejected_by_verifier == 1);
    CHECK(s.misses == 1);
    return r;
  };
  SemanticLookup status =
      run([](const SemanticPair&) -> StatusOr<float> { return absl::UnavailableError("cross-encoder is down"); });
  CHECK_FALSE(status.hit);
  CHECK(status.reason == SemanticMissReason::kRejectedByVerifier);
  CHECK(status.error.code() == absl::StatusCode::kUnavailable);
  CHECK(contains(status.error.message(), "SemanticCacheOptions.verifier failed: cross-encoder is down"));

  SemanticLookup nan = run([](const SemanticPair&) -> StatusOr<float> { return NAN; });
  CHECK_FALSE(nan.hit);
  CHECK(contains(nan.error.message(), "expected a finite score"));

  SemanticLookup thrown =
      run([](const SemanticPair&) -> StatusOr<float> { throw std::runtime_error("model not loaded"); });
  CHECK_FALSE(thrown.hit);
  CHECK(thrown.error.code() == absl::StatusCode::kInternal);
  CHECK(contains(thrown.error.message(), "model not loaded"));
}

TEST_CASE("semantic verifier: it sees both questions, both unit embeddings and their cosine",
          "[cache][semantic][verifier]") {
  std::vector<float> seen_incoming, seen_cached;
  float seen_cosine = -2.0f;
  std::string seen_question;
  auto cache = make(options([&](const SemanticPair& pair) -> StatusOr<float> {
    seen_incoming.assign(pair.incoming_embedding.begin(), pair.incoming_embedding.end());
    seen_cached.assign(pair.cached_embedding.begin(), pair.cached_embedding.end());
    seen_cosine = pair.cosine;
    seen_question = std::string(pair.incoming) + " | " + std::string(pair.cached);
    return 1.0f;
  }));
  // Stored and looked up unnormalised (x3, x0.5): the verifier gets the unit vectors.
  std::vector<float> stored = basis(0), incoming = near(0, 1, 0.9f);
  for (float& v : stored) v *= 3.0f;
  for (float& v : incoming) v *= 0.5f;
  REQUIRE(cache->insert("t", "How do I reset my PIN?", stored, "Use the app.").ok());
  REQUIRE(cache->lookup("t", "How can I  change my PIN?", incoming).hit);
  REQUIRE(seen_incoming.size() == kDim);
  REQUIRE(seen_cached.size() == kDim);
  double dot = 0.0, n_in = 0.0, n_cached = 0.0;
  for (size_t i = 0; i < kDim; ++i) {
    dot += double(seen_incoming[i]) * seen_cached[i];
    n_in += double(seen_incoming[i]) * seen_incoming[i];
    n_cached += double(seen_cached[i]) * seen_cached[i];
  }
  CHECK(n_in == Approx(1.0).margin(1e-5));
  CHECK(n_cached == Approx(1.0).margin(1e-5));
  CHECK(seen_cached[0] == Approx(1.0f));  // basis(0), normalised
  CHECK(seen_cosine == Approx(dot).margin(1e-5));
  CHECK(seen_cosine == Approx(0.9).margin(1e-3));
  CHECK(seen_question == "How can I change my PIN? | How do I reset my PIN?");
}

TEST_CASE("semantic verifier: each call's latency is recorded", "[cache][semantic][verifier]") {
  auto cache = make(options([](const SemanticPair& pair) -> StatusOr<float> {
    std::this_thread::sleep_for(3ms);
    return pair.cached == "first question" ? 0.0f : 1.0f;
  }));
  REQUIRE(cache->insert("t", "first question", basis(0), "first").ok());
  REQUIRE(cache->insert("t", "second question", near(0, 1, 0.9f), "second").ok());
  CHECK(cache->lookup("t", "incoming", basis(0)).answer == "second");  // two calls
  CHECK(cache->lookup("t", "incoming", near(0, 1, 0.99f)).answer == "second");
  auto s = cache->stats();
  CHECK(s.verifier_calls == 4);  // first refused, second accepted, twice
  CHECK(s.verifier_latency_ns.count() == s.verifier_calls);
  CHECK(s.verifier_latency_ns.min() >= 3'000'000);  // exact for one histogram's snapshot
  CHECK(s.verifier_latency_ns.percentile(50) >= 2'900'000);

  // The same numbers in the Prometheus exposition.
  brisk::metrics::PrometheusWriter w;
  write_prometheus(w, s, "brisk_semantic", {{"cache", "faq"}});
  REQUIRE(w.status().ok());
  const std::string text = w.str();
  INFO(text);
  CHECK(contains(text, "brisk_semantic_verifier_calls_total{cache=\"faq\",result=\"accepted\"} 2\n"));
  CHECK(contains(text, "brisk_semantic_verifier_calls_total{cache=\"faq\",result=\"rejected\"} 2\n"));
  CHECK(contains(text, "brisk_semantic_verifier_calls_total{cache=\"faq\",result=\"error\"} 0\n"));
  CHECK(contains(text, "brisk_semantic_verifier_seconds_count{cache=\"faq\"} 4\n"));
  CHECK(contains(text, "brisk_semantic_lookups_total{cache=\"faq\",result=\"hit\"} 2\n"));
  CHECK(contains(text, "brisk_semantic_lookups_total{cache=\"faq\",result=\"rejected_by_verifier\"} 0\n"));
}

TEST_CASE("semantic verifier runs with no lock held: it may call the cache, removed entries are not served",
          "[cache][semantic][verifier]") {
  SemanticCache* self = nullptr;
  std::atomic<int> mode{0};
  auto cache = make(options([&](const SemanticPair& pair) -> StatusOr<float> {
    // An insert or erase takes the tenant's lock exclusively: under a held reader lock this would deadlock.
    if (mode == 0) {
      if (!self->insert("t", "unrelated", basis(5), "x").ok()) return absl::InternalError("insert failed");
    } else {
      self->erase("t", std::string(pair.cached));
    }
    return 1.0f;
  }));
  self = cache.get();
  REQUIRE(cache->insert("t", "How do I reset my PIN?", basis(0), "Use the app.").ok());
  SemanticLookup r = cache->lookup("t", "How can I change my PIN?", basis(0));
  CHECK(r.hit);  // the candidate is still the same live entry
  CHECK(cache->size("t") == 2);

  mode = 1;  // the verifier accepts, but the entry is erased before the lookup could serve it
  SemanticLookup gone = cache->lookup("t", "How can I change my PIN?", basis(0));
  CHECK_FALSE(gone.hit);
  CHECK(gone.answer.empty());
  CHECK(cache->size("t") == 1);
}

TEST_CASE("semantic verifier options are validated, naming the field", "[cache][semantic][verifier]") {
  auto bad = [](auto edit, std::string_view field) {
    SemanticCacheOptions o = options([](const SemanticPair&) -> StatusOr<float> { return 1.0f; });
    edit(o);
    auto c = SemanticCache::create(o);
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().code() == absl::StatusCode::kInvalidArgument);
    INFO(c.status().message());
    CHECK(contains(c.status().message(), field));
  };
  bad([](SemanticCacheOptions& o) { o.verifier_threshold = NAN; }, "verifier_threshold is nan");
  bad([](SemanticCacheOptions& o) { o.verifier_threshold = INFINITY; }, "verifier_threshold");
  bad([](SemanticCacheOptions& o) { o.verifier_cosine_floor = 0.9f; }, "verifier_cosine_floor is 0.9");  // > 0.8
  bad([](SemanticCacheOptions& o) { o.verifier_cosine_floor = -1.5f; }, "expected a cosine in [-1, 0.8]");
  bad([](SemanticCacheOptions& o) { o.verifier_cosine_floor = NAN; }, "verifier_cosine_floor");
  bad(
      [](SemanticCacheOptions& o) {
        o.verifier = nullptr;
        o.verifier_cosine_floor = 0.5f;
      },
      "verifier is empty");
  // Any finite scale is fine: a logit threshold.
  SemanticCacheOptions logit = options([](const SemanticPair&) -> StatusOr<float> { return 1.0f; });
  logit.verifier_threshold = -3.5f;
  logit.verifier_cosine_floor = -1.0f;
  CHECK(SemanticCache::create(logit).ok());
}

TEST_CASE("semantic verifier under concurrent lookups and writes", "[cache][semantic][verifier][concurrency]") {
  SemanticCacheOptions o = options([](const SemanticPair& pair) -> StatusOr<float> {
    std::this_thread::sleep_for(50us);  // a slow scorer: writers get in between the copy-out and the serve
    if (pair.cached.size() % 5 == 0) return absl::UnavailableError("flaky");
    return (pair.incoming.size() + pair.cached.size()) % 3 == 0 ? 0.0f : 1.0f;
  });
  o.max_entries = 32;
  o.verifier_cosine_floor = 0.0f;
  auto cache = make(o);
  const int kOps = 300;
  // Entries before the threads start, so that the readers have candidates to verify even when the scheduler runs
  // them all before the writer's first insert (seen on a loaded 2-core machine: no verifier call at all).
  for (int i = 0; i < 10; ++i) {
    REQUIRE(cache
                ->insert("t", "question number " + std::to_string(i),
                         brisk::testing::random_floats(kDim, -1, 1, uint32_t(i)), "answer", {.tags = {"a"}})
                .ok());
  }
  std::atomic<int> hits{0}, bad{0};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    for (int i = 0; i < kOps; ++i) {
      std::vector<float> v = brisk::testing::random_floats(kDim, -1, 1, uint32_t(i));
      if (!cache->insert("t", "question number " + std::to_string(i % 50), v, "answer", {.tags = {i % 3 ? "a" : "b"}})
               .ok())
        bad.fetch_add(1);  // Catch2 assertions are not thread-safe: count, check after
      if (i % 25 == 0) cache->invalidate_tag("b");
    }
  });
  for (int rd = 0; rd < 3; ++rd) {
    threads.emplace_back([&, rd] {
      for (int i = 0; i < kOps; ++i) {
        std::vector<float> v = brisk::testing::random_floats(kDim, -1, 1, uint32_t(i + rd));
        SemanticLookup r = cache->lookup("t", "question number " + std::to_string((i + rd) % 50), v);
        if (r.hit) hits.fetch_add(1);
        if (r.hit && r.answer != "answer") bad.fetch_add(1);
        if (r.reason == SemanticMissReason::kInvalidInput) bad.fetch_add(1);
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 100; ++i) {
      (void)cache->stats();
      std::this_thread::yield();
    }
  });
  for (auto& t : threads) t.join();
  CHECK(bad.load() == 0);
  auto s = cache->stats();
  CHECK(s.lookups == 3 * kOps);
  CHECK(s.hits == uint64_t(hits.load()));
  CHECK(s.hits + s.misses == s.lookups);
  CHECK(s.verifier_calls > 0);
  CHECK(s.verifier_calls == s.verifier_accepted + s.verifier_rejected + s.verifier_errors);
  CHECK(s.verifier_latency_ns.count() == s.verifier_calls);
  CHECK(s.verifier_calls <= uint64_t(3 * kOps * o.candidates));
  CHECK(s.hits <= s.verifier_accepted);  // every hit was accepted by the verifier
}
