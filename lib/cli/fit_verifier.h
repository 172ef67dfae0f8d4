// `brisk fit-verifier`: a learned semantic-cache verifier from labelled question pairs (brisk/runtime/pair_verifier.h).
//
//   brisk fit-verifier --model DIR --pairs pairs.tsv --out verifier.safetensors [--target-precision 0.95]
//                      [--split train] [--evaluate heldout] [--evaluate-pairs other.tsv] [--curve-csv FILE]
//                      [--curve-svg FILE] [--threads N]
//
// Embeds both questions of every pair with brisk::Runtime over DIR, fits on the pairs of --split (all of them when
// the file has no split column), chooses the threshold for --target-precision by grouped cross-validation, and
// writes the verifier file stamped with the model's cache_model_id(). Prints the cross-validated point and, for
// --evaluate (a split of the same file, never used for fitting) and --evaluate-pairs (another file), the precision,
// recall and each category's accepted share at the stored threshold. --curve-csv / --curve-svg write the
// cross-validated precision/recall curve (per threshold, with each category's accepted share) and mark the chosen
// point.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace brisk::cli {

struct FitVerifierFlags {
  std::string model_dir;
  std::string pairs;
  std::string out;
  double target_precision = 0.95;
  std::string split = "train";
  std::string evaluate;
  std::string evaluate_pairs;
  std::string curve_csv;
  std::string curve_svg;
  int threads = 0;

  void add_to(CLI::App& cmd);
};

// Returns the process exit code (0 ok, 1 error).
int run_fit_verifier(const FitVerifierFlags& flags);

}  // namespace brisk::cli
