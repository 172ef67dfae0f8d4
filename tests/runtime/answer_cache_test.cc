// AnswerCache (brisk/runtime/answer_cache.h) over the real all-MiniLM-L6-v2: answers stored and served by question,
// per tenant; a pair verifier file that decides which candidates are served, refused when fitted for another model;
// a saved cache that loads for its own model only; and the options it refuses.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "brisk/runtime/answer_cache.h"
#include "brisk/runtime/pair_verifier.h"
#include "runtime_test_util.h"
#include "test_util.h"

namespace {

size_t feature_index(const std::string& name) {
  const auto& names = brisk::pair_text_feature_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return i;
  }
  FAIL("no feature " << name);
  return 0;
}

// A verifier for `model_id` that accepts every pair (score sigmoid(4) = 0.98 >= 0.5) unless their numbers differ
// (sigmoid(4 - 8) = 0.02): the weight of the standardised "numbers_differ" feature (mean 0, scale 1) is -8.
brisk::PairVerifier numbers_verifier(const std::string& model_id, int64_t dim) {
  const size_t n = brisk::pair_text_feature_names().size() + 2 * static_cast<size_t>(dim);
  std::vector<float> mean(n, 0.0f), scale(n, 1.0f), weight(n, 0.0f);
  weight[feature_index("numbers_differ")] = -8.0f;
  auto v = brisk::PairVerifier::create(model_id, dim, mean, scale, weight, /*bias=*/4.0f, /*threshold=*/0.5f,
                                       /*target_precision=*/0.95f);
  REQUIRE(v.ok());
  return *v;
}

}  // namespace

TEST_CASE("answer cache: an answer is served to its question and a paraphrase, per tenant", "[runtime][answers]") {
  auto rt = brisk::testing::make_runtime(brisk::testing::runtime_options());
  auto answers = brisk::AnswerCache::create(*rt, {});
  REQUIRE(answers.ok());
  CHECK_FALSE((*answers)->has_verifier());
  REQUIRE((*answers)->insert("bank", "How do I reset my online banking password?", "Use 'Forgot password'.").ok());

  auto same = (*answers)->lookup("bank", "how do I reset my online banking password");
  REQUIRE(same.ok());
  CHECK(same->hit);
  CHECK(same->answer == "Use 'Forgot password'.");
  CHECK(same->similarity > 0.99f);
  auto paraphrase = (*answers)->lookup("bank", "How can I reset the password of my online banking?");
  REQUIRE(paraphrase.ok());
  CHECK(paraphrase->hit);
  CHECK(paraphrase->cached_question == "How do I reset my online banking password?");
  // Another tenant has no entries; an unrelated question is below the threshold.
  auto other_tenant = (*answers)->lookup("shop", "How do I reset my online banking password?");
  REQUIRE(other_tenant.ok());
  CHECK(other_tenant->reason == brisk::cache::SemanticMissReason::kNoCandidate);
  auto unrelated = (*answers)->lookup("bank", "What time does the museum open on Sundays?");
  REQUIRE(unrelated.ok());
  CHECK(unrelated->reason == brisk::cache::SemanticMissReason::kBelowThreshold);
  const brisk::cache::SemanticCacheStats s = (*answers)->stats();
  CHECK(s.lookups == 4);
  CHECK(s.hits == 2);
  CHECK(s.inserts == 1);
  CHECK(s.verifier_calls == 0);
  // Invalid UTF-8 is the runtime's error, naming the text.
  auto bad = (*answers)->lookup("bank", "caf\xC3");
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);

  // A saved answer cache records the model: it loads for this model only.
  brisk::testing::TempDir dir;
  REQUIRE((*answers)->semantic_cache().save(dir.file("answers.bin")).ok());
  brisk::cache::SemanticCacheOptions same_model;
  same_model.dim = static_cast<size_t>(rt->embedding_dim());
  same_model.embedding_model_id = rt->embedding_model_id();
  auto reloaded = brisk::cache::SemanticCache::load(dir.file("answers.bin"), same_model);
  REQUIRE(reloaded.ok());
  CHECK((*reloaded)->size("bank") == 1);
  brisk::cache::SemanticCacheOptions other_model = same_model;
  other_model.embedding_model_id = "another-model-0123";
  auto refused = brisk::cache::SemanticCache::load(dir.file("answers.bin"), other_model);
  CHECK(refused.status().code() == absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("answer cache: a verifier file decides, whatever the runtime's normalisation", "[runtime][answers]") {
  brisk::RuntimeOptions opts = brisk::testing::runtime_options();
  opts.normalize = false;  // as the HTTP server runs it: the verifier's model id is still the model's
  auto rt = brisk::testing::make_runtime(opts);
  auto normalised = brisk::testing::make_runtime(brisk::testing::runtime_options());
  CHECK(rt->cache_model_id() != normalised->cache_model_id());
  CHECK(rt->embedding_model_id() == normalised->embedding_model_id());
  CHECK(normalised->embedding_model_id() == normalised->cache_model_id());  // MiniLM normalises

  brisk::testing::TempDir dir;
  const std::string path = dir.file("verifier.safetensors");
  REQUIRE(numbers_verifier(rt->embedding_model_id(), rt->embedding_dim()).save(path).ok());
  brisk::AnswerCacheOptions ao;
  ao.verifier_path = path;
  auto answers = brisk::AnswerCache::create(*rt, ao);
  INFO(answers.status().ToString());
  REQUIRE(answers.ok());
  CHECK((*answers)->has_verifier());
  CHECK((*answers)->verifier_threshold() == 0.5f);
  REQUIRE((*answers)->insert("bank", "Can I send 500 pounds abroad without a fee?", "Yes, up to 500.").ok());

  auto same = (*answers)->lookup("bank", "Can I send 500 pounds abroad without a fee?");
  REQUIRE(same.ok());
  CHECK(same->hit);
  CHECK(same->verified);
  CHECK(same->verifier_score > 0.9f);
  // Cosine and the number guard's absence would serve it; the verifier refuses the changed number.
  auto changed = (*answers)->lookup("bank", "Can I send 5000 pounds abroad without a fee?");
  REQUIRE(changed.ok());
  CHECK_FALSE(changed->hit);
  CHECK(changed->reason == brisk::cache::SemanticMissReason::kRejectedByVerifier);
  CHECK(changed->verifier_score < 0.1f);
  const brisk::cache::SemanticCacheStats s = (*answers)->stats();
  CHECK(s.verifier_calls == 2);
  CHECK(s.verifier_accepted == 1);
  CHECK(s.verifier_rejected == 1);
  CHECK(s.verifier_latency_ns.count() == 2);
}

TEST_CASE("answer cache: another model's verifier, a classifier and contradictory options are refused",
          "[runtime][answers]") {
  auto rt = brisk::testing::make_runtime(brisk::testing::runtime_options());
  brisk::testing::TempDir dir;
  const std::string other = dir.file("other.safetensors");
  REQUIRE(numbers_verifier("another-model-0123", rt->embedding_dim()).save(other).ok());
  brisk::AnswerCacheOptions ao;
  ao.verifier_path = other;
  auto refused = brisk::AnswerCache::create(*rt, ao);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(refused.status().message()), Catch::Contains("another-model-0123"));
  CHECK_THAT(std::string(refused.status().message()), Catch::Contains(rt->embedding_model_id()));

  auto missing = brisk::AnswerCache::create(*rt, {.semantic = {}, .verifier_path = dir.file("none.safetensors")});
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(std::string(missing.status().message()), Catch::Contains("none.safetensors"));

  brisk::AnswerCacheOptions both;
  both.verifier_path = other;
  both.semantic.verifier = [](const brisk::cache::SemanticPair&) -> brisk::StatusOr<float> { return 1.0f; };
  auto two = brisk::AnswerCache::create(*rt, both);
  CHECK_THAT(std::string(two.status().message()), Catch::Contains("expected one verifier"));

  brisk::AnswerCacheOptions floor;
  floor.verifier_path = other;
  floor.verifier_cosine_floor = 0.9f;  // above the threshold (0.72)
  auto high = brisk::AnswerCache::create(*rt, floor);
  CHECK_THAT(std::string(high.status().message()), Catch::Contains("verifier_cosine_floor is 0.9"));

  brisk::AnswerCacheOptions dim;
  dim.semantic.dim = 16;
  auto wrong_dim = brisk::AnswerCache::create(*rt, dim);
  CHECK_THAT(std::string(wrong_dim.status().message()),
             Catch::Contains("semantic.dim is 16; expected the model's embedding"));

  brisk::AnswerCacheOptions model_id;
  model_id.semantic.embedding_model_id = "another-model-0123";
  auto wrong_model = brisk::AnswerCache::create(*rt, model_id);
  CHECK_THAT(std::string(wrong_model.status().message()),
             Catch::Contains("semantic.embedding_model_id is 'another-model-0123'; expected the runtime's"));

  brisk::RuntimeOptions cls;
  cls.model_dir = (brisk::testing::test_data_dir() / "tasks" / "bert_cls").string();
  cls.num_threads = brisk::testing::compute_threads();
  auto classifier = brisk::testing::make_runtime(cls);
  auto no_embeddings = brisk::AnswerCache::create(*classifier, {});
  REQUIRE_FALSE(no_embeddings.ok());
  CHECK_THAT(std::string(no_embeddings.status().message()), Catch::Contains("expected an embedding model"));
}
