// `brisk fit-intents`: a few-shot intent head from labelled examples (see brisk/model/intent_head.h).
//
//   brisk fit-intents --model DIR --examples intents.tsv --out head.safetensors [--l2 X] [--unknown-threshold P]
//                     [--max-iterations N] [--threads N]
//
// Embeds every example (label<TAB>text lines) with brisk::Runtime over DIR, fits the softmax-regression head on the
// embeddings, and writes the head file that RuntimeOptions::classification_head reads, stamped with the model's
// cache_model_id(). Prints the examples per intent with the training accuracy of each, the fit's iterations and
// gradient, and the time taken. The label "unknown" is refused: it is what a router answers below the threshold.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "brisk/model/intent_head.h"

namespace brisk::cli {

// The threshold written when --unknown-threshold is not given: the middle of the best range (0.35 to 0.45) on
// examples/intent_router's held-out data with all-MiniLM-L6-v2 and the default l2 (see its README.md). It depends
// on the number of intents and on l2: measure it on held-out data of your own.
inline constexpr double kDefaultUnknownThreshold = 0.4;

struct FitIntentsFlags {
  std::string model_dir;
  std::string examples;
  std::string out;
  double l2 = IntentFitOptions{}.l2;
  double unknown_threshold = kDefaultUnknownThreshold;
  int max_iterations = 1000;
  int threads = 0;

  void add_to(CLI::App& cmd);
};

// Returns the process exit code (0 ok, 1 error).
int run_fit_intents(const FitIntentsFlags& flags);

}  // namespace brisk::cli
