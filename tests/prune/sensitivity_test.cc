// Sensitivity analysis on a tiny model whose sensitive parts are known by construction, guided allocation against a
// hand-made sweep, and the iterative schedule.
#include <catch2/catch.hpp>

#include <random>

#include "brisk/prune/allocation.h"
#include "brisk/prune/sensitivity.h"
#include "brisk/quant/quantizer.h"
#include "tiny_model.h"

using namespace brisk;
using namespace brisk::prune;

namespace {

using testing::random_batch;

// Multiplies columns [c0, c1) of a weight (an owned copy replaces it).
void scale_columns(Tensor& t, int64_t c0, int64_t c1, float factor) {
  Tensor copy = Tensor::empty(t.shape(), DType::kF32).value();
  std::memcpy(copy.raw_data(), t.raw_data(), t.nbytes());
  for (int64_t r = 0; r < t.dim(0); ++r) {
    for (int64_t c = c0; c < c1; ++c) copy.data<float>()[r * t.dim(1) + c] *= factor;
  }
  t = copy;
}

struct Constructed : testing::TinyBert4 {
  std::vector<PackedSequences> eval = {random_batch(8, 10, 11), random_batch(8, 7, 12)};

  // Layer 1's feed-forward dominates its output; layer 0's barely contributes. Layer 2's head 3 is dead, its
  // head 1 loud.
  Constructed() {
    scale_columns(weights.layers[1].output_weight, 0, 32, 8.0f);
    scale_columns(weights.layers[0].output_weight, 0, 32, 0.02f);
    scale_columns(weights.layers[2].attention_output_weight, 12, 16, 0.0f);
    scale_columns(weights.layers[2].attention_output_weight, 4, 8, 6.0f);
  }
};

const SensitivityPoint& find(const SensitivityTable& t, const std::string& unit, double level) {
  for (const SensitivityPoint& p : t.points) {
    if (p.unit == unit && std::fabs(p.sparsity - level) < 1e-9) return p;
  }
  FAIL("no point " << unit << " at " << level);
  return t.points.front();
}

}  // namespace

TEST_CASE("a sweep finds the feed-forward that was made sensitive, and leaves the model as it was") {
  Constructed m;
  SensitivityOptions o;
  o.levels = {0.0, 0.25, 0.5, 0.75};
  o.importance = Importance::kL2;
  int64_t calls = 0, last_total = 0;
  o.progress = [&](std::string_view, int64_t done, int64_t total) {
    ++calls;
    last_total = total;
    CHECK(done <= total);
  };
  auto t = analyze_sensitivity(m.config, m.weights, m.eval, nullptr, o);
  INFO(t.status().message());
  REQUIRE(t.ok());
  CHECK(t->mode == "sweep");
  CHECK(t->baseline == Approx(1.0));
  CHECK(t->points.size() == 3 * 2 * 4);
  CHECK(calls == 3 * 2 * 3);
  CHECK(last_total == 18);
  const SensitivityPoint& loud = find(*t, "encoder.layer.1.intermediate", 0.5);
  const SensitivityPoint& quiet = find(*t, "encoder.layer.0.intermediate", 0.5);
  CHECK(loud.kind == "ffn");
  CHECK(loud.series == "layer 1");
  CHECK(loud.parameters_removed == 16 * (2 * 16 + 1));
  CHECK(find(*t, "encoder.layer.1.intermediate", 0.0).metric == t->baseline);
  INFO("metric with half of layer 1's ffn gone " << loud.metric << ", of layer 0's " << quiet.metric);
  CHECK(1.0 - loud.metric > 10 * (1.0 - quiet.metric));
  CHECK(quiet.metric > 0.995);
  CHECK(find(*t, "encoder.layer.2.attention", 0.25).parameters_removed == 4 * 16 * 4 + 3 * 4);

  // Element-wise sweeps of each linear weight (Distiller's per-parameter sweep).
  o.granularity = "tensor";
  o.levels = {0.0, 0.5};
  auto tensors = analyze_sensitivity(m.config, m.weights, m.eval, nullptr, o);
  REQUIRE(tensors.ok());
  CHECK(tensors->points.size() == 3 * 6 * 2);
  const SensitivityPoint& ffn1 = find(*tensors, "encoder.layer.1.output.dense.weight", 0.5);
  CHECK(ffn1.kind == "output");
  CHECK(ffn1.parameters_removed == 16 * 32 / 2);
  CHECK(ffn1.metric < find(*tensors, "encoder.layer.0.output.dense.weight", 0.5).metric);

  // A user metric replaces the built-in one.
  o.granularity = "structure";
  o.metric = [](const BertEncoder& e) -> StatusOr<double> { return static_cast<double>(e.config().layer_heads(2)); };
  o.metric_name = "heads_in_layer_2";
  auto user = analyze_sensitivity(m.config, m.weights, m.eval, nullptr, o);
  REQUIRE(user.ok());
  CHECK(user->metric_name == "heads_in_layer_2");
  CHECK(user->baseline == 4.0);
  CHECK(find(*user, "encoder.layer.2.attention", 0.5).metric == 2.0);
}

TEST_CASE("zero mode: a dead head costs nothing, a loud head the most in its layer, layers are removed whole") {
  Constructed m;
  SensitivityOptions o;
  o.mode = "zero";
  auto t = analyze_sensitivity(m.config, m.weights, m.eval, nullptr, o);
  INFO(t.status().message());
  REQUIRE(t.ok());
  CHECK(t->points.size() == 3 + 12);
  const SensitivityPoint& dead = find(*t, "encoder.layer.2.attention.head.3", 0.25);
  CHECK(dead.metric == Approx(t->baseline).margin(1e-6));
  CHECK(dead.index == 3);
  CHECK(dead.kind == "head");
  double loudest = 1.0;
  int64_t which = -1;
  for (int64_t h = 0; h < 4; ++h) {
    const double metric = find(*t, absl::StrCat("encoder.layer.2.attention.head.", h), 0.25).metric;
    if (metric < loudest) loudest = metric, which = h;
  }
  CHECK(which == 1);
  const SensitivityPoint& layer = find(*t, "encoder.layer.1", 1.0);
  CHECK(layer.kind == "layer");
  CHECK(layer.parameters_removed == 4 * (16 * 16 + 16) + 2 * 16 * 32 + 32 + 16 + 4 * 16);
  // The csv carries the drop per parameter.
  CHECK_THAT(t->to_csv(), Catch::Contains("drop_per_parameter"));
  o.mode = "scan";
  CHECK_FALSE(analyze_sensitivity(m.config, m.weights, m.eval, nullptr, o).ok());
  o.mode = "sweep";
  o.levels = {0.0, 1.0};
  auto bad = analyze_sensitivity(m.config, m.weights, m.eval, nullptr, o);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("amount is 1; expected a fraction in [0, 1)"));
}

TEST_CASE("guided allocation gives the sensitive layer less, and meets the target") {
  Constructed m;
  // A hand-made sweep: layer 1's curves fall steeply, the others stay flat.
  SensitivityTable sweep;
  sweep.mode = "sweep";
  sweep.baseline = 1.0;
  for (int64_t l = 0; l < 3; ++l) {
    for (const char* kind : {"heads", "ffn"}) {
      for (double level : {0.0, 0.25, 0.5, 0.75}) {
        SensitivityPoint p;
        p.kind = kind;
        p.layer = l;
        p.sparsity = level;
        p.metric = 1.0 - level * (l == 1 ? 0.5 : 0.01);
        sweep.points.push_back(p);
      }
    }
  }
  for (Budget budget : {Budget::kParameters, Budget::kFlops}) {
    auto a = allocate(m.config, sweep, {.target = 0.4, .budget = budget, .seq_len = 16});
    INFO(a.status().message());
    REQUIRE(a.ok());
    CHECK(a->ffn[1] == 0.0);
    CHECK(a->heads[1] == 0.0);
    CHECK(a->ffn[0] + a->ffn[2] > 0.5);
    CHECK(removed_cost(m.config, *a, budget, 16) >= 0.4 * layers_cost(m.config, budget, 16));
  }
  CHECK(head_cost(m.config, Budget::kParameters, 16) == 4 * 16 * 4 + 3 * 4);
  CHECK(neuron_cost(m.config, Budget::kFlops, 16) == 4 * 16 * 16);
  auto too_far = allocate(m.config, sweep, {.target = 0.9});
  REQUIRE_FALSE(too_far.ok());
  CHECK_THAT(std::string(too_far.status().message()), Catch::Contains("cannot be met with the sweep's levels"));
  SensitivityTable zero;
  zero.mode = "zero";
  CHECK_FALSE(allocate(m.config, zero, {}).ok());
}

TEST_CASE("the iterative schedule steps up until the metric leaves the tolerance, and reports its path") {
  Constructed m;
  auto unpruned = BertEncoder::create(m.config, m.weights, Device::kCPU).value();
  auto stats = collect_activations(*unpruned, m.eval);
  REQUIRE(stats.ok());
  const std::vector<float> reference = quant::embed_all(*unpruned, m.eval, Pooling::kMean).value();
  const AccuracyMetric metric = mean_cosine_metric(m.eval, reference, 16, Pooling::kMean);
  ScheduleOptions o;
  o.step = 0.2;
  o.min_metric = 0.98;
  o.guided = false;
  o.reconstruct = false;  // re-fitted on the evaluation text itself, the tiny model would hardly move
  auto r = iterative_schedule(m.config, m.weights, *stats, nullptr, metric, o);
  INFO(r.status().message());
  REQUIRE(r.ok());
  REQUIRE_FALSE(r->path.empty());
  for (size_t i = 0; i + 1 < r->path.size(); ++i) CHECK(r->path[i].accepted);
  CHECK((r->path.back().accepted == false || r->path.size() == 4));
  CHECK(r->path.front().target == Approx(0.2));
  double last_accepted = 0.0;
  for (const ScheduleStep& step : r->path) {
    if (step.accepted) last_accepted = step.target;
    CHECK(step.accepted == (step.metric >= 0.98));
  }
  CHECK(r->amounts.ffn[0] == Approx(last_accepted));
  // A tolerance the first step already breaks: one rejected step, nothing pruned.
  o.min_metric = 0.99999;
  auto strict = iterative_schedule(m.config, m.weights, *stats, nullptr, metric, o);
  REQUIRE(strict.ok());
  REQUIRE(strict->path.size() == 1);
  CHECK_FALSE(strict->path[0].accepted);
  CHECK(strict->amounts.ffn[0] == 0.0);
  o.guided = true;
  CHECK_FALSE(iterative_schedule(m.config, m.weights, *stats, nullptr, metric, o).ok());
}
