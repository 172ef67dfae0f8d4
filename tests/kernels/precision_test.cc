// Precision names: each parses and prints back; unknown ones name the valid names.
#include <catch2/catch.hpp>

#include <string>

#include "brisk/kernels/precision.h"

using namespace brisk;

TEST_CASE("precision names parse and print back", "[kernels][precision]") {
  for (const char* name : {"fp32", "bf16", "int8-dynamic", "int8-static", "int4-g32", "int4-g64-min", "int4-g128"}) {
    auto p = parse_precision(name);
    REQUIRE(p.ok());
    CHECK(precision_name(*p) == name);
  }
  CHECK(parse_precision("int8")->precision == Precision::kInt8Dynamic);
  for (const char* bad : {"int3", "int4-g16", "int4-g", "fp16", ""}) {
    auto p = parse_precision(bad);
    REQUIRE_FALSE(p.ok());
    CHECK_THAT(std::string(p.status().message()), Catch::Contains("expected one of fp32, bf16"));
  }
}
