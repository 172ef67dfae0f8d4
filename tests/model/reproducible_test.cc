// EncoderOptions::reproducible (brisk/core/internal/reproducible.h) on the tiny model of every family: the same bits
// at every ISA cap this CPU has and every thread count, and values close to the default path's (which, like the
// reproducible path itself, encoder_test, xlmr_test and qwen_test check against transformers).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "brisk/core/cpu_features.h"
#include "brisk/core/parallel.h"
#include "brisk/model/encoder.h"
#include "golden_json.h"

namespace {

std::unique_ptr<brisk::BertEncoder> encoder_of(const std::string& folder, const brisk::EncoderOptions& options) {
  const std::string dir = brisk::testing::data_folder(folder.c_str());
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

}  // namespace

TEST_CASE("a reproducible encoder gives the same bits at every ISA cap and thread count", "[encoder][model]") {
  const std::string folder = GENERATE("tiny_bert", "tiny_distilbert", "tiny_xlmr", "tiny_qwen2", "tiny_qwen3");
  INFO(folder);
  const auto fast = encoder_of(folder, {});
  const auto reproducible = encoder_of(folder, {.reproducible = true});
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
    const brisk::CpuIsa previous = brisk::set_cpu_isa_cap(level);
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
    brisk::set_cpu_isa_cap(previous);
  }
}
