// The quantizer's speed: the MiniLM-L6 encoder per precision plan at (32, 128) and (1, 16), and one linear layer
// per weight precision at the MiniLM shapes, so that a plan's speed-up can be traced to its GEMMs. Run with
// interleaved repetitions, so that the machine's drift hits every plan alike:
//   build/release/benchmarks/brisk_quant_benchmark --benchmark_repetitions=5 \
//       --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "brisk/core/parallel.h"
#include "brisk/model/encoder.h"
#include "brisk/model/loader.h"
#include "brisk/model/tokenizer.h"
#include "brisk/quant/quantizer.h"
#include "brisk/quant/scheme.h"
#include "test_util.h"

namespace {

using namespace brisk;
using namespace brisk::quant;

constexpr const char* kPlans[] = {"fp32", "bf16", "int8", "int8-static", "mixed"};

// One encoder per plan, built on first use, as `brisk quantize` makes them: int8 layers with SmoothQuant (alpha 0.5),
// int8-static calibrated (percentile), both on 64 of the bundled calibration texts.
const BertEncoder* encoder_for(int plan_index) {
  static std::map<int, std::unique_ptr<BertEncoder>> encoders;
  if (auto it = encoders.find(plan_index); it != encoders.end()) return it->second.get();
  const std::string dir = testing::model_dir().string();
  static const LoadedModel model = load_model(dir, {.fp32_directory_only = true}).value();
  const BertConfig& config = model.config;
  const EncoderWeights& fp32 = model.weights;
  const TextTokenizer& tok = model.tokenizer;
  std::ifstream in(std::string(BRISK_TEST_DATA_DIR) + "/../../benchmarks/data/calibration_texts.txt");
  std::vector<PackedSequences> batches(1);
  for (std::string line; std::getline(in, line) && batches[0].size() < 64;)
    batches[0].add(tok.encode(line, 128).value());
  auto reference = BertEncoder::create(config, fp32, Device::kCPU).value();
  const SmoothQuantOptions smooth{0.5f, channel_absmax(*reference, batches).value()};
  ActivationRanges ranges;
  const std::string plan = kPlans[plan_index];
  if (plan == "int8-static") {
    CalibrationOptions options;
    options.method = CalibrationMethod::kPercentile;
    ranges = calibrate(*reference, batches, options, nullptr).value();
  }
  const LayerPrecisions p = PrecisionPlan::parse(plan).value().resolve(layer_names(config)).value();
  auto encoder =
      BertEncoder::create(config, quantize_weights(fp32, config, p, ranges, &smooth).value(), Device::kCPU).value();
  return (encoders[plan_index] = std::move(encoder)).get();
}

// args: plan index, batch, seq. Mean pooling and normalisation included, like Runtime::embed.
void BM_QuantEncoder(benchmark::State& state) {
  set_num_threads(2);
  const BertEncoder* encoder = encoder_for(static_cast<int>(state.range(0)));
  const int64_t batch = state.range(1), seq = state.range(2);
  PackedSequences packed;
  std::vector<int32_t> ids(static_cast<size_t>(seq), 7592);  // "hello"
  ids.front() = 101, ids.back() = 102;
  for (int64_t b = 0; b < batch; ++b) packed.add(ids);
  std::vector<float> out(static_cast<size_t>(batch * encoder->hidden_size()));
  for (auto _ : state) {
    if (!encoder->embed(packed, Pooling::kMean, true, out.data()).ok()) state.SkipWithError("embed failed");
  }
  state.SetLabel(kPlans[state.range(0)]);
  state.counters["seq/s"] = benchmark::Counter(double(batch), benchmark::Counter::kIsIterationInvariantRate);
  // The linear layers' operations (2 per multiply-add), for the fraction of the VNNI/FMA peak.
  const double linear_ops = 2.0 * double(batch * seq) * 6 * (4 * 384 * 384 + 2 * 384 * 1536);
  state.counters["GOP/s"] =
      benchmark::Counter(linear_ops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_QuantEncoder)
    ->ArgNames({"plan", "B", "T"})
    ->ArgsProduct({{0, 1, 2, 3, 4}, {32}, {128}})
    ->ArgsProduct({{0, 1, 2, 3, 4}, {1}, {16}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// args: rows, out, in, weight precision (0 f32, 1 bf16, 2 int8 dynamic).
void BM_QuantLinear(benchmark::State& state) {
  set_num_threads(2);
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  auto w = testing::random_floats(static_cast<size_t>(n * k), -0.05f, 0.05f, 7);
  auto x = testing::random_floats(static_cast<size_t>(m * k), -1.0f, 1.0f, 8);
  const Tensor wf = Tensor::borrow(w.data(), {n, k}, DType::kF32);
  StatusOr<kernels::Linear> fc = absl::InternalError("unset");
  const char* names[] = {"f32", "bf16", "int8"};
  if (state.range(3) == 0) fc = kernels::Linear::create(wf, Tensor(), Device::kCPU);
  if (state.range(3) == 1) fc = kernels::Linear::create(to_bfloat16(wf, "w").value(), Tensor(), Device::kCPU);
  if (state.range(3) == 2) {
    Int8Matrix q = quantize_int8(wf, "w").value();
    fc = kernels::Linear::create(q.values, Tensor(), Device::kCPU, kernels::QuantScales{q.scales, 0.0f, Tensor()});
  }
  std::vector<float> y(static_cast<size_t>(m * n));
  for (auto _ : state) {
    if (!fc->forward(x.data(), m, y.data(), kernels::GemmEpilogue::kBias).ok()) state.SkipWithError("forward failed");
    benchmark::ClobberMemory();
  }
  state.SetLabel(names[state.range(3)]);
  state.counters["GOP/s"] =
      benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_QuantLinear)
    ->ArgNames({"M", "N", "K", "prec"})
    ->ArgsProduct({{16, 4096}, {1152}, {384}, {0, 1, 2}})
    ->ArgsProduct({{16, 4096}, {1536}, {384}, {0, 1, 2}})
    ->ArgsProduct({{16, 4096}, {384}, {1536}, {0, 1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
