// `brisk quantize`. See quantize.h.
#include "quantize.h"

#include "brisk/model/loader.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "brisk/core/cpu_features.h"
#include "brisk/core/parallel.h"
#include "brisk/model/tokenizer.h"
#include "brisk/quant/model_file.h"
#include "brisk/quant/quantizer.h"
#include "brisk/runtime/runtime.h"
#include "printable.h"
#include "progress_bar.h"
#include "text_batches.h"

namespace brisk::cli {
namespace {

using namespace brisk::quant;

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) return absl::InternalError(fmt::format("could not write '{}'", path));
  return absl::OkStatus();
}

// The quantized weights' embeddings against `fp32`'s over the batches, on fp32's arithmetic (its EncoderOptions);
// `kernels` receives what computes the quantized model's linear layers.
StatusOr<Fidelity> fidelity_against(const BertEncoder& fp32, const EncoderWeights& quantized,
                                    const std::vector<PackedSequences>& batches, Pooling pooling,
                                    std::vector<std::string>* kernels = nullptr) {
  BRISK_ASSIGN_OR_RETURN(std::vector<float> ref, embed_all(fp32, batches, pooling));
  BRISK_ASSIGN_OR_RETURN(auto encoder, BertEncoder::create(fp32.config(), quantized, fp32.options()));
  BRISK_ASSIGN_OR_RETURN(std::vector<float> got, embed_all(*encoder, batches, pooling));
  if (kernels != nullptr) *kernels = encoder->linear_kernels();
  return compare_embeddings(ref, got, fp32.hidden_size());
}

Status quantize(const QuantizeFlags& f) {
  ScopedNumThreads threads(f.threads);
  const std::string& dir = f.model_dir;
  // --max-seq-len is capped at what the model's positions hold (load_model resolves it into max_seq_len).
  BRISK_ASSIGN_OR_RETURN(const LoadedModel source,
                         load_model(dir, {.max_seq_len = f.max_seq_len, .fp32_directory_only = true}));
  const BertConfig& config = source.config;
  const PoolingConfig& pooling = source.pooling;
  const TextTokenizer& tok = source.tokenizer;
  const EncoderWeights& fp32 = source.weights;
  BRISK_ASSIGN_OR_RETURN(std::vector<PackedSequences> batches,
                         read_text_batches(f.calib, tok, source.max_seq_len, "calibration"));
  BRISK_ASSIGN_OR_RETURN(CalibrationMethod method, parse_calibration_method(f.calibrator));
  CalibrationOptions calibration;
  calibration.method = method;
  // Calibration, SmoothQuant's statistics and the fidelity the file records run on reproducible arithmetic: the same
  // file on every CPU, at every BRISK_ISA cap and thread count (an auto plan's choices follow this CPU's kernels).
  const EncoderOptions reproducible{.reproducible = true};
  BRISK_ASSIGN_OR_RETURN(auto fp32_encoder, BertEncoder::create(config, fp32, reproducible));
  const std::vector<std::string> names = layer_names(config);

  // Static activation scales are calibrated whenever a layer may need them.
  ActivationRanges ranges;
  LayerPrecisions precisions;
  QuantizationReport report;
  ProgressBar progress;
  std::optional<SmoothQuantOptions> smooth;
  if (f.smoothquant > 0.0) {
    smooth = SmoothQuantOptions{static_cast<float>(f.smoothquant), {}};
    BRISK_ASSIGN_OR_RETURN(smooth->absmax, channel_absmax(*fp32_encoder, batches));
  }
  if (f.plan == "auto") {
    AutoPlanOptions options;
    options.smoothquant = smooth ? &*smooth : nullptr;
    options.min_mean_cosine = f.tolerance;
    BRISK_ASSIGN_OR_RETURN(options.fallback, parse_precision(f.fallback));
    options.progress = progress.callback();
    BRISK_ASSIGN_OR_RETURN(AutoPlanResult r, auto_plan(config, fp32, batches, pooling.mode, options));
    precisions = std::move(r.precisions);
    report = std::move(r.report);
  } else {
    BRISK_ASSIGN_OR_RETURN(PrecisionPlan plan, PrecisionPlan::parse(f.plan));
    BRISK_ASSIGN_OR_RETURN(precisions, plan.resolve(names));
    for (const auto& [name, spec] : precisions) {
      if (spec.precision == Precision::kInt8Static && ranges.empty()) {
        BRISK_ASSIGN_OR_RETURN(ranges, calibrate(*fp32_encoder, batches, calibration, progress.callback()));
      }
    }
    BRISK_ASSIGN_OR_RETURN(report, describe(fp32, config, precisions, ranges, plan.text));
  }
  BRISK_ASSIGN_OR_RETURN(EncoderWeights quantized,
                         quantize_weights(fp32, config, precisions, ranges, smooth ? &*smooth : nullptr));
  BRISK_ASSIGN_OR_RETURN(report.fidelity, fidelity_against(*fp32_encoder, quantized, batches, pooling.mode));
  std::vector<std::string> kernels;  // what computed on_this_cpu (this CPU's path)
  BRISK_ASSIGN_OR_RETURN(auto fast_fp32, BertEncoder::create(config, fp32, Device::kCPU));
  BRISK_ASSIGN_OR_RETURN(const Fidelity on_this_cpu,
                         fidelity_against(*fast_fp32, quantized, batches, pooling.mode, &kernels));

  QuantizedModel model;
  model.config = config;
  BRISK_ASSIGN_OR_RETURN(model.model_files, read_model_files(dir));
  model.weights = std::move(quantized);
  model.precisions = precisions;
  model.plan = smooth ? absl::StrCat(report.plan, " +smoothquant ", f.smoothquant) : report.plan;
  BRISK_ASSIGN_OR_RETURN(model.source_sha256, file_sha256_hex(fp32.weights_file));
  model.report_json = report.to_json();
  model.head_tensors = source.head_tensors;  // a classifier keeps its head in f32
  BRISK_RETURN_IF_ERROR(save_quantized_model(f.out, model));

  fmt::print("{:<44} {:<14} {:>10} {:>10} {:>10} {:>10} {:>11}\n", "layer", "precision", "w_error", "scale_min",
             "scale_max", "act_absmax", "sensitivity");
  for (const LayerReport& l : report.layers) {
    fmt::print("{:<44} {:<14} {:>10.2e} {:>10.2e} {:>10.2e} {:>10.3g} {:>11.2e}\n", l.name, l.precision, l.weight_error,
               l.weight_scale_min, l.weight_scale_max, l.activation_absmax, l.sensitivity);
  }
  namespace fs = std::filesystem;
  const auto in_size = fs::file_size(fp32.weights_file), out_size = fs::file_size(f.out);
  fmt::print(
      "plan {}: calibration-set cosine vs fp32 mean {:.5f}, worst {:.5f} (reproducible arithmetic: the figures "
      "in the file, the same on every CPU)\n",
      report.plan, report.fidelity.mean_cosine, report.fidelity.worst_cosine);
  fmt::print("on this CPU: mean {:.5f}, worst {:.5f}, measured on {}, ISA level {}; linear layers: {}\n",
             on_this_cpu.mean_cosine, on_this_cpu.worst_cosine, cpu_model_description(), cpu_isa_name(cpu_isa()),
             absl::StrJoin(kernels, "; "));
  fmt::print("size {} bytes -> {} bytes ({:.1f}% of {})\n", in_size, out_size,
             100.0 * double(out_size) / double(in_size), fs::path(fp32.weights_file).filename().string());
  if (!f.report_csv.empty()) BRISK_RETURN_IF_ERROR(write_text(f.report_csv, report.to_csv()));
  if (!f.report_json.empty()) BRISK_RETURN_IF_ERROR(write_text(f.report_json, report.to_json()));
  return absl::OkStatus();
}

}  // namespace

void QuantizeFlags::add_to(CLI::App& cmd) {
  model_dir = brisk::default_model_dir();
  cmd.add_option("--model", model_dir, "fp32 Hugging Face model directory")->capture_default_str();
  cmd.add_option("--plan", plan, "int8, int8-static, bf16, mixed, auto, or pattern=precision rules")->required();
  cmd.add_option("--calib", calib, "calibration texts, one a line")->required();
  cmd.add_option("--out", out, "the quantized model file to write")->required();
  cmd.add_option("--calibrator", calibrator, "activation calibrator for int8-static")
      ->check(CLI::IsMember({"minmax", "ema", "percentile", "entropy", "mse"}))
      ->capture_default_str();
  cmd.add_option("--tolerance", tolerance, "auto: the mean cosine vs fp32 to keep")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd.add_option("--fallback", fallback, "auto: the precision sensitive layers fall back to")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  cmd.add_option("--smoothquant", smoothquant, "SmoothQuant alpha for the int8 layers; 0 = off")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd.add_option("--report-csv", report_csv, "write the per-layer report as CSV");
  cmd.add_option("--report-json", report_json, "write the per-layer report as JSON");
  cmd.add_option("--threads", threads, "compute threads; 0 = the CPUs this process may use")
      ->check(CLI::Range(0, brisk::kMaxThreads));
  cmd.add_option("--max-seq-len", max_seq_len, "tokens per calibration text")
      ->check(CLI::Range(2, 512))
      ->capture_default_str();
}

int run_quantize(const QuantizeFlags& flags) {
  const Status s = quantize(flags);
  if (!s.ok()) {
    fmt::print(stderr, "brisk: error: {}\n", printable(std::string(s.message())));
    return 1;
  }
  return 0;
}

}  // namespace brisk::cli
