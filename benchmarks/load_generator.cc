// brisk_load_generator: an open-loop Poisson load generator against the real all-MiniLM-L6-v2 encoder behind
// brisk's dynamic batcher. Experiments (all by default; each prints markdown tables):
//   a  saturated throughput, closed loop: max batch 64 (S), 32, and no batching (S1)
//   b  open loop at 50/80/95/120% of S for no batching, fixed batch + timeout (Triton-like) and brisk's adaptive
//      batcher, plus the throughput at the SLO found by a short search
//   c  priority isolation: high priority at 0.2 x S with low priority at 2 x S
//   d  padding: length buckets vs FIFO on a padded backend, 8- and 128-token inputs
//   e  capacity planning: brisk plan's batching simulation against the open loop at 80% load (not in the default)
//
//   build/release/benchmarks/brisk_load_generator [--model-dir DIR] [--questions FILE] [--duration-s 5]
//       [--experiments a,b,c,d] [--out FILE] [--seed 1] [--slo-ms 100] [--threads 2] [--search-steps 4]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "brisk/runtime/runtime.h"
#include "load/load.h"

#ifndef BRISK_SOURCE_DIR
#define BRISK_SOURCE_DIR "."
#endif

namespace {

void usage() {
  std::fprintf(stderr,
               "usage: brisk_load_generator [--model-dir DIR] [--questions FILE] [--duration-s SECONDS]\n"
               "         [--experiments a,b,c,d,e] [--out FILE] [--seed N] [--slo-ms MS] [--threads N]\n"
               "         [--search-steps N]\n");
}

}  // namespace

int main(int argc, char** argv) {
  brisk::load::Options opt;
  opt.model_dir = brisk::default_model_dir();
  opt.questions = std::string(BRISK_SOURCE_DIR) + "/examples/faq_assistant/questions.txt";
  opt.command_line = "brisk_load_generator";
  for (int i = 1; i < argc; ++i) opt.command_line += std::string(" ") + argv[i];
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    if (arg == "-h" || arg == "--help") {
      usage();
      return 0;
    }
    if (const size_t eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      std::fprintf(stderr, "brisk_load_generator: %s needs a value\n", arg.c_str());
      usage();
      return 2;
    }
    char* end = nullptr;
    auto number = [&](double lo) {
      const double v = std::strtod(value.c_str(), &end);
      if (end == value.c_str() || *end != '\0' || !(v >= lo)) {
        std::fprintf(stderr, "brisk_load_generator: %s is '%s'; expected a number >= %g\n", arg.c_str(), value.c_str(),
                     lo);
        std::exit(2);
      }
      return v;
    };
    if (arg == "--model-dir") {
      opt.model_dir = value;
    } else if (arg == "--questions") {
      opt.questions = value;
    } else if (arg == "--duration-s") {
      opt.duration_s = number(0.1);
    } else if (arg == "--experiments") {
      opt.experiments = value;
    } else if (arg == "--out") {
      opt.out = value;
    } else if (arg == "--seed") {
      opt.seed = static_cast<uint64_t>(number(0));
    } else if (arg == "--slo-ms") {
      opt.slo = std::chrono::duration_cast<brisk::load::Duration>(std::chrono::duration<double, std::milli>(number(1)));
    } else if (arg == "--threads") {
      opt.threads = static_cast<int>(number(1));
    } else if (arg == "--search-steps") {
      opt.search_steps = static_cast<int>(number(0));
    } else {
      std::fprintf(stderr, "brisk_load_generator: unknown flag %s\n", arg.c_str());
      usage();
      return 2;
    }
  }
  for (char c : opt.experiments) {
    if (c != ',' && (c < 'a' || c > 'e')) {
      std::fprintf(stderr, "brisk_load_generator: --experiments is '%s'; expected a comma list of a, b, c, d, e\n",
                   opt.experiments.c_str());
      return 2;
    }
  }
  return brisk::load::run_experiments(opt);
}
