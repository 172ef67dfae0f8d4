// `brisk sensitivity` and `brisk prune`: the pruner from the command line (see brisk/prune/).
//
//   brisk sensitivity --model DIR|model.pt --texts FILE --mode sweep|zero --out DIR
//                     [--granularity structure|tensor] [--levels 0,0.1,...] [--importance activation|l1|l2]
//                     [--tokenizer DIR] [--max-texts N] [--threads N] [--max-seq-len N]
//       Writes DIR/sensitivity.csv, .json and .svg, and prints what matters least. A TorchScript module (model.pt)
//       is analysed per named parameter with the output-cosine metric; its tokenizer comes from --tokenizer.
//
//   brisk prune --model DIR --calib FILE --out DIR [--heads A] [--ffn A] [--layers L,L] [--units NAME,...]
//               [--guided (--target-params P | --target-flops F) [--sweep sensitivity.json]]
//               [--schedule [--step S] [--min-cosine C]] [--reconstruct [--damping D] [--reconstruct-mode
//               sequential|local]]
//               [--importance activation|l1|l2] [--unstructured A [--global]] [--n-m 2:4]
//       Amounts and targets are fractions to REMOVE. Writes a model directory that loads wherever a model loads
//       (quantize it with `brisk quantize --model DIR`), or, for --out FILE.safetensors, one brisk model file (the
//       quantizer's format, fp32 layers); prints per-layer shapes and the calibration cosine.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace brisk::cli {

struct SensitivityFlags {
  std::string model, texts, out, mode = "sweep", granularity = "structure", levels, importance = "activation";
  std::string tokenizer;
  int64_t max_texts = 0;
  int threads = 0;
  int max_seq_len = 128;

  void add_to(CLI::App& cmd);
};

struct PruneFlags {
  std::string model, calib, out, layers, units, sweep, importance = "activation", n_m;
  std::string reconstruct_mode = "local";
  double heads = 0.0, ffn = 0.0, target_params = 0.0, target_flops = 0.0, damping = 0.1, unstructured = 0.0;
  double step = 0.1, min_cosine = 0.97;
  bool guided = false, schedule = false, reconstruct = false, global = false;
  int threads = 0;
  int max_seq_len = 128;

  void add_to(CLI::App& cmd);
};

// Each returns the process exit code (0 ok, 1 error).
int run_sensitivity(const SensitivityFlags& flags);
int run_prune(const PruneFlags& flags);

}  // namespace brisk::cli
