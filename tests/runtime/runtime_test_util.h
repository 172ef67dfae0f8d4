// Helpers for the runtime tests that REQUIRE success (Catch2): a runtime from options, one text's embedding.
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "brisk/runtime/runtime.h"

namespace brisk::testing {

inline std::unique_ptr<Runtime> make_runtime(const RuntimeOptions& opts) {
  auto rt = Runtime::create(opts);
  REQUIRE(rt.ok());
  return std::move(*rt);
}

inline std::vector<float> embed_one(const Runtime& rt, std::string_view text) {
  auto e = rt.embed(std::span<const std::string_view>(&text, 1));
  REQUIRE(e.ok());
  return std::move(*e);
}

}  // namespace brisk::testing
