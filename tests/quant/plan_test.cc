// Precision plans: presets, rules, overrides, globbing and the errors a user sees for a typo.
#include <catch2/catch.hpp>

#include "brisk/model/weights.h"
#include "brisk/quant/plan.h"

using namespace brisk::quant;

namespace {

brisk::BertConfig two_layers() {
  brisk::BertConfig c;
  c.vocab_size = 100, c.hidden_size = 8, c.num_hidden_layers = 2, c.num_attention_heads = 2, c.intermediate_size = 16;
  return c;
}

}  // namespace

TEST_CASE("layer names follow the model file", "[quant][plan]") {
  const auto names = layer_names(two_layers());
  REQUIRE(names.size() == 13);
  CHECK(names.front() == "encoder.layer.0.attention.self.query");
  CHECK(names[5] == "encoder.layer.0.output.dense");
  CHECK(names.back() == "embeddings.word_embeddings");
  brisk::BertConfig distil = two_layers();
  distil.family = brisk::ModelFamily::kDistilBert;
  CHECK(layer_names(distil)[4] == "transformer.layer.0.ffn.lin1");
}

TEST_CASE("glob patterns match whole names", "[quant][plan]") {
  CHECK(glob_match("*", "encoder.layer.0.output.dense"));
  CHECK(glob_match("encoder.layer.?.output.dense", "encoder.layer.3.output.dense"));
  CHECK_FALSE(glob_match("encoder.layer.?.output.dense", "encoder.layer.10.output.dense"));
  CHECK(glob_match("*.attention.*", "encoder.layer.0.attention.output.dense"));
  CHECK_FALSE(glob_match("*.attention.*", "encoder.layer.0.output.dense"));
  CHECK_FALSE(glob_match("output.dense", "encoder.layer.0.output.dense"));
}

TEST_CASE("presets give each layer its precision", "[quant][plan]") {
  const auto names = layer_names(two_layers());
  auto mixed = PrecisionPlan::parse("mixed")->resolve(names);
  REQUIRE(mixed.ok());
  CHECK(precision_name(mixed->at("encoder.layer.1.attention.self.key")) == "bf16");
  CHECK(precision_name(mixed->at("encoder.layer.1.attention.output.dense")) == "bf16");
  CHECK(precision_name(mixed->at("encoder.layer.1.intermediate.dense")) == "int8-dynamic");
  CHECK(precision_name(mixed->at("encoder.layer.1.output.dense")) == "int8-dynamic");
  CHECK(precision_name(mixed->at("embeddings.word_embeddings")) == "int4-g32");

  auto int8 = PrecisionPlan::parse("int8")->resolve(names);
  CHECK(precision_name(int8->at("embeddings.word_embeddings")) == "int8-dynamic");
  auto st = PrecisionPlan::parse("int8-static")->resolve(names);
  CHECK(precision_name(st->at("encoder.layer.0.output.dense")) == "int8-static");
  CHECK(precision_name(st->at("embeddings.word_embeddings")) == "int8-dynamic");  // tables have no activations
  auto bf16 = PrecisionPlan::parse("bf16")->resolve(names);
  CHECK(precision_name(bf16->at("embeddings.word_embeddings")) == "fp32");
  auto fp32 = PrecisionPlan::parse("fp32")->resolve(names);
  for (const auto& [name, p] : *fp32) CHECK(p.precision == Precision::kF32);
}

TEST_CASE("later rules override earlier ones, and rules alone leave the rest fp32", "[quant][plan]") {
  const auto names = layer_names(two_layers());
  auto p = PrecisionPlan::parse("int8, encoder.layer.0.*=fp32, encoder.layer.0.output.dense=bf16")->resolve(names);
  REQUIRE(p.ok());
  CHECK(p->at("encoder.layer.0.attention.self.query").precision == Precision::kF32);
  CHECK(p->at("encoder.layer.0.output.dense").precision == Precision::kBF16);
  CHECK(p->at("encoder.layer.1.output.dense").precision == Precision::kInt8Dynamic);
  auto rules = PrecisionPlan::parse("*.intermediate.dense=int4-g64-min")->resolve(names);
  REQUIRE(rules.ok());
  CHECK(precision_name(rules->at("encoder.layer.1.intermediate.dense")) == "int4-g64-min");
  CHECK(rules->at("encoder.layer.1.output.dense").precision == Precision::kF32);
}

TEST_CASE("plan errors say what was wrong and what is expected", "[quant][plan]") {
  const auto names = layer_names(two_layers());
  auto typo = PrecisionPlan::parse("int8,encoder.layer.*.output.dense.weight=fp32")->resolve(names);
  REQUIRE_FALSE(typo.ok());
  CHECK_THAT(std::string(typo.status().message()),
             Catch::Contains("'encoder.layer.*.output.dense.weight' matches no layer") &&
                 Catch::Contains("encoder.layer.1.intermediate.dense"));
  auto unknown = PrecisionPlan::parse("int7");
  REQUIRE_FALSE(unknown.ok());
  CHECK_THAT(std::string(unknown.status().message()), Catch::Contains("'int7' is not a preset"));
  auto late = PrecisionPlan::parse("*.output.dense=fp32,int8");
  REQUIRE_FALSE(late.ok());
  CHECK_THAT(std::string(late.status().message()), Catch::Contains("a preset after the first entry"));
  auto precision = PrecisionPlan::parse("int8,*.output.dense=int9");
  REQUIRE_FALSE(precision.ok());
  CHECK_THAT(std::string(precision.status().message()), Catch::Contains("precision 'int9' is not known"));
  auto empty = PrecisionPlan::parse(" , ");
  REQUIRE_FALSE(empty.ok());
  auto emb = PrecisionPlan::parse("embeddings.word_embeddings=bf16")->resolve(names);
  REQUIRE_FALSE(emb.ok());
  CHECK_THAT(std::string(emb.status().message()),
             Catch::Contains("expected fp32, int8 or int4-gN for the word embeddings"));
  auto pattern = PrecisionPlan::parse("=int8");
  REQUIRE_FALSE(pattern.ok());
  CHECK_THAT(std::string(pattern.status().message()), Catch::Contains("empty pattern"));
}
