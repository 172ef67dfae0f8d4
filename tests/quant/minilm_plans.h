// Shared by the quantizer tests: six real sentences of the FAQ assistant's kind, tokenized for the real
// all-MiniLM-L6-v2, and a plan's model file written and read back as brisk quantize does.
#pragma once

#include <string>
#include <vector>

#include "brisk/model/tokenizer.h"
#include "brisk/quant/model_file.h"
#include "brisk/quant/quantizer.h"
#include "test_util.h"

namespace brisk::testing {

inline constexpr const char* kQuantTestSentences[] = {
    "How do I reset my online banking password?", "The train to Lyon leaves at 7:45 from platform 3.",
    "Can I return shoes I bought on sale?",       "my laptop will not connect to the office wifi since the update",
    "What is the capital of Australia?",          "I was charged twice for the same order, please refund one of them."};

// The sentences in two batches: alternating, or the first alone (a single short request) and the rest together.
inline std::vector<PackedSequences> quant_test_batches(const WordPieceTokenizer& tok, bool first_alone = false) {
  std::vector<PackedSequences> batches(2);
  for (size_t i = 0; i < std::size(kQuantTestSentences); ++i) {
    batches[first_alone ? (i == 0 ? 0 : 1) : i % 2].add(tok.encode(kQuantTestSentences[i], 128).value());
  }
  return batches;
}

// `plan` applied to fp32 (SmoothQuant when `smooth` is not null), saved to a file in `tmp` and loaded back.
inline quant::QuantizedModel write_plan_file(const std::string& model_dir, const BertConfig& config,
                                             const EncoderWeights& fp32, const std::string& plan,
                                             const quant::ActivationRanges& ranges,
                                             const quant::SmoothQuantOptions* smooth, TempDir& tmp,
                                             const NamedTensors& head_tensors = {}) {
  const quant::LayerPrecisions precisions =
      quant::PrecisionPlan::parse(plan).value().resolve(layer_names(config)).value();
  quant::QuantizedModel m;
  m.config = config;
  m.weights = quant::quantize_weights(fp32, config, precisions, ranges, smooth).value();
  m.precisions = precisions;
  m.plan = plan;
  m.model_files = read_model_files(model_dir).value();
  m.head_tensors = head_tensors;
  const std::string path = tmp.file(plan + (smooth != nullptr ? "-sq" : "") + ".safetensors");
  REQUIRE(quant::save_quantized_model(path, m).ok());
  return quant::load_quantized_model(path).value();
}

}  // namespace brisk::testing
