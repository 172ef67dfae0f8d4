// Shared helpers for brisk's tests: where the test data and the default model live.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace brisk::testing {

inline std::filesystem::path test_data_dir() { return BRISK_TEST_DATA_DIR; }

// The all-MiniLM-L6-v2 directory that scripts/setup installs (BRISK_MODEL_DIR overrides it).
inline std::filesystem::path model_dir() {
  if (const char* env = std::getenv("BRISK_MODEL_DIR"); env != nullptr && *env != '\0') return env;
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home ? home : "/root") / ".cache/brisk/models/all-MiniLM-L6-v2";
}

}  // namespace brisk::testing
