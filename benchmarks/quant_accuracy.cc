// brisk_quant_accuracy: what each precision plan costs in accuracy, on all-MiniLM-L6-v2. For fp32, bf16, int8,
// int8-static, mixed and auto it prints one markdown row:
//   - mean and worst embedding cosine against fp32 on a held-out set of real sentences (not the calibration set);
//   - FAQ top-1 accuracy: the FAQ assistant's questions (examples/faq_assistant/questions.txt) against its FAQ
//     (faq.tsv), scored with the hand-written gold labels of benchmarks/data/faq_labels.tsv (the best entry or an
//     accepted alternative; questions no entry answers are left out), and the share whose top-1 entry is the one
//     fp32 retrieves;
//   - the paraphrase AUC on shared/data/semantic_pairs.tsv (cosine of each pair against its 0/1 label);
//   - the size of the weights as stored (bytes of every tensor) relative to fp32.
//
//   build/release/benchmarks/brisk_quant_accuracy [--model DIR] [--calib FILE] [--heldout FILE] [--plans
//   "plan;plan;..."]
// A plan is a PrecisionPlan text, or "auto" / "autoT" (the auto plan at tolerance T); "+sqA" adds SmoothQuant at
// alpha A to the int8-dynamic layers; "+w7" then requantizes every int8 weight to 7 bits (round(w / 2) in
// [-64, 63], scale x 2), as a loader would have to for a vpmaddubsw kernel on a CPU without VNNI (its int16 pair
// sums cannot saturate with 7-bit weights): what that choice would cost in accuracy. "+fa" (last) keeps float
// self-attention (EncoderOptions::int8_attention off); without it the int8 layers run int8 attention where the ISA
// level in use prefers it (int8_attention_preferred: the AVX-512 levels).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "accuracy_util.h"
#include "brisk/model/config.h"
#include "brisk/model/encoder.h"
#include "brisk/model/loader.h"
#include "brisk/model/tokenizer.h"
#include "brisk/model/weights.h"
#include "brisk/quant/quantizer.h"
#include "test_util.h"

#ifndef BRISK_SOURCE_DIR
#define BRISK_SOURCE_DIR "."
#endif

namespace {

using namespace brisk;
using namespace brisk::quant;
using namespace brisk::bench;

// Every int8 Linear weight requantized to 7 bits: q7 = round_half_even(q / 2) clamped to [-64, 63], its scale
// doubled (the 8-bit file is what a loader has; the file is the same on every CPU).
void requantize_to_7_bits(EncoderWeights& w, const BertConfig& config) {
  for (const LinearSlot& slot : linear_slots(w, config)) {
    if (slot.weight->dtype() != DType::kI8) continue;
    Tensor halved = Tensor::empty(slot.weight->shape(), DType::kI8).value();
    const int8_t* from = slot.weight->data<int8_t>();
    int8_t* to = halved.data<int8_t>();
    for (int64_t i = 0; i < halved.numel(); ++i) {
      to[i] = static_cast<int8_t>(std::clamp(std::nearbyint(from[i] / 2.0f), -64.0f, 63.0f));
    }
    Tensor scale = Tensor::empty(slot.scales->weight_scale.shape(), DType::kF32).value();
    for (int64_t i = 0; i < scale.numel(); ++i)
      scale.data<float>()[i] = 2.0f * slot.scales->weight_scale.data<float>()[i];
    *slot.weight = halved;
    slot.scales->weight_scale = scale;
  }
}

// Mann-Whitney AUC of scores against 0/1 labels.
double auc(const std::vector<double>& scores, const std::vector<int>& labels) {
  double wins = 0;
  int64_t pos = 0, neg = 0;
  for (size_t i = 0; i < scores.size(); ++i) {
    if (!labels[i]) continue;
    ++pos;
    for (size_t j = 0; j < scores.size(); ++j) {
      if (labels[j]) continue;
      wins += scores[i] > scores[j] ? 1.0 : scores[i] == scores[j] ? 0.5 : 0.0;
    }
  }
  for (int l : labels) neg += l ? 0 : 1;
  return pos && neg ? wins / double(pos * neg) : 0;
}

int64_t stored_bytes(const EncoderWeights& w) {
  int64_t b = 0;
  auto add = [&](const Tensor& t) { b += t.defined() ? static_cast<int64_t>(t.nbytes()) : 0; };
  const EmbeddingWeights& e = w.embeddings;
  for (const Tensor* t : {&e.word, &e.word_scale, &e.word_min, &e.position, &e.token_type, &e.ln_gamma, &e.ln_beta})
    add(*t);
  for (const EncoderLayerWeights& l : w.layers) {
    for (const Tensor* t :
         {&l.q_weight, &l.q_bias, &l.k_weight, &l.k_bias, &l.v_weight, &l.v_bias, &l.attention_output_weight,
          &l.attention_output_bias, &l.attention_ln_gamma, &l.attention_ln_beta, &l.intermediate_weight,
          &l.intermediate_bias, &l.output_weight, &l.output_bias, &l.output_ln_gamma, &l.output_ln_beta})
      add(*t);
    for (const kernels::QuantScales* s :
         {&l.q_scales, &l.k_scales, &l.v_scales, &l.attention_output_scales, &l.intermediate_scales, &l.output_scales})
      add(s->weight_scale);
  }
  return b;
}

int run(int argc, char** argv) {
  std::string model = brisk::testing::model_dir().string();
  std::string calib_path = std::string(BRISK_SOURCE_DIR) + "/benchmarks/data/calibration_texts.txt";
  std::string heldout_path = std::string(BRISK_SOURCE_DIR) + "/benchmarks/data/heldout_sentences.txt";
  std::string plans_arg = "fp32;bf16;int8;int8-static;mixed;auto";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--model") model = argv[i + 1];
    if (flag == "--calib") calib_path = argv[i + 1];
    if (flag == "--heldout") heldout_path = argv[i + 1];
    if (flag == "--plans") plans_arg = argv[i + 1];
  }
  const LoadedModel loaded = load_model(model, {.fp32_directory_only = true}).value();
  const BertConfig& config = loaded.config;
  const Pooling pooling = loaded.pooling.mode;
  const TextTokenizer& tok = loaded.tokenizer;
  const EncoderWeights& fp32 = loaded.weights;
  const int64_t h = config.hidden_size;

  const std::vector<std::string> calib = read_lines(calib_path), heldout = read_lines(heldout_path);
  const std::optional<FaqSet> faq = load_faq(BRISK_SOURCE_DIR, tok);
  if (!faq) return 1;
  std::vector<std::string> pair_a, pair_b;
  std::vector<int> labels;
  for (const std::string& line : read_lines(std::string(BRISK_SOURCE_DIR) + "/../shared/data/semantic_pairs.tsv")) {
    std::vector<std::string> f = absl::StrSplit(line, '\t');
    if (f.size() < 4 || f[0] == "label") continue;
    labels.push_back(f[0] == "1");
    pair_a.push_back(f[2]);
    pair_b.push_back(f[3]);
  }
  if (calib.empty() || heldout.empty()) {
    fmt::print(stderr, "calibration ({}) or held-out ({}) texts are missing\n", calib_path, heldout_path);
    return 1;
  }
  const auto calib_batches = pack(tok, calib, 32), heldout_batches = pack(tok, heldout, 32);
  const auto a_batches = pack(tok, pair_a, 32), b_batches = pack(tok, pair_b, 32);

  auto fp32_encoder = BertEncoder::create(config, fp32, Device::kCPU).value();
  const std::vector<float> ref_heldout = embed_all(*fp32_encoder, heldout_batches, pooling).value();
  const std::vector<int> ref_top1 = faq->retrieve(*fp32_encoder, pooling);
  const int64_t fp32_bytes = stored_bytes(fp32);
  ActivationRanges ranges;

  fmt::print("{} calibration texts, {} held-out sentences, {} FAQ questions against {} entries, {} labelled pairs\n\n",
             calib.size(), heldout.size(), faq->questions.size(), faq->entries.size(), labels.size());
  fmt::print(
      "| plan | mean cosine | worst cosine | FAQ top-1 accuracy | FAQ top-1 same as fp32 | paraphrase AUC | weights "
      "size vs fp32 |\n");
  fmt::print("|---|---|---|---|---|---|---|\n");
  ChannelAbsmax channel_stats;
  for (const std::string& row_name : std::vector<std::string>(absl::StrSplit(plans_arg, ';'))) {
    // "PLAN+sqA": the plan with SmoothQuant at alpha A.
    std::string plan_name = row_name;
    // "+fa": float attention (EncoderOptions::int8_attention off).
    const bool float_attention = plan_name.size() > 3 && plan_name.substr(plan_name.size() - 3) == "+fa";
    if (float_attention) plan_name.resize(plan_name.size() - 3);
    const bool seven_bits = plan_name.size() > 3 && plan_name.substr(plan_name.size() - 3) == "+w7";
    if (seven_bits) plan_name.resize(plan_name.size() - 3);
    std::optional<SmoothQuantOptions> smooth;
    if (const size_t at = row_name.find("+sq"); at != std::string::npos) {
      plan_name = plan_name.substr(0, at);
      if (channel_stats.empty()) channel_stats = channel_absmax(*fp32_encoder, calib_batches).value();
      smooth =
          SmoothQuantOptions{std::stof(row_name.substr(at + 3, row_name.find('+', at + 1) - at - 3)), channel_stats};
    }
    LayerPrecisions precisions;
    std::string note;
    if (plan_name.rfind("auto", 0) == 0) {  // "auto" or "autoT": the auto plan at tolerance T (default 0.995)
      AutoPlanOptions options;
      if (plan_name.size() > 4) options.min_mean_cosine = std::stod(plan_name.substr(4));
      options.smoothquant = smooth ? &*smooth : nullptr;
      AutoPlanResult r = auto_plan(config, fp32, calib_batches, pooling, options).value();
      precisions = r.precisions;
      note = fmt::format(" (fell back: {})",
                         r.fallen_back.empty() ? "none" : fmt::format("{}", fmt::join(r.fallen_back, " ")));
    } else {
      precisions = PrecisionPlan::parse(plan_name).value().resolve(layer_names(config)).value();
      if (plan_name == "int8-static" && ranges.empty()) {
        CalibrationOptions percentile;  // brisk quantize's default calibrator
        percentile.method = CalibrationMethod::kPercentile;
        ranges = calibrate(*fp32_encoder, calib_batches, percentile, nullptr).value();
      }
    }
    EncoderWeights w = quantize_weights(fp32, config, precisions, ranges, smooth ? &*smooth : nullptr).value();
    if (seven_bits) requantize_to_7_bits(w, config);
    const int64_t bytes = stored_bytes(w);
    EncoderOptions encoder_options;
    encoder_options.int8_attention = !float_attention;
    auto encoder = BertEncoder::create(config, std::move(w), encoder_options).value();
    const Fidelity f = compare_embeddings(ref_heldout, embed_all(*encoder, heldout_batches, pooling).value(), h);
    const std::vector<int> t1 = faq->retrieve(*encoder, pooling);
    int agree = 0;
    for (size_t i = 0; i < t1.size(); ++i) agree += t1[i] == ref_top1[i];
    const std::vector<float> ea = embed_all(*encoder, a_batches, pooling).value();
    const std::vector<float> eb = embed_all(*encoder, b_batches, pooling).value();
    std::vector<double> scores;
    for (size_t i = 0; i < labels.size(); ++i) scores.push_back(kernels::dot(&ea[i * h], &eb[i * h], h));
    fmt::print("| {}{} | {:.5f} | {:.5f} | {:.1f}% | {:.1f}% | {:.4f} | {:.1f}% |\n", row_name, note, f.mean_cosine,
               f.worst_cosine, faq->accuracy(t1), 100.0 * agree / double(t1.size()), auc(scores, labels),
               100.0 * bytes / fp32_bytes);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run(argc, argv); }
