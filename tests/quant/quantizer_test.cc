// The quantizer on the real all-MiniLM-L6-v2: each plan's encoder against the fp32 encoder, calibration over the
// activation tap, the accuracy-driven auto plan at its two extremes, and the per-layer report.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>

#include "minilm_plans.h"

using namespace brisk;
using namespace brisk::quant;

namespace {

struct Fixture {
  std::string dir = testing::model_dir().string();
  BertConfig config = BertConfig::from_json_file(dir + "/config.json").value();
  EncoderWeights fp32 = EncoderWeights::load(dir, config).value();
  std::vector<PackedSequences> batches = testing::quant_test_batches(WordPieceTokenizer::from_model_dir(dir).value());

  Fidelity fidelity_of(const std::string& plan_text, const ActivationRanges& ranges = {}) {
    const LayerPrecisions p = PrecisionPlan::parse(plan_text).value().resolve(layer_names(config)).value();
    auto quantized = quantize_weights(fp32, config, p, ranges);
    REQUIRE(quantized.ok());
    auto reference = BertEncoder::create(config, fp32, Device::kCPU).value();
    auto encoder = BertEncoder::create(config, std::move(*quantized), Device::kCPU);
    REQUIRE(encoder.ok());
    return compare_embeddings(embed_all(*reference, batches, Pooling::kMean).value(),
                              embed_all(**encoder, batches, Pooling::kMean).value(), config.hidden_size);
  }
};

}  // namespace

TEST_CASE("each preset stays close to fp32 and drifts by its precision", "[quant][quantizer]") {
  Fixture f;
  const Fidelity fp32 = f.fidelity_of("fp32"), bf16 = f.fidelity_of("bf16"), int8 = f.fidelity_of("int8");
  const Fidelity mixed = f.fidelity_of("mixed");
  CHECK(fp32.worst_cosine > 0.999999);
  CHECK(bf16.worst_cosine > 0.9999);
  CHECK(bf16.worst_cosine < 1.0);  // it really ran in bf16
  CHECK(int8.mean_cosine > 0.99);
  CHECK(int8.mean_cosine < bf16.mean_cosine);
  CHECK(mixed.mean_cosine > 0.99);
}

TEST_CASE("calibration records every linear input, static int8 uses it", "[quant][quantizer]") {
  Fixture f;
  auto reference = BertEncoder::create(f.config, f.fp32, Device::kCPU).value();
  int64_t last_done = 0;
  CalibrationOptions minmax;
  minmax.symmetric = false;  // keep the signed range, to see the GeLU's lower bound
  auto ranges =
      calibrate(*reference, f.batches, minmax, [&](std::string_view, int64_t done, int64_t) { last_done = done; });
  REQUIRE(ranges.ok());
  CHECK(last_done == 2);
  CHECK(ranges->size() == static_cast<size_t>(6 * f.config.num_hidden_layers));
  // Post-LayerNorm inputs of Q, K and V are the same tensor; the GeLU output feeding output.dense is >= -0.17.
  CHECK(ranges->at("encoder.layer.2.attention.self.query").absmax() ==
        ranges->at("encoder.layer.2.attention.self.value").absmax());
  CHECK(ranges->at("encoder.layer.2.output.dense").min >= -0.1701f);
  CHECK(ranges->at("encoder.layer.2.output.dense").max > 1.0f);
  CHECK(f.fidelity_of("int8-static", *ranges).mean_cosine > 0.95);

  auto missing = quantize_weights(f.fp32, f.config,
                                  PrecisionPlan::parse("int8-static")->resolve(layer_names(f.config)).value(), {});
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(std::string(missing.status().message()),
             Catch::Contains("is int8-static but has no calibrated activation range"));
}

TEST_CASE("auto plan falls back the most sensitive layers until the tolerance holds", "[quant][quantizer]") {
  // The tiny synthetic BERT (2 layers, hidden 8): the search's logic, at a cost a unit test can afford.
  const std::string dir = (testing::test_data_dir() / "tiny_bert_st").string();
  const BertConfig config = BertConfig::from_json_file(dir + "/config.json").value();
  const EncoderWeights fp32 = EncoderWeights::load(dir, config).value();
  std::vector<PackedSequences> batches(1);
  for (int s = 0; s < 6; ++s) {
    std::vector<int32_t> ids = {2};
    for (int t = 0; t < 3 + 2 * s; ++t) ids.push_back(4 + (t * 7 + s * 3) % 15);
    ids.push_back(3);
    batches[0].add(ids);
  }
  AutoPlanOptions options;
  options.min_mean_cosine = 0.0;  // anything goes: nothing falls back
  auto loose = auto_plan(config, fp32, batches, Pooling::kMean, options);
  REQUIRE(loose.ok());
  CHECK(loose->fallen_back.empty());
  CHECK(loose->precisions.at("encoder.layer.0.output.dense").precision == Precision::kInt8Dynamic);
  REQUIRE(loose->report.layers.size() == layer_names(config).size());
  double max_sensitivity = 0;
  for (const LayerReport& l : loose->report.layers) max_sensitivity = std::max(max_sensitivity, l.sensitivity);
  CHECK(max_sensitivity > 0.0);
  CHECK(loose->report.fidelity.mean_cosine < 1.0);

  options.min_mean_cosine = 1.01;  // unreachable: every layer falls back, most sensitive first
  auto strict = auto_plan(config, fp32, batches, Pooling::kMean, options);
  REQUIRE(strict.ok());
  CHECK(strict->fallen_back.size() == layer_names(config).size());
  for (const auto& [name, p] : strict->precisions) CHECK(p.precision == Precision::kF32);
  CHECK(strict->report.fidelity.mean_cosine == Approx(1.0).epsilon(1e-6));
  double first = -1;
  for (const LayerReport& l : strict->report.layers) {
    if (l.name == strict->fallen_back.front()) first = l.sensitivity;
  }
  CHECK(first == Approx(max_sensitivity));

  // A user metric replaces the cosine: it sees each candidate encoder and decides alone.
  options.min_mean_cosine = 1.01;
  int calls = 0;
  options.metric = [&](const BertEncoder& candidate) -> StatusOr<double> {
    ++calls;
    return candidate.hidden_size() == 8 ? 1.0 : 0.0;
  };
  options.min_metric = 0.5;
  auto metric = auto_plan(config, fp32, batches, Pooling::kMean, options);
  REQUIRE(metric.ok());
  CHECK(metric->fallen_back.empty());
  CHECK(metric->report.metric == 1.0);
  CHECK(calls == static_cast<int>(layer_names(config).size()) + 2);  // fp32, each layer alone, everything
}

TEST_CASE("the report lists every layer in CSV and JSON", "[quant][quantizer]") {
  Fixture f;
  const LayerPrecisions p = PrecisionPlan::parse("mixed").value().resolve(layer_names(f.config)).value();
  auto report = describe(f.fp32, f.config, p, {}, "mixed");
  REQUIRE(report.ok());
  const std::string csv = report->to_csv();
  CHECK(std::count(csv.begin(), csv.end(), '\n') == static_cast<long>(layer_names(f.config).size() + 1));
  CHECK_THAT(csv, Catch::Contains("embeddings.word_embeddings,int4-g32,"));
  for (const LayerReport& l : report->layers) {
    if (l.precision == "int8-dynamic") {
      CHECK(l.weight_scale_min > 0);
      CHECK(l.weight_error > 0);
      CHECK(l.weight_error < 0.03);  // per-channel int8 of trained weights: 1-2% relative RMS
    }
    if (l.precision == "bf16") CHECK(l.weight_error < 0.004);  // 2^-9 relative per value at most
  }
  CHECK_THAT(report->to_json(), Catch::Contains("\"plan\": \"mixed\""));
}

TEST_CASE("a SmoothQuant int8 model round-trips through the file bit for bit", "[quant][quantizer]") {
  Fixture f;
  auto reference = BertEncoder::create(f.config, f.fp32, Device::kCPU).value();
  SmoothQuantOptions smooth{0.5f, channel_absmax(*reference, f.batches).value()};
  CHECK(smooth.absmax.at("encoder.layer.0.intermediate.dense").size() == 384);
  CHECK(smooth.absmax.at("encoder.layer.0.output.dense").size() == 1536);
  const LayerPrecisions p = PrecisionPlan::parse("int8").value().resolve(layer_names(f.config)).value();
  auto weights = quantize_weights(f.fp32, f.config, p, {}, &smooth);
  REQUIRE(weights.ok());
  // Q, K and V share one divisor vector (their input is one tensor); other layers have their own.
  const EncoderLayerWeights& l0 = weights->layers[0];
  REQUIRE(l0.q_scales.input_scale.defined());
  CHECK(std::memcmp(l0.q_scales.input_scale.raw_data(), l0.v_scales.input_scale.raw_data(), 384 * 4) == 0);
  CHECK(l0.output_scales.input_scale.numel() == 1536);
  // Smoothing changes the weights, not the function: the smoothed model stays as close to fp32 as plain int8.
  CHECK(f.fidelity_of("int8").mean_cosine > 0.99);

  QuantizedModel model;
  model.config = f.config;
  model.model_files = read_model_files(f.dir).value();
  model.weights = *weights;
  model.precisions = p;
  model.plan = "int8 +smoothquant 0.5";
  const std::string path = (std::filesystem::temp_directory_path() / "brisk_quantizer_test_sq.safetensors").string();
  REQUIRE(save_quantized_model(path, model).ok());
  auto loaded = load_quantized_model(path);
  std::filesystem::remove(path);
  REQUIRE(loaded.ok());
  auto a = BertEncoder::create(f.config, *weights, Device::kCPU).value();
  auto b = BertEncoder::create(loaded->config, loaded->weights, Device::kCPU).value();
  const std::vector<float> ea = embed_all(*a, f.batches, Pooling::kMean).value();
  const std::vector<float> eb = embed_all(*b, f.batches, Pooling::kMean).value();
  REQUIRE(ea.size() == eb.size());
  CHECK(std::memcmp(ea.data(), eb.data(), ea.size() * sizeof(float)) == 0);
  const Fidelity sq = compare_embeddings(embed_all(*reference, f.batches, Pooling::kMean).value(), ea, 384);
  CHECK(sq.mean_cosine > 0.99);
}

// Every int8 step is per token or per sequence (per-token activation scales, exact integer products, row-wise
// LayerNorm, attention within a sequence), so a sequence's hidden states cannot depend on what else is in its batch.
// A batch of over 512 tokens runs the feed-forward in several chunks, with a sequence across a chunk boundary and
// each LayerNorm quantizing its chunk for the int8 Linear after it: any row of the wrong chunk or scale shows here.
TEST_CASE("an int8 encoder gives each sequence the same bits alone as in a batch of several chunks",
          "[quant][quantizer]") {
  Fixture f;
  auto reference = BertEncoder::create(f.config, f.fp32, Device::kCPU).value();
  SmoothQuantOptions smooth{0.5f, channel_absmax(*reference, f.batches).value()};
  const LayerPrecisions p = PrecisionPlan::parse("int8").value().resolve(layer_names(f.config)).value();
  auto encoder =
      BertEncoder::create(f.config, quantize_weights(f.fp32, f.config, p, {}, &smooth).value(), Device::kCPU);
  REQUIRE(encoder.ok());
  const WordPieceTokenizer tok = WordPieceTokenizer::from_model_dir(f.dir).value();
  PackedSequences batch;
  std::vector<std::vector<int32_t>> alone;
  for (int copy = 0; batch.total_tokens() <= 2 * 512; ++copy) {
    for (const char* s : testing::kQuantTestSentences) {
      // Each copy a little different, so that no two sequences are the same.
      alone.push_back(tok.encode(std::string(s) + " " + std::to_string(copy), 128).value());
      batch.add(alone.back());
    }
  }
  const int64_t h = f.config.hidden_size;
  std::vector<float> together(static_cast<size_t>(batch.total_tokens() * h));
  REQUIRE((*encoder)->forward(batch, together.data()).ok());
  int differing = 0;
  for (size_t i = 0; i < alone.size(); ++i) {
    PackedSequences one;
    one.add(alone[i]);
    std::vector<float> single(static_cast<size_t>(one.total_tokens() * h));
    REQUIRE((*encoder)->forward(one, single.data()).ok());
    if (std::memcmp(single.data(), together.data() + batch.offsets[i] * h, single.size() * sizeof(float)) != 0) {
      ++differing;
    }
  }
  CHECK(batch.total_tokens() > 2 * 512);
  CHECK(differing == 0);
}
