// Test helpers for the model tests that compare brisk with goldens written by tests/data/make_*.py (JSON).
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

}  // namespace brisk::testing
