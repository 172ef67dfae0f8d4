// The model flags the tool's subcommands share: --model, --threads, --policy, the text, pooling, head and TorchScript
// groups, and the device flags (--device, --dtype, --no-remove-padding, --float-attention, --device-memory-limit),
// turned into RuntimeOptions.
//
//   ModelFlags flags;
//   flags.add_to(*cmd, kTextFlags | kHeadFlag);        // after parsing: flags.validate(), then
//   auto rt = brisk::Runtime::create(flags.runtime_options());
//
// validate() checks what CLI11 cannot (the device string, byte sizes) with brisk's own messages; main.cc exits 2 on
// its errors. Not thread-safe: parse, validate and read on one thread.
#pragma once

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "brisk/core/device.h"
#include "brisk/core/status.h"
#include "brisk/runtime/runtime.h"

namespace brisk::cli {

// "1048576", "512K", "512M", "2G", "1T" -> bytes. K, M, G and T are binary multiples (2G = 2 GiB, as the memory
// a GPU reports); "KB", "KiB", "MB", "MiB"... and a plain trailing "B" are accepted, in any case.
inline StatusOr<size_t> parse_bytes(std::string_view flag, std::string_view text) {
  // std:: only: Debian's abseil has its own string_view, which std::string_view does not convert to.
  std::string_view trimmed = text;
  while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.front()))) trimmed.remove_prefix(1);
  while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.back()))) trimmed.remove_suffix(1);
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(trimmed.data(), trimmed.data() + trimmed.size(), n);
  std::string unit(end, trimmed.data() + trimmed.size());
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  uint64_t scale = 0;
  for (const auto& [name, shift] :
       {std::pair<std::string, int>{"", 0}, {"B", 0}, {"K", 10}, {"M", 20}, {"G", 30}, {"T", 40}}) {
    if (unit == name || (shift > 0 && (unit == name + "B" || unit == name + "IB"))) scale = uint64_t{1} << shift;
  }
  if (ec == std::errc::result_out_of_range ||
      (ec == std::errc() && scale != 0 && n > std::numeric_limits<size_t>::max() / scale)) {
    return absl::InvalidArgumentError(
        fmt::format("{} '{}' is too large; expected at most {} bytes", flag, text, std::numeric_limits<size_t>::max()));
  }
  if (ec != std::errc() || end == trimmed.data() || scale == 0) {
    return absl::InvalidArgumentError(fmt::format(
        "{} '{}' is not a size in bytes; expected a whole number with an optional K, M, G or T suffix (512M, 2G)", flag,
        text));
  }
  return static_cast<size_t>(n * scale);
}

// Where the encoder runs and in what precision: every subcommand that creates a Runtime takes these.
struct DeviceFlags {
  std::string device = "cpu";
  std::string dtype;  // "", "f32", "f16" or "bf16"; "": the device's default
  bool no_remove_padding = false;
  bool float_attention = false;
  std::string device_memory_limit = "0";

  // Checked after parsing, so that a bad value gets brisk's own message (and exit code 2), not a crash.
  brisk::DeviceSpec spec;
  size_t memory_limit_bytes = 0;

  void add_to(CLI::App& cmd) {
    cmd.add_option("--device", device, "where the encoder runs: cpu, cuda (GPU 0) or cuda:N")->capture_default_str();
    cmd.add_option("--dtype", dtype, "activation dtype: f32, f16 or bf16 (default: f32 on cpu, f16 on cuda)")
        ->check(CLI::IsMember({"f32", "f16", "bf16"}));
    cmd.add_flag("--no-remove-padding", no_remove_padding,
                 "pad every text to the batch's longest instead of running the dense layers on real tokens only");
    cmd.add_flag("--float-attention", float_attention,
                 "int8 model files: keep self-attention in float (default: int8 where the CPU has AVX-512)");
    cmd.add_option("--device-memory-limit", device_memory_limit,
                   "cuda: the most GPU memory brisk may hold, in bytes (suffixes K, M, G, T: 512M, 2G); 0 = no cap")
        ->capture_default_str();
  }

  Status validate() {
    StatusOr<brisk::DeviceSpec> d = brisk::parse_device(device);
    if (!d.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("--device '{}' is not a device; expected cpu, cuda or cuda:N", device));
    }
    spec = *d;
    if (spec.type == brisk::Device::kCPU && !dtype.empty() && dtype != "f32") {
      return absl::InvalidArgumentError(fmt::format(
          "--dtype {} is for cuda; expected f32 (the cpu's only activation dtype) or --device cuda", dtype));
    }
    BRISK_ASSIGN_OR_RETURN(memory_limit_bytes, parse_bytes("--device-memory-limit", device_memory_limit));
    return absl::OkStatus();
  }

  void apply(brisk::RuntimeOptions& o) const {
    o.device = spec.type;
    o.device_index = spec.index;
    if (dtype == "f32") o.activation_dtype = brisk::DType::kF32;
    if (dtype == "f16") o.activation_dtype = brisk::DType::kF16;
    if (dtype == "bf16") o.activation_dtype = brisk::DType::kBF16;
    o.remove_padding = !no_remove_padding;
    o.int8_attention = !float_attention;
    o.device_memory_limit = memory_limit_bytes;
  }
};

// Which of ModelFlags' optional groups a subcommand takes (a bitwise or of them).
namespace model_flag_groups {
enum ModelFlagGroups : unsigned {
  kTextFlags = 1,         // --max-seq-len, --replace-invalid-utf8
  kPoolingFlags = 2,      // --pooling, --no-normalize
  kHeadFlag = 4,          // --head
  kTorchScriptFlags = 8,  // --torchscript, --torchscript-output
};
}  // namespace model_flag_groups
using namespace model_flag_groups;

// Options shared by every subcommand that loads a model.
struct ModelFlags {
  std::string model_dir = brisk::default_model_dir();
  int threads = 0;
  int max_seq_len = 0;
  std::string pooling;  // "", "mean" or "cls"
  bool no_normalize = false;
  bool replace_invalid_utf8 = false;
  std::string head;         // RuntimeOptions::classification_head
  std::string torchscript;  // RuntimeOptions::torchscript->module
  std::string torchscript_output = "auto";
  std::string policy;  // RuntimeOptions::policy_path
  DeviceFlags device;

  void add_to(CLI::App& cmd, unsigned groups) {
    cmd.add_option("--model", model_dir,
                   groups & kTorchScriptFlags
                       ? "Hugging Face model directory, or a quantized model file (with --torchscript: the tokenizer "
                         "and config.json)"
                       : "Hugging Face model directory, or a quantized model file")
        ->capture_default_str();
    // Explicit ranges: CLI11's NonNegativeNumber would print its bound, DBL_MAX, in 309 digits.
    cmd.add_option("--threads", threads, "compute threads; 0 = the CPUs this process may use")
        ->check(CLI::Range(0, brisk::kMaxThreads))
        ->capture_default_str();
    cmd.add_option("--policy", policy,
                   "a serving policy file written by brisk tune: its batching and thread values override the "
                   "defaults and --threads");
    device.add_to(cmd);
    if (groups & kTextFlags) {
      cmd.add_option("--max-seq-len", max_seq_len, "tokens per text after truncation; 0 = the model's maximum")
          ->check(CLI::Range(0, std::numeric_limits<int>::max()))
          ->capture_default_str();
      cmd.add_flag("--replace-invalid-utf8", replace_invalid_utf8,
                   "drop bytes that are not valid UTF-8 instead of failing on them");
    }
    if (groups & kPoolingFlags) {
      cmd.add_option("--pooling", pooling, "mean, cls or lasttoken (default: the model's Pooling config, else mean)")
          ->check(CLI::IsMember({"mean", "cls", "lasttoken"}));
      cmd.add_flag("--no-normalize", no_normalize, "do not L2-normalise the embeddings");
    }
    if (groups & kHeadFlag) {
      cmd.add_option("--head", head,
                     "a classification head file written by brisk fit-intents for --model: classify with it");
    }
    if (groups & kTorchScriptFlags) {
      CLI::Option* ts = cmd.add_option("--torchscript", torchscript,
                                       "run this TorchScript module (torch.jit.save) instead of brisk's encoder");
      cmd.add_option("--torchscript-output", torchscript_output,
                     "which output of the module is the result: auto, hidden (last hidden state, pooled by brisk), "
                     "pooled or logits")
          ->check(CLI::IsMember({"auto", "hidden", "pooled", "logits"}))
          ->needs(ts)
          ->capture_default_str();
    }
  }

  Status validate() { return device.validate(); }

  brisk::RuntimeOptions runtime_options() const {
    brisk::RuntimeOptions o;
    o.model_dir = model_dir;
    o.num_threads = threads;
    o.max_seq_len = max_seq_len;
    o.pooling = pooling == "mean"        ? brisk::Pooling::kMean
                : pooling == "cls"       ? brisk::Pooling::kCls
                : pooling == "lasttoken" ? brisk::Pooling::kLastToken
                                         : brisk::Pooling::kModelDefault;
    if (no_normalize) o.normalize = false;
    o.replace_invalid_utf8 = replace_invalid_utf8;
    o.classification_head = head;
    o.policy_path = policy;
    if (!torchscript.empty()) {
      brisk::TorchScriptOptions ts;
      ts.module = torchscript;
      ts.output = torchscript_output == "hidden"   ? brisk::TorchScriptOutput::kLastHiddenState
                  : torchscript_output == "pooled" ? brisk::TorchScriptOutput::kPooled
                  : torchscript_output == "logits" ? brisk::TorchScriptOutput::kLogits
                                                   : brisk::TorchScriptOutput::kAuto;
      o.torchscript = ts;
    }
    device.apply(o);
    return o;
  }
};

}  // namespace brisk::cli
