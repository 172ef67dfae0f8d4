// Test helpers for the model tests that compare brisk with goldens written by tests/data/make_*.py (JSON).
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "brisk/model/encoder.h"
#include "test_util.h"

namespace brisk::testing {

inline std::string data_folder(const char* name) { return (test_data_dir() / name).string(); }

inline nlohmann::json read_json(const std::string& relative) { return nlohmann::json::parse(read_test_file(relative)); }

inline double max_abs_diff(const float* got, const std::vector<float>& want) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - want[i]));
  return worst;
}

// A JSON list of rows as one flat vector, row after row.
inline std::vector<float> flat(const nlohmann::json& rows) {
  std::vector<float> out;
  for (const nlohmann::json& row : rows) {
    for (float v : row.get<std::vector<float>>()) out.push_back(v);
  }
  return out;
}

// The largest error allowed against transformers' fp32 hidden states (LayerNorm outputs, |x| <~ 4). f32: the
// order of summation alone. f16 / bf16 activations round every stored activation (unit roundoff u = 2^-11 /
// 2^-8): about ten roundings per layer feed the next through LayerNorm, which renormalises but does not shrink
// the relative error, so |error| <~ 4 * u * sqrt(10 * layers) * a safety factor of 4 (tiny models: 2 layers).
inline double tolerance_for(DType activation) {
  switch (activation) {
    case DType::kF16: return 4.0 * std::ldexp(1.0, -11) * std::sqrt(20.0) * 4.0;
    case DType::kBF16: return 4.0 * std::ldexp(1.0, -8) * std::sqrt(20.0) * 4.0;
    default: return 2e-5;
  }
}

// Each golden item's "ids" through `encoder` alone, then all of them in one packed batch: the last hidden states
// within `tolerance` of the item's "hidden" (transformers', one row per token).
inline void check_alone_and_packed(const BertEncoder& encoder, const nlohmann::json& items, double tolerance) {
  const int64_t h = encoder.hidden_size();
  PackedSequences all;
  std::vector<std::vector<float>> want;
  for (const nlohmann::json& item : items) {
    const auto ids = item["ids"].get<std::vector<int32_t>>();
    want.push_back(flat(item["hidden"]));
    PackedSequences one;
    one.add(ids);
    all.add(ids);
    std::vector<float> hidden(static_cast<size_t>(one.total_tokens() * h));
    REQUIRE(encoder.forward(one, hidden.data()).ok());
    INFO("alone: " << item["text"].get<std::string>());
    CHECK(max_abs_diff(hidden.data(), want.back()) <= tolerance);
  }
  REQUIRE(want.size() >= 8);
  std::vector<float> hidden(static_cast<size_t>(all.total_tokens() * h));
  REQUIRE(encoder.forward(all, hidden.data()).ok());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("sequence " << i << " inside the packed batch");
    CHECK(max_abs_diff(hidden.data() + all.offsets[i] * h, want[i]) <= tolerance);
  }
}

}  // namespace brisk::testing
