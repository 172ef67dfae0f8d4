// `brisk tune`: finds the batching policy with the most goodput within a P99 SLO for one model, rate and traffic mix,
// and writes it as a serving policy file (brisk/runtime/serving_policy.h) that the runtime, the C API, the CLI
// (--policy) and the HTTP example load.
//
//   brisk tune --model DIR --rate 40 --slo-p99-ms 50 [--mix faq|mixed|FILE] [--duration-s 4] [--budget-s 120]
//              [--out policy.json] [--json]
//
// Each candidate is measured by the open-loop load generator (brisk/runtime/load_test.h) at the rate, over the mix:
// faq, short FAQ questions (examples/faq_assistant/questions.txt); mixed, 80% of those and 20% passages of about 100
// to 250 tokens (FAQ answers joined); FILE, one text per line. The search is brisk/runtime/auto_tuner.h's coordinate
// descent with early stopping; the defaults are measured first, and the winner and the defaults again, interleaved,
// at the end. Prints every candidate tried and the chosen policy against the defaults.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "model_flags.h"

namespace brisk::cli {

struct TuneFlags {
  ModelFlags model;
  double rate = 0;
  double slo_p99_ms = 0;
  std::string mix = "faq";
  std::string questions;  // default: the source tree's examples/faq_assistant/questions.txt
  std::string faq;        // default: examples/faq_assistant/faq.tsv (the passages of the mixed mix)
  double duration_s = 4;
  double budget_s = 120;
  double timeout_ms = -1;  // request deadline; -1: the SLO; 0: none
  int cores = 0;           // 0: the machine's
  int max_rounds = 3;
  int final_repeats = 2;
  uint64_t seed = 1;
  std::string out = "policy.json";
  bool json_output = false;

  void add_to(CLI::App& cmd);
};

// Returns the process exit code (0 ok, 1 error, 2 usage).
int run_tune(TuneFlags& flags);

}  // namespace brisk::cli
