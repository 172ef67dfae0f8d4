// The semantic-cache verifiers over a Runtime: a cross-encoder's score and an intent classifier's agreement decide
// whether a candidate hit is served.
#include <catch2/catch.hpp>

#include <cmath>

#include "brisk/runtime/verifier.h"
#include "runtime_test_util.h"
#include "test_util.h"

namespace {

brisk::RuntimeOptions tiny(const std::string& model) {
  brisk::RuntimeOptions o;
  o.model_dir = (brisk::testing::test_data_dir() / "tasks" / model).string();
  o.max_seq_len = 24;
  o.num_threads = brisk::testing::compute_threads();
  return o;
}

}  // namespace

TEST_CASE("verifier: the cross-encoder verifier scores a pair as rerank does, and gates a cache hit") {
  auto ce = brisk::testing::make_runtime(tiny("cross_encoder"));
  auto verifier = brisk::cross_encoder_verifier(*ce);
  REQUIRE(verifier.ok());
  std::vector<std::string_view> passage = {"i lost my card"};
  auto ranked = ce->rerank("my card is gone", passage);
  REQUIRE(ranked.ok());
  auto score = (*verifier)(brisk::cache::SemanticPair{.incoming = "my card is gone", .cached = "i lost my card"});
  REQUIRE(score.ok());
  REQUIRE(*score == Approx((*ranked)[0].score).margin(1e-6));

  // In a cache: the same pair is served or refused by the verifier's threshold around that score.
  for (const bool serve : {true, false}) {
    brisk::cache::SemanticCacheOptions o;
    o.dim = 2;
    o.threshold = 0.5f;
    o.verifier = *verifier;
    o.verifier_threshold = serve ? *score - 1e-3f : *score + 1e-3f;
    auto cache = brisk::cache::SemanticCache::create(o);
    REQUIRE(cache.ok());
    const std::vector<float> e = {1.0f, 0.0f};
    REQUIRE((*cache)->insert("t", "i lost my card", e, "answer").ok());
    auto r = (*cache)->lookup("t", "my card is gone", e);
    REQUIRE(r.hit == serve);
  }
}

TEST_CASE("verifier: intent agreement is the incoming question's probability of the cached one's intent") {
  auto cls = brisk::testing::make_runtime(tiny("bert_cls"));
  auto verifier = brisk::intent_agreement_verifier(*cls);
  REQUIRE(verifier.ok());
  std::vector<std::string_view> texts = {"hello there", "my card is lost"};
  auto top = cls->classify(texts, 3);
  REQUIRE(top.ok());
  auto score = (*verifier)(brisk::cache::SemanticPair{.incoming = "hello there", .cached = "my card is lost"});
  REQUIRE(score.ok());
  const int64_t cached_label = (*top)[1][0].id;
  float want = -1;
  for (const auto& s : (*top)[0]) {
    if (s.id == cached_label) want = s.score;
  }
  REQUIRE(*score == Approx(want).margin(1e-6));
}

TEST_CASE("verifier: a runtime of the wrong task is refused") {
  auto cls = brisk::testing::make_runtime(tiny("bert_cls"));
  auto ce = brisk::testing::make_runtime(tiny("cross_encoder"));
  auto a = brisk::cross_encoder_verifier(*cls);
  REQUIRE(a.status().code() == absl::StatusCode::kFailedPrecondition);
  REQUIRE_THAT(std::string(a.status().message()), Catch::Contains("expected a cross-encoder"));
  REQUIRE(brisk::intent_agreement_verifier(*ce).status().code() == absl::StatusCode::kFailedPrecondition);
}
