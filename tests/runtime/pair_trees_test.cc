// The pair verifier's gradient-boosted trees (lib/runtime/pair_trees.h, PairTrees in brisk/runtime/pair_verifier.h):
// they learn an interaction a logistic score cannot (the label is the XOR of two features), their file round-trips
// and scores the same, hostile trees are refused naming the node, and fit_pair_verifier picks them when they win.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "brisk/model/safetensors.h"
#include "brisk/runtime/pair_verifier.h"
#include "runtime/pair_logistic.h"
#include "runtime/pair_trees.h"
#include "test_util.h"

using brisk::PairTrees;
using brisk::PairVerifier;

namespace {

constexpr size_t kFeatures = 16;  // pair_text_feature_names().size()

// Rows of kFeatures features: feature 1 and feature 4 in {0, 1}, the rest noise; label = f1 XOR f4, 5% flipped.
struct Xor {
  std::vector<float> x;
  std::vector<int32_t> y;
  std::vector<size_t> rows;
};
Xor xor_rows(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  Xor d;
  for (size_t i = 0; i < n; ++i) {
    std::vector<float> row(kFeatures);
    for (float& v : row) v = u(rng);
    row[1] = u(rng) < 0.5f ? 0.0f : 1.0f;
    row[4] = u(rng) < 0.5f ? 0.0f : 1.0f;
    int label = (row[1] != row[4]) ? 1 : 0;
    if (u(rng) < 0.05f) label = 1 - label;
    d.x.insert(d.x.end(), row.begin(), row.end());
    d.y.push_back(label);
    d.rows.push_back(i);
  }
  return d;
}

double accuracy(const Xor& d, auto score) {
  size_t right = 0;
  for (size_t r : d.rows) right += (score(&d.x[r * kFeatures]) >= 0.5f) == (d.y[r] == 1);
  return double(right) / double(d.rows.size());
}

float sigmoid(float m) { return static_cast<float>(1.0 / (1.0 + std::exp(-double(m)))); }

}  // namespace

TEST_CASE("pair trees learn an interaction that a logistic score cannot", "[runtime][verifier]") {
  const Xor train = xor_rows(800, 1), fresh = xor_rows(800, 2);
  auto trees = brisk::fit_pair_trees(train.x, kFeatures, kFeatures, train.y, train.rows);
  REQUIRE(trees.ok());
  CHECK(brisk::pair_trees_error(*trees, kFeatures).empty());
  CHECK(trees->roots.size() == 300);
  const double tree_acc = accuracy(fresh, [&](const float* row) { return sigmoid(pair_trees_margin(*trees, row)); });
  auto logistic = brisk::fit_pair_logistic(train.x, kFeatures, train.y, train.rows, 0.1, kFeatures, 0.0);
  REQUIRE(logistic.ok());
  const double linear_acc = accuracy(fresh, [&](const float* row) { return logistic->score(row); });
  INFO("trees " << tree_acc << ", logistic " << linear_acc);
  CHECK(tree_acc > 0.9);     // the 5% flipped labels bound it at ~0.95
  CHECK(linear_acc < 0.65);  // XOR: no linear score does better than chance by much
  // Deterministic: the same rows give the same trees.
  auto again = brisk::fit_pair_trees(train.x, kFeatures, kFeatures, train.y, train.rows);
  REQUIRE(again.ok());
  CHECK(again->threshold == trees->threshold);
  CHECK(again->value == trees->value);
  // What it refuses.
  CHECK_FALSE(brisk::fit_pair_trees(train.x, kFeatures, 0, train.y, train.rows).ok());
  std::vector<int32_t> ones(train.y.size(), 1);
  CHECK_FALSE(brisk::fit_pair_trees(train.x, kFeatures, kFeatures, ones, train.rows).ok());
}

TEST_CASE("pair verifier with trees: a round trip, and hostile trees refused naming the node", "[runtime][verifier]") {
  const Xor train = xor_rows(400, 3);
  auto trees = brisk::fit_pair_trees(train.x, kFeatures, kFeatures, train.y, train.rows, {.rounds = 20});
  REQUIRE(trees.ok());
  auto v = PairVerifier::create_trees("model-a", 4, *trees, 0.6f, 0.95f);
  REQUIRE(v.ok());
  CHECK(v->uses_trees());
  brisk::testing::TempDir tmp;
  const std::string path = tmp.file("trees.safetensors");
  REQUIRE(v->save(path).ok());
  auto back = PairVerifier::load(path, "model-a");
  INFO(back.status().ToString());
  REQUIRE(back.ok());
  CHECK(back->uses_trees());
  CHECK(back->threshold() == 0.6f);
  const std::vector<float> u{1.0f, 0.0f, 0.0f, 0.0f}, w{0.6f, 0.8f, 0.0f, 0.0f};
  for (const auto& [a, b] :
       {std::pair{"How do I send 500 pounds?", "How do I send 5000 pounds?"}, {"I lost my card", "my card is lost"}}) {
    const brisk::cache::SemanticPair pair{a, b, u, w, 0.6f};
    auto s1 = v->score(pair), s2 = back->score(pair);
    REQUIRE((s1.ok() && s2.ok()));
    CHECK(*s1 == *s2);
    const std::vector<float> f = brisk::pair_features(pair);
    CHECK(*s1 == Approx(sigmoid(pair_trees_margin(*trees, f.data()))).margin(1e-6));
  }
  CHECK_FALSE(PairVerifier::load(path, "model-b").ok());
  // The same question, up to case and trailing punctuation, scores 1 whatever the trees say.
  auto same = back->score(brisk::cache::SemanticPair{"Can I send 500 pounds?", "can I send 500 pounds", u, w, 0.6f});
  REQUIRE(same.ok());
  CHECK(*same == 1.0f);

  const auto refused = [](PairTrees t, const std::string& why) {
    auto r = PairVerifier::create_trees("model-a", 4, std::move(t), 0.5f, 0.95f);
    INFO(why << ": " << r.status().ToString());
    CHECK_FALSE(r.ok());
    CHECK_THAT(std::string(r.status().message()), Catch::Contains(why));
  };
  PairTrees t = *trees;
  const int32_t internal = t.roots[0];
  REQUIRE(t.feature[internal] >= 0);
  auto cycle = t;
  cycle.left[internal] = internal;  // a child that is not after its parent: a loop
  refused(cycle, "node " + std::to_string(internal) + " has child");
  auto feature = t;
  feature.feature[internal] = 16;
  refused(feature, "splits on feature 16");
  auto nan = t;
  nan.threshold[internal] = NAN;
  refused(nan, "threshold");
  auto root = t;
  root.roots.push_back(static_cast<int32_t>(t.feature.size()));
  refused(root, "a root is");
  auto lengths = t;
  lengths.value.pop_back();
  refused(lengths, "equal lengths");
  auto none = t;
  none.roots.clear();
  refused(none, "no trees");

  // In a file: another model kind, and a tree tensor of the wrong type.
  auto file = brisk::SafetensorsFile::open(path);
  REQUIRE(file.ok());
  std::vector<std::pair<std::string, brisk::Tensor>> tensors;
  for (const std::string& name : file->tensor_names()) tensors.emplace_back(name, file->get(name).value());
  auto md = file->metadata();
  md["model"] = "forest";
  const std::string bad = tmp.file("bad.safetensors");
  REQUIRE(brisk::write_safetensors(bad, tensors, md).ok());
  CHECK_THAT(std::string(PairVerifier::load(bad).status().message()), Catch::Contains("model is 'forest'"));
  md["model"] = "trees";
  std::vector<float> as_float(t.feature.size(), 0.0f);
  for (auto& [name, tensor] : tensors) {
    if (name == "pair_verifier.tree_feature") {
      tensor = brisk::Tensor::borrow(as_float.data(), {static_cast<int64_t>(as_float.size())}, brisk::DType::kF32);
    }
  }
  REQUIRE(brisk::write_safetensors(bad, tensors, md).ok());
  CHECK_THAT(std::string(PairVerifier::load(bad).status().message()), Catch::Contains("pair_verifier.tree_feature"));
}
