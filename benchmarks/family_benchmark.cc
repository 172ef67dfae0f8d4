// The model families at one width: BERT (all-MiniLM-L6-v2's shape: 6 layers, hidden 384, 12 heads, feed-forward
// 1536), XLM-RoBERTa of the same shape, and a Qwen3 decoder of the same width and parameter count per layer (12 heads
// of 32, 12 or 4 key/value heads, SwiGLU 1024: 3 x 384 x 1024 = 2 x 384 x 1536), with random weights; the whole
// forward pass in f32 on the CPU, reported per token (issue 29: each new family within 1.1x of BERT per token).
//   build/release/benchmarks/brisk_family_benchmark --benchmark_repetitions=5 --benchmark_report_aggregates_only
//     --benchmark_enable_random_interleaving=true
// Instruction counts of one forward pass, whatever the machine's load:
//   valgrind --tool=callgrind "--toggle-collect=brisk::BertEncoder::embed*" build/release/benchmarks/...
//     --benchmark_filter="family:0/batch:2/seq:128" --benchmark_min_time=0
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "brisk/core/parallel.h"
#include "brisk/model/encoder.h"
#include "test_util.h"

namespace {

enum Family : int64_t { kBert, kXlmr, kQwen3, kQwen3Gqa };

std::string config_json(int64_t family) {
  const std::string common =
      R"("vocab_size": 30522, "hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12)";
  switch (family) {
    case kXlmr:
      return "{" + common + R"(, "model_type": "xlm-roberta", "intermediate_size": 1536,
                               "max_position_embeddings": 514, "pad_token_id": 1})";
    case kQwen3:
    case kQwen3Gqa:
      return "{" + common + R"(, "model_type": "qwen3", "intermediate_size": 1024, "head_dim": 32,
                               "max_position_embeddings": 4096, "rope_theta": 1000000.0, "num_key_value_heads": )" +
             (family == kQwen3 ? "12}" : "4}");
    default: return "{" + common + R"(, "model_type": "bert", "intermediate_size": 1536})";
  }
}

brisk::Tensor random_tensor(const std::vector<int64_t>& shape, float lo, float hi, uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  brisk::Tensor t = brisk::Tensor::empty(shape, brisk::DType::kF32).value();
  const std::vector<float> v = brisk::testing::random_floats(static_cast<size_t>(n), lo, hi, seed);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

// Random weights of the config's shapes: N(0)-ish linears, norms near 1.
std::unique_ptr<brisk::BertEncoder> make_encoder(int64_t family) {
  const brisk::BertConfig c = brisk::BertConfig::from_json_string(config_json(family), "config.json").value();
  brisk::EncoderWeights w;
  w.layers.resize(static_cast<size_t>(c.num_hidden_layers));
  uint32_t seed = 1;
  w.embeddings.word = random_tensor({c.vocab_size, c.hidden_size}, -0.05f, 0.05f, seed++);
  for (const brisk::LinearSlot& s : brisk::linear_slots(w, c)) {
    *s.weight = random_tensor({s.out_features, s.in_features}, -0.05f, 0.05f, seed++);
    *s.bias = random_tensor({s.out_features}, -0.01f, 0.01f, seed++);
  }
  for (const brisk::F32TensorSlot& t : brisk::f32_tensors(w, c)) *t.tensor = random_tensor(t.shape, 0.9f, 1.1f, seed++);
  return brisk::BertEncoder::create(c, std::move(w), brisk::Device::kCPU).value();
}

// args: family, texts, tokens per text, threads
void BM_FamilyForward(benchmark::State& state) {
  const int64_t family = state.range(0), batch = state.range(1), seq = state.range(2);
  brisk::set_num_threads(static_cast<int>(state.range(3)));
  const auto encoder = make_encoder(family);
  brisk::PackedSequences in;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<int32_t> ids(static_cast<size_t>(seq));
    for (int64_t t = 0; t < seq; ++t)
      ids[static_cast<size_t>(t)] = static_cast<int32_t>(100 + (b * 31 + t * 7) % 20000);
    in.add(ids);
  }
  std::vector<float> out(static_cast<size_t>(batch * encoder->hidden_size()));
  for (auto _ : state) {
    if (!encoder->embed(in, brisk::Pooling::kMean, true, out.data()).ok()) state.SkipWithError("embed failed");
    benchmark::ClobberMemory();
  }
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(batch * seq), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_FamilyForward)
    ->ArgNames({"family", "batch", "seq", "threads"})
    ->ArgsProduct({{kBert, kXlmr, kQwen3, kQwen3Gqa}, {32}, {128}, {1, 2}})
    ->ArgsProduct({{kBert, kXlmr, kQwen3, kQwen3Gqa}, {1}, {16}, {1}})
    ->ArgsProduct({{kBert, kXlmr, kQwen3, kQwen3Gqa}, {2}, {128}, {1}})  // small enough for callgrind
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
