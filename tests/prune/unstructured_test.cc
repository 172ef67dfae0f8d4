// prune_unstructured and input_norms on the tiny random BERT (tests/data/tiny_bert_st: the weights of
// tests/data/tiny_bert as safetensors, so the pruner meets memory-mapped zero-copy views and needs no libtorch):
// exact per-layer and global counts against brute-force rankings, the mapped source never written, the pruned
// encoder runs, input norms against a hand-computed first-layer input, Wanda, and the errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <vector>

#include "brisk/prune/mask.h"
#include "test_util.h"

using namespace brisk;
using namespace brisk::prune;

namespace {

struct Tiny {
  std::string dir = (testing::test_data_dir() / "tiny_bert_st").string();
  BertConfig config = BertConfig::from_json_file(dir + "/config.json").value();
  EncoderWeights weights = EncoderWeights::load(dir, config).value();
};

std::vector<float> values(const Tensor& t) {
  REQUIRE(t.dtype() == DType::kF32);
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

int64_t count_zeros(const Tensor& t) {
  const std::vector<float> v = values(t);
  return std::count(v.begin(), v.end(), 0.0f);
}

std::vector<PackedSequences> calibration_batches() {
  std::vector<PackedSequences> batches(2);
  batches[0].add(std::vector<int32_t>{1, 5, 7, 2});
  batches[0].add(std::vector<int32_t>{1, 9, 12, 15, 3, 2});
  batches[1].add(std::vector<int32_t>{1, 19, 4, 4, 8, 11, 2});
  return batches;
}

UnstructuredOptions options(double amount, std::vector<std::string> layers = {},
                            const std::map<std::string, std::vector<float>>* norms = nullptr, bool global = false,
                            bool n_m = false) {
  UnstructuredOptions o;
  o.amount = amount;
  o.layers = std::move(layers);
  o.input_norms = norms;
  o.global = global;
  o.n_m = n_m;
  return o;
}

// The element indices a sort of (score, index) puts first.
std::set<int64_t> lowest(const std::vector<float>& scores, int64_t k) {
  std::vector<int64_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return std::tie(scores[static_cast<size_t>(a)], a) < std::tie(scores[static_cast<size_t>(b)], b);
  });
  return std::set<int64_t>(order.begin(), order.begin() + k);
}

std::set<int64_t> zero_positions(const Tensor& t) {
  const std::vector<float> v = values(t);
  std::set<int64_t> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == 0.0f) out.insert(static_cast<int64_t>(i));
  }
  return out;
}

}  // namespace

TEST_CASE("per-layer pruning zeroes exactly round(amount * n) lowest-magnitude weights", "[prune][unstructured]") {
  Tiny t;
  const EncoderWeights original = t.weights;  // shares the mapped tensors
  std::vector<std::vector<float>> before;
  for (const LinearSlot& s : linear_slots(t.weights, t.config)) {
    REQUIRE(count_zeros(*s.weight) == 0);
    before.push_back(values(*s.weight));
  }
  auto r = prune_unstructured(t.weights, t.config, options(0.3));
  REQUIRE(r.ok());
  // 8x8 layers: round(19.2) = 19 of 64; 16x8 and 8x16: round(38.4) = 38 of 128.
  CHECK(r->pruned == 2 * (4 * 19 + 2 * 38));
  CHECK(r->total == 2 * (4 * 64 + 2 * 128));
  const std::vector<LinearSlot> slots = linear_slots(t.weights, t.config);
  REQUIRE(r->masks.size() == 12);
  for (size_t i = 0; i < slots.size(); ++i) {
    INFO(slots[i].name);
    const int64_t n = slots[i].weight->numel(), want = n == 64 ? 19 : 38;
    CHECK(count_zeros(*slots[i].weight) == want);
    CHECK(r->sparsity.at(slots[i].name) == double(want) / double(n));
    std::vector<float> magnitude = before[i];
    for (float& x : magnitude) x = std::fabs(x);
    CHECK(zero_positions(*slots[i].weight) == lowest(magnitude, want));
    // The kept weights are the originals, bit for bit.
    const std::vector<float> now = values(*slots[i].weight);
    for (size_t j = 0; j < now.size(); ++j) {
      if (now[j] != 0.0f) CHECK(now[j] == before[i][j]);
    }
  }
  // The source tensors (zero-copy views of the mapped file) are untouched; a fresh load sees the same bytes.
  EncoderWeights copy = original;
  const std::vector<LinearSlot> old_slots = linear_slots(copy, t.config);
  const EncoderWeights reloaded = EncoderWeights::load(t.dir, t.config).value();
  for (size_t i = 0; i < old_slots.size(); ++i) {
    CHECK(values(*old_slots[i].weight) == before[i]);
    CHECK(old_slots[i].weight->raw_data() != slots[i].weight->raw_data());
  }
  CHECK(values(reloaded.layers[0].q_weight) == before[0]);
}

TEST_CASE("global pruning ranks all selected layers together", "[prune][unstructured]") {
  Tiny t;
  std::vector<std::tuple<float, size_t, int64_t>> triples;
  std::vector<LinearSlot> slots = linear_slots(t.weights, t.config);
  for (size_t s = 0; s < slots.size(); ++s) {
    const std::vector<float> v = values(*slots[s].weight);
    for (size_t i = 0; i < v.size(); ++i) triples.emplace_back(std::fabs(v[i]), s, static_cast<int64_t>(i));
  }
  std::sort(triples.begin(), triples.end());
  const int64_t k = 461;  // round(0.45 * 1024 = 460.8)
  std::vector<std::set<int64_t>> want(slots.size());
  for (int64_t i = 0; i < k; ++i) want[std::get<1>(triples[size_t(i)])].insert(std::get<2>(triples[size_t(i)]));

  auto r = prune_unstructured(t.weights, t.config, options(0.45, {}, nullptr, /*global=*/true));
  REQUIRE(r.ok());
  CHECK(r->pruned == k);
  CHECK(r->total == 1024);
  int64_t zeros = 0;
  slots = linear_slots(t.weights, t.config);
  for (size_t s = 0; s < slots.size(); ++s) {
    INFO(slots[s].name);
    CHECK(zero_positions(*slots[s].weight) == want[s]);
    zeros += count_zeros(*slots[s].weight);
  }
  CHECK(zeros == k);
  // Sparsity differs between layers (a global threshold), unlike a per-layer amount.
  std::set<double> levels;
  for (const auto& [name, sp] : r->sparsity) levels.insert(sp);
  CHECK(levels.size() > 1);
}

TEST_CASE("only the selected layers are pruned", "[prune][unstructured]") {
  Tiny t;
  const std::string name = "encoder.layer.1.intermediate.dense";
  auto r = prune_unstructured(t.weights, t.config, options(0.5, {name}));
  REQUIRE(r.ok());
  CHECK(r->masks.size() == 1);
  CHECK(r->masks.count(name) == 1);
  CHECK(r->pruned == 64);
  CHECK(r->total == 128);
  for (const LinearSlot& s : linear_slots(t.weights, t.config)) {
    INFO(s.name);
    CHECK(count_zeros(*s.weight) == (s.name == name ? 64 : 0));
  }
}

TEST_CASE("the pruned weights make an encoder that runs and differs", "[prune][unstructured]") {
  Tiny t;
  auto dense = BertEncoder::create(t.config, t.weights, Device::kCPU).value();
  REQUIRE(prune_unstructured(t.weights, t.config, options(0.6)).ok());
  auto sparse = BertEncoder::create(t.config, t.weights, Device::kCPU);
  REQUIRE(sparse.ok());
  const PackedSequences batch = calibration_batches()[0];
  std::vector<float> a(static_cast<size_t>(batch.total_tokens() * 8)), b(a.size());
  REQUIRE(dense->forward(batch, a.data()).ok());
  REQUIRE((*sparse)->forward(batch, b.data()).ok());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    REQUIRE(std::isfinite(b[i]));
    worst = std::max(worst, double(std::fabs(a[i] - b[i])));
  }
  CHECK(worst > 1e-2);
}

TEST_CASE("input_norms: column norms of every linear layer's input", "[prune][unstructured]") {
  Tiny t;
  auto encoder = BertEncoder::create(t.config, t.weights, Device::kCPU).value();
  const std::vector<PackedSequences> batches = calibration_batches();
  auto norms = input_norms(*encoder, batches);
  REQUIRE(norms.ok());
  std::set<std::string> names;
  for (const LinearSlot& s : linear_slots(t.weights, t.config)) names.insert(s.name);
  std::set<std::string> got;
  for (const auto& [name, v] : *norms) got.insert(name);
  CHECK(got == names);
  CHECK(norms->at("encoder.layer.1.output.dense").size() == 16);

  // Layer 0's query input is the embeddings' LayerNorm, computed here from the weights.
  const EmbeddingWeights& e = t.weights.embeddings;
  std::vector<double> squares(8, 0.0);
  for (const PackedSequences& batch : batches) {
    for (int64_t s = 0; s < batch.size(); ++s) {
      for (int64_t pos = 0; pos < batch.length(s); ++pos) {
        const int32_t id = batch.input_ids[static_cast<size_t>(batch.offsets[size_t(s)] + pos)];
        double x[8], mean = 0, var = 0;
        for (int c = 0; c < 8; ++c) {
          x[c] = double(e.word.data<float>()[id * 8 + c]) + e.position.data<float>()[pos * 8 + c] +
                 e.token_type.data<float>()[c];
          mean += x[c] / 8;
        }
        for (double v : x) var += (v - mean) * (v - mean) / 8;
        for (int c = 0; c < 8; ++c) {
          const double y =
              (x[c] - mean) / std::sqrt(var + 1e-12) * e.ln_gamma.data<float>()[c] + e.ln_beta.data<float>()[c];
          squares[size_t(c)] += y * y;
        }
      }
    }
  }
  for (const char* name : {"encoder.layer.0.attention.self.query", "encoder.layer.0.attention.self.value"}) {
    const std::vector<float>& n = norms->at(name);
    REQUIRE(n.size() == 8);
    for (int c = 0; c < 8; ++c) {
      INFO(name << " column " << c);
      CHECK(n[size_t(c)] == Approx(std::sqrt(squares[size_t(c)])).epsilon(1e-4));
    }
  }
  CHECK(!input_norms(*encoder, {}).ok());
}

TEST_CASE("Wanda scores change which weights are pruned", "[prune][unstructured]") {
  Tiny t;
  auto encoder = BertEncoder::create(t.config, t.weights, Device::kCPU).value();
  const auto norms = input_norms(*encoder, calibration_batches()).value();
  EncoderWeights magnitude_weights = t.weights, wanda_weights = t.weights;
  const std::string name = "encoder.layer.0.intermediate.dense";  // [16, 8]
  const std::vector<float> w = values(t.weights.layers[0].intermediate_weight);
  auto magnitude = prune_unstructured(magnitude_weights, t.config, options(0.5, {name}));
  auto wanda = prune_unstructured(wanda_weights, t.config, options(0.5, {name}, &norms));
  REQUIRE(magnitude.ok());
  REQUIRE(wanda.ok());
  CHECK(wanda->pruned == 64);
  std::vector<float> scores(w.size());
  const std::vector<float>& n = norms.at(name);
  for (size_t i = 0; i < w.size(); ++i) scores[i] = std::fabs(w[i]) * n[i % 8];
  const std::set<int64_t> wanda_zeros = zero_positions(wanda_weights.layers[0].intermediate_weight);
  CHECK(wanda_zeros == lowest(scores, 64));
  CHECK(wanda_zeros != zero_positions(magnitude_weights.layers[0].intermediate_weight));

  std::map<std::string, std::vector<float>> partial = {{name, n}};
  auto missing = prune_unstructured(wanda_weights, t.config, options(0.5, {}, &partial));
  REQUIRE_FALSE(missing.ok());
  CHECK(std::string(missing.status().message()).find("no entry for layer 'encoder.layer.0.attention.self.query'") !=
        std::string::npos);
}

TEST_CASE("N:M pruning through prune_unstructured", "[prune][unstructured]") {
  Tiny t;
  auto r = prune_unstructured(t.weights, t.config, options(0.0, {}, nullptr, false, /*n_m=*/true));
  REQUIRE(r.ok());
  CHECK(r->pruned * 2 == r->total);
  for (const LinearSlot& s : linear_slots(t.weights, t.config)) {
    INFO(s.name);
    CHECK(validate_n_m(*s.weight).ok());
    CHECK(r->sparsity.at(s.name) == 0.5);
  }
}

TEST_CASE("prune_unstructured rejects bad input and leaves the weights alone", "[prune][unstructured]") {
  Tiny t;
  const void* q = t.weights.layers[0].q_weight.raw_data();
  const auto message = [](const StatusOr<UnstructuredResult>& r) { return std::string(r.status().message()); };

  auto unknown = prune_unstructured(t.weights, t.config, options(0.5, {"encoder.layer.9.query"}));
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(message(unknown).find("layer 'encoder.layer.9.query' is not a linear layer") != std::string::npos);
  CHECK(message(unknown).find("encoder.layer.0.attention.self.query, encoder.layer.0.attention.self.key") !=
        std::string::npos);
  CHECK(message(unknown).find("encoder.layer.1.output.dense") != std::string::npos);

  for (double amount : {1.0, -0.1, 2.0}) {
    auto bad = prune_unstructured(t.weights, t.config, options(amount));
    REQUIRE_FALSE(bad.ok());
    CHECK(message(bad).find("expected a fraction in [0, 1)") != std::string::npos);
  }
  CHECK(!prune_unstructured(t.weights, t.config, options(0.0, {}, nullptr, true, true)).ok());
  CHECK(t.weights.layers[0].q_weight.raw_data() == q);
  CHECK(count_zeros(t.weights.layers[0].q_weight) == 0);

  // A quantized (i8) layer is named with its dtype; the layers before it are not pruned either.
  t.weights.layers[1].k_weight = Tensor::zeros({8, 8}, DType::kI8).value();
  auto quantized = prune_unstructured(t.weights, t.config, options(0.5));
  REQUIRE_FALSE(quantized.ok());
  CHECK(message(quantized).find("layer 'encoder.layer.1.attention.self.key' is i8; expected f32") != std::string::npos);
  CHECK(t.weights.layers[0].q_weight.raw_data() == q);
  CHECK(count_zeros(t.weights.layers[0].q_weight) == 0);
}
