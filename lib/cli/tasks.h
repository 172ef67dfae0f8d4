// `brisk classify` and `brisk rerank`: the runtime's classification tasks (brisk/runtime/runtime.h) from the
// command line. main.cc owns the model flags (--model, --threads, --max-seq-len, --head, --torchscript, the device
// flags) and passes the RuntimeOptions they make; these commands own their task's flags.
//
//   brisk classify [--model DIR] [--head FILE] [--top-k K] [--logits] [--torchscript FILE
//                  [--torchscript-output auto|hidden|pooled|logits]] [--max-seq-len N] [--threads N] [TEXT...]
//       One JSON line per text: {"text":...,"labels":[{"label":...,"id":N,"score":P}, ...]}, the top K labels
//       (default 1) best first; score is a softmax over the labels, or a sigmoid per label for a multi-label or
//       one-label model. --logits adds "logits": the raw logits of every label, by id. Without TEXT, classifies
//       each line of stdin (an empty line is an empty text): output line N belongs to input line N, and a line that
//       cannot be classified gets {"line":N,"error":...} and exit code 1, as `brisk embed` does.
//   brisk rerank [--model DIR] --query Q [--raw-scores] [--top-k K] [--max-seq-len N] [--threads N] [PASSAGE...]
//       Scores each (query, passage) pair with a cross-encoder (a classification model with one label) and prints
//       one JSON object {"query":...,"results":[{"index":I,"score":S,"passage":...}, ...]} sorted by score, best
//       first; score is a sigmoid of the logit, or the logit itself with --raw-scores. --top-k keeps the best K (0,
//       the default: all). Without PASSAGE, every line of stdin is a passage (index = line number - 1).
//
// A model without a classification head (an embedding model without --head) is an error naming --head, as is a
// --top-k outside 1 to the model's number of labels. Exit codes as main.cc's: 0 ok, 1 an error, 2 bad flags.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "brisk/core/status.h"
#include "brisk/runtime/runtime.h"

namespace brisk::cli {

struct ClassifyFlags {
  int top_k = 1;
  bool logits = false;  // print every label's raw logit too
  std::vector<std::string> texts;

  // Adds the task's own flags and the TEXT arguments (not the model flags).
  void add_to(CLI::App& cmd);
  // Values CLI11 cannot check with a readable message (exit code 2 when not ok).
  Status validate() const;
};

struct RerankFlags {
  std::string query;
  bool raw_scores = false;
  int top_k = 0;  // 0: every passage
  std::vector<std::string> passages;

  void add_to(CLI::App& cmd);
  Status validate() const;
};

// Return the process exit code (0 ok, 1 an error).
int run_classify(const RuntimeOptions& options, const ClassifyFlags& flags);
int run_rerank(const RuntimeOptions& options, const RerankFlags& flags);

}  // namespace brisk::cli
