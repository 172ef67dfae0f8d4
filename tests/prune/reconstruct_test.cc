// Unit importance (magnitude and activation scores checked against direct computations from an activation tap),
// amount-based plans, and ridge reconstruction: it lowers a pruned layer's output error on held-out activations and
// refuses a singular system.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "brisk/model/encoder.h"
#include "brisk/prune/importance.h"
#include "brisk/prune/reconstruct.h"
#include "tiny_model.h"

using namespace brisk;
using namespace brisk::prune;

namespace {

using testing::random_batch;

struct Tiny : testing::TinyBert4 {
  std::unique_ptr<BertEncoder> encoder = BertEncoder::create(config, weights, Device::kCPU).value();
};

// The input of one linear layer over a batch, as the tap sees it.
std::vector<float> tap_input(const BertEncoder& e, const PackedSequences& p, const std::string& linear, int64_t& cols) {
  std::vector<float> captured;
  std::vector<float> hidden(static_cast<size_t>(p.total_tokens() * e.hidden_size()));
  REQUIRE(e.forward(p, hidden.data(), [&](std::string_view name, const float* x, int64_t rows, int64_t c) {
             if (name == linear) {
               captured.insert(captured.end(), x, x + rows * c);
               cols = c;
             }
             return absl::OkStatus();
           }).ok());
  return captured;
}

// y = x Wᵀ + b for x [rows, in].
std::vector<double> project(const std::vector<float>& x, int64_t in, const Tensor& w, const Tensor& b,
                            const std::vector<int64_t>& cols) {
  const int64_t rows = static_cast<int64_t>(x.size()) / in, out = w.dim(0);
  std::vector<double> y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double s = b.data<float>()[o];
      for (size_t i = 0; i < cols.size(); ++i) s += double(x[r * in + cols[i]]) * w.data<float>()[o * w.dim(1) + i];
      y[r * out + o] = s;
    }
  }
  return y;
}

double rms_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(s / a.size());
}

}  // namespace

TEST_CASE("activation importance is each unit's contribution to its layer's output, computed directly") {
  Tiny t;
  const PackedSequences calib = random_batch(6, 9, 1);
  auto stats = collect_activations(*t.encoder, {calib});
  REQUIRE(stats.ok());
  CHECK(stats->layers[1].tokens == 54);
  auto scores = score_units(t.config, t.weights, Importance::kActivation, &*stats);
  REQUIRE(scores.ok());
  int64_t cols = 0;
  const std::vector<float> context = tap_input(*t.encoder, calib, "encoder.layer.1.attention.output.dense", cols);
  const Tensor& wo = t.weights.layers[1].attention_output_weight;
  const int64_t d = t.config.head_dim(), rows = static_cast<int64_t>(context.size()) / cols;
  for (int64_t h = 0; h < 4; ++h) {  // ||C_h W_ohᵀ||_F, token by token
    double e = 0;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t o = 0; o < wo.dim(0); ++o) {
        double s = 0;
        for (int64_t i = 0; i < d; ++i)
          s += double(context[r * cols + h * d + i]) * wo.data<float>()[o * cols + h * d + i];
        e += s * s;
      }
    }
    CHECK(scores->heads[1][h] == Approx(std::sqrt(e)).epsilon(1e-4));
  }
  const std::vector<float> act = tap_input(*t.encoder, calib, "encoder.layer.2.output.dense", cols);
  const Tensor& wout = t.weights.layers[2].output_weight;
  for (int64_t j : {0, 7, 31}) {
    double a2 = 0, w2 = 0;
    for (int64_t r = 0; r < rows; ++r) a2 += double(act[r * cols + j]) * act[r * cols + j];
    for (int64_t o = 0; o < wout.dim(0); ++o)
      w2 += double(wout.data<float>()[o * cols + j]) * wout.data<float>()[o * cols + j];
    CHECK(scores->neurons[2][j] == Approx(std::sqrt(a2 * w2)).epsilon(1e-4));
  }
  // Magnitude: L1 of everything head 2 of layer 0 owns.
  auto l1 = score_units(t.config, t.weights, Importance::kL1, nullptr);
  REQUIRE(l1.ok());
  const EncoderLayerWeights& w = t.weights.layers[0];
  double sum = 0;
  for (const Tensor* m : {&w.q_weight, &w.k_weight, &w.v_weight}) {
    for (int64_t i = 2 * d * 16; i < 3 * d * 16; ++i) sum += std::fabs(m->data<float>()[i]);
  }
  for (const Tensor* b : {&w.q_bias, &w.k_bias, &w.v_bias}) {
    for (int64_t i = 2 * d; i < 3 * d; ++i) sum += std::fabs(b->data<float>()[i]);
  }
  for (int64_t o = 0; o < 16; ++o) {
    for (int64_t i = 2 * d; i < 3 * d; ++i) sum += std::fabs(w.attention_output_weight.data<float>()[o * 16 + i]);
  }
  CHECK(l1->heads[0][2] == Approx(sum).epsilon(1e-5));
  CHECK_FALSE(score_units(t.config, t.weights, Importance::kActivation, nullptr).ok());
  CHECK_FALSE(parse_importance("wanda").ok());
}

TEST_CASE("plan_by_amounts removes the lowest scores, counted as torch does, and keeps a head in every layer") {
  Tiny t;
  UnitScores s;
  s.heads = {{4, 1, 3, 2}, {1, 2, 3, 4}, {9, 9, 1, 9}};
  s.neurons.assign(3, std::vector<double>(32));
  for (int64_t j = 0; j < 32; ++j) s.neurons[1][j] = 32 - j;  // neuron 31 least important
  LayerAmounts a = uniform(t.config, 0.5, 0.0);
  a.heads[2] = 0.99;
  a.ffn[1] = 0.25;
  auto plan = plan_by_amounts(t.config, s, a);
  REQUIRE(plan.ok());
  CHECK(plan->heads.at(0) == std::vector<int64_t>{1, 3});
  CHECK(plan->heads.at(1) == std::vector<int64_t>{0, 1});
  CHECK(plan->heads.at(2) == std::vector<int64_t>{0, 1, 2});  // 4 rounded, capped at 3: the best head stays
  CHECK(plan->neurons.count(0) == 0);
  CHECK(plan->neurons.at(1) == std::vector<int64_t>{24, 25, 26, 27, 28, 29, 30, 31});
  a.ffn[0] = 1.0;
  auto bad = plan_by_amounts(t.config, s, a);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(std::string(bad.status().message()),
             Catch::Contains("layer 0 ffn: amount is 1; expected a fraction in [0, 1)"));
}

TEST_CASE("reconstruction lowers the pruned layer's output error on held-out activations") {
  Tiny t;
  const PackedSequences calib = random_batch(40, 12, 2), heldout = random_batch(20, 12, 3);
  auto stats = collect_activations(*t.encoder, {calib});
  REQUIRE(stats.ok());
  StructuredPlan plan;
  for (int64_t j = 0; j < 32; j += 2) plan.neurons[0].push_back(j);  // half of layer 0's neurons
  plan.heads[0] = {1};
  auto plain = prune_structured(t.config, t.weights, plan);
  auto refit = prune_and_reconstruct(t.config, t.weights, plan, *stats, {});
  INFO(refit.status().message());
  REQUIRE(plain.ok());
  REQUIRE(refit.ok());
  std::vector<int64_t> kept;
  for (int64_t j = 1; j < 32; j += 2) kept.push_back(j);
  std::vector<int64_t> all(32);
  std::iota(all.begin(), all.end(), 0);
  // Held-out inputs of the output projection, from the unpruned model (the same for all three: only the
  // projection changes between them).
  int64_t cols = 0;
  const std::vector<float> x = tap_input(*t.encoder, heldout, "encoder.layer.0.output.dense", cols);
  const EncoderLayerWeights& full = t.weights.layers[0];
  const auto reference = project(x, cols, full.output_weight, full.output_bias, all);
  const double without = rms_diff(
      project(x, cols, plain->weights.layers[0].output_weight, plain->weights.layers[0].output_bias, kept), reference);
  const double with = rms_diff(
      project(x, cols, refit->weights.layers[0].output_weight, refit->weights.layers[0].output_bias, kept), reference);
  INFO("rms error without " << without << ", with " << with);
  CHECK(with < 0.7 * without);

  // And the whole model's last hidden states move less from the unpruned ones, re-fitted either way.
  auto hidden = [&](const PrunedModel& m) {
    auto e = BertEncoder::create(m.config, m.weights, Device::kCPU).value();
    std::vector<float> h(static_cast<size_t>(heldout.total_tokens() * 16));
    REQUIRE(e->forward(heldout, h.data()).ok());
    return std::vector<double>(h.begin(), h.end());
  };
  std::vector<float> base(static_cast<size_t>(heldout.total_tokens() * 16));
  REQUIRE(t.encoder->forward(heldout, base.data()).ok());
  const std::vector<double> base_d(base.begin(), base.end());
  CHECK(rms_diff(hidden(*refit), base_d) < rms_diff(hidden(*plain), base_d));
  auto sequential = prune_and_reconstruct(t.config, t.weights, plan, *stats, {.damping = 0.1, .sequential = true});
  INFO(sequential.status().message());
  REQUIRE(sequential.ok());
  CHECK(rms_diff(hidden(*sequential), base_d) < rms_diff(hidden(*plain), base_d));
  // Sequential re-fits every projection from the first pruned layer on, pruned or not.
  CHECK(std::memcmp(sequential->weights.layers[2].output_weight.raw_data(),
                    t.weights.layers[2].output_weight.raw_data(), t.weights.layers[2].output_weight.nbytes()) != 0);
  CHECK(std::memcmp(refit->weights.layers[2].output_weight.raw_data(), t.weights.layers[2].output_weight.raw_data(),
                    t.weights.layers[2].output_weight.nbytes()) == 0);
}

TEST_CASE("reconstruction: keeping every column reproduces the projection, a singular system is refused") {
  Tiny t;
  auto stats = collect_activations(*t.encoder, {random_batch(40, 12, 4)});
  REQUIRE(stats.ok());
  const LayerActivations& a = stats->layers[1];
  const EncoderLayerWeights& w = t.weights.layers[1];
  std::vector<int64_t> all(32);
  std::iota(all.begin(), all.end(), 0);
  // With every column kept (and little damping) the re-fitted projection computes what the original
  // does on held-out activations; the weights themselves need not match, as GeLU outputs are nearly collinear.
  auto same = ridge_refit("encoder.layer.1.output.dense", w.output_weight, w.output_bias, a.ffn_gram, a.ffn_sum,
                          a.tokens, all, {.damping = 1e-4});
  INFO(same.status().message());
  REQUIRE(same.ok());
  int64_t cols = 0;
  const std::vector<float> x = tap_input(*t.encoder, random_batch(10, 12, 7), "encoder.layer.1.output.dense", cols);
  const auto reference = project(x, cols, w.output_weight, w.output_bias, all);
  double scale = 0;
  for (double v : reference) scale = std::max(scale, std::fabs(v));
  CHECK(rms_diff(project(x, cols, same->weight, same->bias, all), reference) < 5e-3 * scale);

  // Three tokens cannot determine 16 kept columns: singular without damping, fine with it.
  auto few = collect_activations(*t.encoder, {random_batch(1, 3, 5)});
  REQUIRE(few.ok());
  std::vector<int64_t> half;
  for (int64_t j = 0; j < 32; j += 2) half.push_back(j);
  const LayerActivations& f = few->layers[1];
  auto singular = ridge_refit("encoder.layer.1.output.dense", w.output_weight, w.output_bias, f.ffn_gram, f.ffn_sum,
                              f.tokens, half, {.damping = 0.0});
  REQUIRE_FALSE(singular.ok());
  CHECK_THAT(std::string(singular.status().message()),
             Catch::Contains("reconstruction of encoder.layer.1.output.dense: the least-squares system is singular"));
  CHECK(ridge_refit("x", w.output_weight, w.output_bias, f.ffn_gram, f.ffn_sum, f.tokens, half, {}).ok());
  CHECK_FALSE(
      ridge_refit("x", w.output_weight, w.output_bias, f.ffn_gram, f.ffn_sum, f.tokens, half, {.damping = -1.0}).ok());
  // Statistics of another model are refused.
  auto other = collect_activations(*t.encoder, {random_batch(2, 3, 6)});
  REQUIRE(other.ok());
  other->layers.pop_back();
  CHECK_FALSE(prune_and_reconstruct(t.config, t.weights, StructuredPlan{}, *other, {}).ok());
}
