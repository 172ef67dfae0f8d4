// brisk prunes BERT-family encoders: a decoder embedder (the tiny Qwen3 of tests/data/make_tiny_qwen.py) is refused
// by every pruning and sensitivity entry point with FAILED_PRECONDITION naming its family, never pruned as if its
// layers were BERT's.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "brisk/model/encoder.h"
#include "brisk/model/loader.h"
#include "brisk/prune/importance.h"
#include "brisk/prune/mask.h"
#include "brisk/prune/sensitivity.h"
#include "brisk/prune/structured.h"
#include "test_util.h"

namespace brisk::prune {

TEST_CASE("prune: a qwen3 decoder is refused by name at every entry point", "[prune][qwen]") {
  auto m = load_model((testing::test_data_dir() / "tiny_qwen3").string());
  INFO(m.status().message());
  REQUIRE(m.ok());
  auto refused = [](const Status& s) {
    INFO(s.message());
    CHECK(absl::IsFailedPrecondition(s));
    CHECK_THAT(std::string(s.message()), Catch::Contains("the model is a qwen3 decoder"));
  };
  StructuredPlan plan;
  plan.heads[0] = {1};
  refused(prune_structured(m->config, m->weights, plan).status());
  refused(mask_structured(m->config, m->weights, plan).status());
  refused(score_units(m->config, m->weights, Importance::kL1, nullptr).status());
  EncoderWeights w = m->weights;
  refused(prune_unstructured(w, m->config, UnstructuredOptions{}).status());
  auto encoder = BertEncoder::create(m->config, m->weights, Device::kCPU);
  REQUIRE(encoder.ok());
  PackedSequences batch;
  batch.add(std::vector<int32_t>{5, 6, 0});
  refused(collect_activations(**encoder, {batch}).status());
  refused(analyze_sensitivity(m->config, m->weights, {batch}, nullptr, SensitivityOptions{}).status());
  CHECK(check_prunable(m->config, "x").ok() == false);
}

}  // namespace brisk::prune
