// BertEncoder against Hugging Face transformers on two tiny random models (tests/data/make_tiny_golden.py):
// a BERT (GeLU, token types, read from pytorch_model.bin when the build has libtorch, else safetensors) and a
// DistilBERT (ReLU, no token types). Each sequence alone and all of them packed into one batch must give HF's
// last hidden states.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "brisk/core/allocator.h"
#include "brisk/core/device.h"
#include "brisk/core/parallel.h"
#include "brisk/core/cpu_features.h"
#include "brisk/model/config.h"
#include "brisk/model/encoder.h"
#include "brisk/model/weights.h"
#include "golden_json.h"
#include "kernels/kernel_test_util.h"

namespace {

struct GoldenSequence {
  std::vector<int32_t> ids, token_type_ids;
  std::vector<float> hidden;  // [len, hidden] row-major
};

std::vector<GoldenSequence> load_golden(const std::string& folder) {
  std::ifstream in(brisk::testing::test_data_dir() / folder / "golden_hidden.json");
  REQUIRE(in.good());
  const auto j = nlohmann::json::parse(in);
  std::vector<GoldenSequence> out;
  for (const auto& item : j.at("items")) {
    GoldenSequence g{
        item.at("ids").get<std::vector<int32_t>>(), item.at("token_type_ids").get<std::vector<int32_t>>(), {}};
    for (const auto& row : item.at("hidden")) {
      for (float v : row.get<std::vector<float>>()) g.hidden.push_back(v);
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::unique_ptr<brisk::BertEncoder> load_encoder(const std::string& folder, const brisk::EncoderOptions& options = {}) {
  const std::string dir = (brisk::testing::test_data_dir() / folder).string();
  auto config = brisk::BertConfig::from_json_file(dir + "/config.json");
  REQUIRE(config.ok());
  auto weights = brisk::EncoderWeights::load(dir, *config);
  INFO(weights.status().message());
  REQUIRE(weights.ok());
  auto encoder = brisk::BertEncoder::create(*config, std::move(*weights), options);
  INFO(encoder.status().message());
  REQUIRE(encoder.ok());
  return std::move(*encoder);
}

void add(brisk::PackedSequences& batch, const GoldenSequence& g) {
  batch.add(g.ids);
  batch.token_type_ids.insert(batch.token_type_ids.end(), g.token_type_ids.begin(), g.token_type_ids.end());
}

void check_model(const std::string& folder, const brisk::EncoderOptions& options = {}) {
  const auto golden = load_golden(folder);
  REQUIRE(golden.size() >= 3);
  auto encoder = load_encoder(folder, options);
  const double tolerance = brisk::testing::tolerance_for(options.activation);
  const int64_t h = encoder->hidden_size();
  for (const auto& g : golden) {
    brisk::PackedSequences one;
    add(one, g);
    std::vector<float> hidden(static_cast<size_t>(one.total_tokens() * h));
    REQUIRE(encoder->forward(one, hidden.data()).ok());
    INFO(folder << ": sequence of " << g.ids.size() << " tokens");
    CHECK(brisk::testing::max_abs_diff(hidden.data(), g.hidden) <= tolerance);
  }
  brisk::PackedSequences all;
  for (const auto& g : golden) add(all, g);
  std::vector<float> hidden(static_cast<size_t>(all.total_tokens() * h));
  REQUIRE(encoder->forward(all, hidden.data()).ok());
  for (size_t i = 0; i < golden.size(); ++i) {
    INFO(folder << ": sequence " << i << " inside the packed batch");
    CHECK(brisk::testing::max_abs_diff(hidden.data() + all.offsets[i] * h, golden[i].hidden) <= tolerance);
  }
}

}  // namespace

TEST_CASE("tiny BERT hidden states match transformers", "[encoder][model]") { check_model("tiny_bert"); }

TEST_CASE("tiny DistilBERT hidden states match transformers", "[encoder][model]") { check_model("tiny_distilbert"); }

TEST_CASE("with padding removal off, the padded pass matches transformers too", "[encoder][model]") {
  brisk::EncoderOptions padded;
  padded.remove_padding = false;
  check_model("tiny_bert", padded);
  check_model("tiny_distilbert", padded);
}

TEST_CASE("under reproducible arithmetic, the hidden states match transformers too", "[encoder][model]") {
  check_model("tiny_bert", {.reproducible = true});
  check_model("tiny_distilbert", {.reproducible = true});
}

// The same bits at every ISA cap this CPU has and every thread count, on the tiny model of every family, and values
// close to the default path's (which, like the reproducible path itself, these tests and xlmr_test and qwen_test check
// against transformers).
TEST_CASE("a reproducible encoder gives the same bits at every ISA cap and thread count", "[encoder][model]") {
  const std::string folder = GENERATE("tiny_bert", "tiny_distilbert", "tiny_xlmr", "tiny_qwen2", "tiny_qwen3");
  INFO(folder);
  const auto fast = load_encoder(folder);
  const auto reproducible = load_encoder(folder, {.reproducible = true});
  // Three sequences of random ids past the special ones (XLM-R's <pad> would move the positions).
  const int64_t vocab = reproducible->config().vocab_size;
  std::mt19937 rng(7);
  brisk::PackedSequences batch;
  for (int len : {6, 13, 2}) {  // the tiny BERTs hold 16 positions
    std::vector<int32_t> ids(static_cast<size_t>(len));
    for (int32_t& id : ids) id = static_cast<int32_t>(5 + rng() % static_cast<uint32_t>(vocab - 5));
    batch.add(ids);
  }
  const int64_t h = reproducible->hidden_size();
  std::vector<float> want(static_cast<size_t>(batch.total_tokens() * h));
  const brisk::Status ran = fast->forward(batch, want.data());
  INFO(ran.message());
  REQUIRE(ran.ok());

  std::vector<float> first;
  for (brisk::CpuIsa level : brisk::kAllCpuIsas) {
    if (!brisk::cpu_supports(level)) continue;
    const brisk::testing::IsaCapGuard cap(level);
    for (int threads : {1, 2, 3}) {
      INFO("ISA cap " << brisk::cpu_isa_name(level) << ", " << threads << " threads");
      const brisk::ScopedNumThreads scoped(threads);
      std::vector<float> got(want.size());
      REQUIRE(reproducible->forward(batch, got.data()).ok());
      if (first.empty()) {
        first = got;
        double worst = 0.0;
        for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - want[i]));
        CHECK(worst <= 1e-4);  // the default path's values, to its own rounding
      }
      CHECK(std::memcmp(got.data(), first.data(), got.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("an encoder on cuda fails clearly where there is none, f16 on the cpu is refused", "[encoder][model]") {
  const std::string dir = (brisk::testing::test_data_dir() / "tiny_bert").string();
  auto config = brisk::BertConfig::from_json_file(dir + "/config.json");
  REQUIRE(config.ok());
  auto weights = brisk::EncoderWeights::load(dir, *config);
  REQUIRE(weights.ok());
  brisk::EncoderOptions f16_cpu;
  f16_cpu.activation = brisk::DType::kF16;
  auto refused = brisk::BertEncoder::create(*config, *weights, f16_cpu);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("activation is f16 on cpu; expected f32 (cpu)") != std::string::npos);
  refused = brisk::BertEncoder::create(*config, *weights, {.device = brisk::Device::kCUDA, .reproducible = true});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() == "EncoderOptions::reproducible is set on cuda; expected cpu");
  if (brisk::cuda_device_count() > 0) return;  // the [cuda] test below covers a real GPU
  auto gpu = brisk::BertEncoder::create(*config, *weights, brisk::Device::kCUDA);
  REQUIRE_FALSE(gpu.ok());
  if (brisk::built_with_cuda()) {
    CHECK(gpu.status().code() == absl::StatusCode::kNotFound);
    CHECK(gpu.status().message().find("cuda:0 is not present") != std::string::npos);
  } else {
    CHECK(gpu.status().code() == absl::StatusCode::kUnimplemented);
    CHECK(gpu.status().message().find("BRISK_WITH_CUDA") != std::string::npos);
  }
}

TEST_CASE("on a GPU, the encoder matches transformers in f32, f16 and bf16, packed and padded",
          "[encoder][model][cuda]") {
  BRISK_SKIP_WITHOUT_CUDA();
  for (const brisk::DType activation : {brisk::DType::kF32, brisk::DType::kF16, brisk::DType::kBF16}) {
    for (const bool remove_padding : {true, false}) {
      INFO("activation " << brisk::dtype_name(activation) << ", remove_padding " << remove_padding);
      const brisk::EncoderOptions options{brisk::Device::kCUDA, activation, remove_padding};
      check_model("tiny_bert", options);
      check_model("tiny_distilbert", options);
    }
  }
  const auto before = brisk::device_memory_stats(brisk::Device::kCUDA);
  {
    auto encoder = load_encoder("tiny_bert", {brisk::Device::kCUDA, brisk::DType::kF16, true});
    brisk::PackedSequences batch;
    batch.add(std::vector<int32_t>{1, 5, 2});
    std::vector<float> out(8);
    REQUIRE(encoder->embed(batch, brisk::Pooling::kMean, true, out.data()).ok());
    // A tap sees host activations, which a GPU pass does not have.
    const brisk::ActivationTap tap = [](std::string_view, const float*, int64_t, int64_t) { return absl::OkStatus(); };
    std::vector<float> hidden(3 * 8);
    CHECK(encoder->forward(batch, hidden.data(), tap).code() == absl::StatusCode::kUnimplemented);
  }
  // The encoder's weights and workspaces are back in the allocator (cached, not in use).
  CHECK(brisk::device_memory_stats(brisk::Device::kCUDA).in_use_bytes == before.in_use_bytes);
}

TEST_CASE("the encoder rejects out-of-range inputs with a clear error", "[encoder][model]") {
  auto encoder = load_encoder("tiny_bert");
  std::vector<float> out(64 * 8);
  brisk::PackedSequences bad_id;
  bad_id.add(std::vector<int32_t>{1, 20, 2});
  auto s = encoder->forward(bad_id, out.data());
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().find("token id 20") != std::string::npos);

  brisk::PackedSequences too_long;
  too_long.add(std::vector<int32_t>(17, 3));
  s = encoder->forward(too_long, out.data());
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().find("max_position_embeddings") != std::string::npos);

  brisk::PackedSequences bad_type;
  bad_type.add(std::vector<int32_t>{1, 2});
  bad_type.token_type_ids = {0, 2};
  s = encoder->forward(bad_type, out.data());
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().find("token type id 2") != std::string::npos);

  brisk::PackedSequences short_types;
  short_types.add(std::vector<int32_t>{1, 2});
  short_types.token_type_ids = {0};
  CHECK_FALSE(encoder->forward(short_types, out.data()).ok());

  // A valid batch, so that only the argument under test is wrong.
  brisk::PackedSequences good;
  good.add(std::vector<int32_t>{1, 5, 2});
  REQUIRE(encoder->forward(good, out.data()).ok());
  CHECK_FALSE(encoder->forward(good, nullptr).ok());
  CHECK_FALSE(encoder->embed(good, brisk::Pooling::kMean, true, nullptr).ok());
  auto max_pool = encoder->embed(good, brisk::Pooling::kMax, true, out.data());
  REQUIRE_FALSE(max_pool.ok());
  CHECK(max_pool.message().find("max pooling") != std::string::npos);

  brisk::PackedSequences bad_offsets;
  bad_offsets.input_ids = {1, 5, 2};
  bad_offsets.offsets = {0, 2};
  auto offsets_status = encoder->forward(bad_offsets, out.data());
  REQUIRE_FALSE(offsets_status.ok());
  CHECK(offsets_status.message().find("end at 2; expected them to start at 0 and end at input_ids.size() = 3") !=
        std::string::npos);
}

TEST_CASE("pooling an empty sequence gives zeros, not garbage", "[encoder][model]") {
  auto encoder = load_encoder("tiny_bert");
  brisk::PackedSequences batch;
  batch.add(std::vector<int32_t>{1, 5, 2});
  batch.add(std::vector<int32_t>{});
  std::vector<float> out(2 * 8, 7.0f);
  for (auto mode : {brisk::Pooling::kMean, brisk::Pooling::kCls}) {
    REQUIRE(encoder->embed(batch, mode, /*normalize=*/true, out.data()).ok());
    double norm0 = 0;
    for (int i = 0; i < 8; ++i) norm0 += out[i] * out[i];
    CHECK(norm0 == Approx(1.0).epsilon(1e-5));
    for (int i = 8; i < 16; ++i) CHECK(out[i] == 0.0f);
  }
}
