// brisk/core/internal/bounded_input.h: file reads with a size cap and JSON with a depth cap, so that no input
// exhausts the stack or memory (issue 30's depth bombs: 100,000 nested arrays crashed the policy and curve readers).
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "brisk/core/internal/bounded_input.h"
#include "test_util.h"

namespace {

std::string nested_arrays(int depth) {
  return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']');
}

}  // namespace

TEST_CASE("parse_json_bounded refuses documents nested past the limit, at any depth, without recursing") {
  for (const int depth : {65, 1000, 100000, 1000000}) {
    INFO("depth " << depth);
    auto r = brisk::parse_json_bounded(nested_arrays(depth), "policy.json");
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(
        std::string(r.status().message()),
        Catch::Contains("policy.json: arrays and objects are nested more than 64 levels deep; expected at most 64"));
  }
  // Objects too, and a bomb inside an otherwise valid document.
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  objects += "1" + std::string(100000, '}');
  CHECK_FALSE(brisk::parse_json_bounded(objects, "x").ok());
  CHECK_FALSE(brisk::parse_json_bounded("{\"max_batch_size\":" + nested_arrays(100000) + "}", "x").ok());
  // At the limit it parses.
  auto at_limit = brisk::parse_json_bounded(nested_arrays(64), "x");
  REQUIRE(at_limit.ok());
  CHECK(at_limit->is_array());
}

TEST_CASE("parse_json_bounded names the source and nlohmann's reason for invalid JSON") {
  for (const char* text : {"", "{", "[1,]", "1e999", "{\"a\":tru}"}) {
    INFO(text);
    auto r = brisk::parse_json_bounded(text, "curve.json");
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(std::string(r.status().message()), Catch::StartsWith("curve.json: is not valid JSON ("));
  }
  auto ok = brisk::parse_json_bounded("{\"a\": [1, 2, {\"b\": null}]}", "x");
  REQUIRE(ok.ok());
  CHECK(ok->at("a").size() == 3);
}

TEST_CASE("shown_json cuts long and deep values without serialising them whole") {
  const nlohmann::json big = nlohmann::json::array();
  nlohmann::json many = nlohmann::json::array();
  for (int i = 0; i < 100000; ++i) many.push_back(i);
  const std::string s = brisk::shown_json(many);
  CHECK(s.size() == 60);
  CHECK_THAT(s, Catch::StartsWith("[0,1,2,3,"));
  CHECK_THAT(s, Catch::EndsWith("..."));
  CHECK(brisk::shown_json(nlohmann::json("short")) == "\"short\"");
  CHECK(brisk::shown_json(nlohmann::json(std::string(10000, 'x'))).size() == 60);
  CHECK(brisk::shown_json(big) == "[]");
  // Deeper than shown_json goes: the inner containers are elided.
  const nlohmann::json deep = nlohmann::json::parse(nested_arrays(20));
  CHECK(brisk::shown_json(deep) == "[[[[[[[[[...]]]]]]]]]");
}

TEST_CASE("read_text_file_bounded refuses a file past its cap, an endless device, a directory and a missing file") {
  brisk::testing::TempDir tmp;
  const std::string path = tmp.file("f.json");
  std::ofstream(path) << std::string(1000, 'a');
  auto ok = brisk::read_text_file_bounded(path, 1000, "policy file");
  REQUIRE(ok.ok());
  CHECK(ok->size() == 1000);
  auto big = brisk::read_text_file_bounded(path, 999, "policy file");
  REQUIRE_FALSE(big.ok());
  CHECK_THAT(std::string(big.status().message()),
             Catch::Contains("is larger than 999 bytes; expected a policy file of at most 999 bytes"));
  auto endless = brisk::read_text_file_bounded("/dev/zero", 1 << 20, "service-time curve (--bench)");
  REQUIRE_FALSE(endless.ok());
  CHECK_THAT(std::string(endless.status().message()), Catch::Contains("/dev/zero: is larger than 1048576 bytes"));
  CHECK(brisk::read_text_file_bounded(tmp.path.string(), 10, "x").status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(brisk::read_text_file_bounded(tmp.file("absent"), 10, "x").status().code() == absl::StatusCode::kNotFound);
}
