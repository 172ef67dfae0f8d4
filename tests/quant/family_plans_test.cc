// The families beyond BERT through the quantizer: the tiny XLM-RoBERTa of tests/data/make_tiny_xlmr.py and the tiny
// Qwen3 decoder embedder of make_tiny_qwen.py, calibrated on their multilingual texts, written as int8 (with and
// without SmoothQuant), bf16 and mixed model files and loaded back: each plan's embeddings stay within its
// precision's bound of fp32's, through the encoder and through a Runtime that reads the file's own tokenizer.json
// (Unigram, byte-level BPE) and pooling files; and the tiny Qwen3 cross-encoder's int8 file, whose score head stays
// f32.
#include <catch2/catch.hpp>

#include <cmath>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "brisk/model/encoder.h"
#include "brisk/model/fidelity.h"
#include "brisk/model/loader.h"
#include "brisk/runtime/runtime.h"
#include "minilm_plans.h"

namespace brisk {
namespace {

struct PlanBound {
  const char* plan;
  bool smoothquant;
  double min_worst_cosine;  // against fp32, mean pooling
};
// int8's bound is the one the MiniLM plans meet (quant.each preset stays close to fp32); bf16 rounds 8 bits of
// mantissa per activation; mixed puts its most sensitive layers in bf16 and the rest in int8 or int4 groups.
constexpr PlanBound kPlans[] = {
    {"int8", false, 0.99}, {"int8", true, 0.99}, {"bf16", false, 0.999}, {"mixed", false, 0.99}};

void check_plans(const std::string& model, const std::string& golden_file, Pooling pooling) {
  const std::string dir = (testing::test_data_dir() / model).string();
  const nlohmann::json golden = nlohmann::json::parse(testing::read_test_file(golden_file));
  std::vector<PackedSequences> batches(2);
  std::vector<std::string> texts;
  size_t i = 0;
  for (const auto& item : golden["items"]) {
    batches[i++ % 2].add(item["ids"].get<std::vector<int32_t>>());
    texts.push_back(item["text"].get<std::string>());
  }
  auto loaded = load_model(dir);
  REQUIRE(loaded.ok());
  const BertConfig config = loaded->config;
  const EncoderWeights fp32 = loaded->weights;
  auto reference = BertEncoder::create(config, fp32, Device::kCPU).value();
  const std::vector<float> want = embed_all(*reference, batches, pooling).value();
  const quant::ActivationRanges ranges = quant::calibrate(*reference, batches, {}, nullptr).value();
  quant::SmoothQuantOptions smooth;
  smooth.absmax = quant::channel_absmax(*reference, batches).value();

  RuntimeOptions fp32_options;
  fp32_options.model_dir = dir;
  fp32_options.num_threads = 1;
  auto fp32_runtime = Runtime::create(fp32_options);
  REQUIRE(fp32_runtime.ok());
  std::vector<std::string_view> views(texts.begin(), texts.end());
  const std::vector<float> want_runtime = (*fp32_runtime)->embed(views).value();
  const int64_t dim = (*fp32_runtime)->embedding_dim();

  testing::TempDir tmp;
  for (const PlanBound& p : kPlans) {
    INFO("plan " << p.plan << (p.smoothquant ? " +smoothquant" : ""));
    const quant::QuantizedModel m =
        testing::write_plan_file(dir, config, fp32, p.plan, ranges, p.smoothquant ? &smooth : nullptr, tmp);
    auto encoder = BertEncoder::create(m.config, m.weights, Device::kCPU);
    REQUIRE(encoder.ok());
    const Fidelity f = compare_embeddings(want, embed_all(**encoder, batches, pooling).value(), dim);
    CHECK(f.worst_cosine >= p.min_worst_cosine);
    // The file alone: its config (positions after the padding id; a decoder's shape) and its tokenizer.json.
    RuntimeOptions o;
    o.model_dir = tmp.file(std::string(p.plan) + (p.smoothquant ? "-sq" : "") + ".safetensors");
    o.num_threads = 1;
    auto rt = Runtime::create(o);
    INFO(rt.status().message());
    REQUIRE(rt.ok());
    auto got = (*rt)->embed(views);
    REQUIRE(got.ok());
    CHECK(compare_embeddings(want_runtime, *got, dim).worst_cosine >= p.min_worst_cosine);
    CHECK((*rt)->info().pooling == (*fp32_runtime)->info().pooling);
  }
}

}  // namespace

TEST_CASE("xlm-roberta: int8, bf16 and mixed plans load and stay within their bounds of fp32", "[quant][xlmr]") {
  check_plans("tiny_xlmr", "tiny_xlmr/golden_xlmr.json", Pooling::kMean);
}

TEST_CASE("qwen3: int8, bf16 and mixed plans load and stay within their bounds of fp32", "[quant][qwen]") {
  check_plans("tiny_qwen3", "tiny_qwen3/golden_qwen3.json", Pooling::kLastToken);
}

TEST_CASE("qwen3 reranker: an int8 model file keeps the score head and the cross-encoder's logits", "[quant][qwen]") {
  const std::string dir = (testing::test_data_dir() / "tiny_qwen3_reranker").string();
  const nlohmann::json golden =
      nlohmann::json::parse(testing::read_test_file("tiny_qwen3_reranker/golden_qwen3_reranker.json"));
  auto loaded = load_model(dir);
  REQUIRE(loaded.ok());
  REQUIRE(loaded->head.has_value());
  std::vector<PackedSequences> batches(1);
  for (const auto& pair : golden["pairs"]) batches[0].add(pair["ids"].get<std::vector<int32_t>>());
  auto reference = BertEncoder::create(loaded->config, loaded->weights, Device::kCPU).value();
  const quant::ActivationRanges ranges = quant::calibrate(*reference, batches, {}, nullptr).value();
  testing::TempDir tmp;
  testing::write_plan_file(dir, loaded->config, loaded->weights, "int8", ranges, nullptr, tmp, loaded->head_tensors);
  RuntimeOptions o;
  o.model_dir = tmp.file("int8.safetensors");
  o.num_threads = 1;
  auto rt = Runtime::create(o);
  INFO(rt.status().message());
  REQUIRE(rt.ok());
  RerankOptions raw;
  raw.raw_scores = true;
  // The logits span [-2.7, 4.9]; int8 weights and activations moved them by 0.009 at most on this tiny model.
  for (const auto& pair : golden["pairs"]) {
    const std::string query = pair["query"], document = pair["document"];
    const std::string_view passage = document;
    auto scored = (*rt)->rerank(query, std::span(&passage, 1), raw);
    REQUIRE(scored.ok());
    INFO("query: " << query << "; int8 logit " << (*scored)[0].score << ", fp32 " << pair["logit"].get<double>());
    CHECK(std::abs((*scored)[0].score - pair["logit"].get<double>()) <= 0.03);
  }
}

}  // namespace brisk
