// Helpers shared by the accuracy programs (brisk_quant_accuracy, brisk_prune_curve): reading the benchmark's text
// files, packing texts into batches, top-1 retrieval, and the FAQ assistant's top-1 accuracy against the
// hand-written gold labels of benchmarks/data/faq_labels.tsv.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "brisk/core/text_lines.h"
#include "brisk/kernels/vector_math.h"
#include "brisk/model/encoder.h"
#include "brisk/model/text_tokenizer.h"
#include "brisk/quant/quantizer.h"

namespace brisk::bench {

// The texts of a file (brisk/core/text_lines.h); none, with the reason on stderr, when it cannot be read.
inline std::vector<std::string> read_lines(const std::string& path) {
  StatusOr<std::vector<std::string>> lines = read_text_lines(path, "benchmark data");
  if (!lines.ok()) fmt::print(stderr, "{}\n", std::string(lines.status().message()));
  return lines.ok() ? *std::move(lines) : std::vector<std::string>();
}

// The texts tokenized (at most 128 tokens each) into batches of per_batch sequences, in order.
inline std::vector<PackedSequences> pack(const TextTokenizer& tok, const std::vector<std::string>& texts,
                                         int per_batch) {
  std::vector<PackedSequences> batches;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (i % static_cast<size_t>(per_batch) == 0) batches.emplace_back();
    batches.back().add(tok.encode(texts[i], 128).value());
  }
  return batches;
}

// For each query (rows of width h), the index of the document with the highest dot product (first on ties).
inline std::vector<int> top1(const std::vector<float>& queries, const std::vector<float>& docs, int64_t h) {
  std::vector<int> out;
  const int64_t nd = static_cast<int64_t>(docs.size()) / h;
  for (size_t q = 0; q * h < queries.size(); ++q) {
    int best = 0;
    double best_s = -2;
    for (int64_t d = 0; d < nd; ++d) {
      const double s = kernels::dot(&queries[q * h], &docs[d * h], h);
      if (s > best_s) best_s = s, best = static_cast<int>(d);
    }
    out.push_back(best);
  }
  return out;
}

// The FAQ assistant's entries (examples/faq_assistant/faq.tsv) and questions (questions.txt), with the gold labels
// of benchmarks/data/faq_labels.tsv: per question, the accepted entry indices (empty: no entry answers it).
struct FaqSet {
  std::vector<std::string> entries, questions;
  std::vector<std::vector<int>> gold;
  std::vector<PackedSequences> entry_batches, question_batches;

  // The top-1 entry of each question under `encoder`.
  std::vector<int> retrieve(const BertEncoder& encoder, Pooling pooling) const {
    return top1(quant::embed_all(encoder, question_batches, pooling).value(),
                quant::embed_all(encoder, entry_batches, pooling).value(), encoder.hidden_size());
  }
  // The share of answerable questions (in %) whose top-1 entry is an accepted one.
  double accuracy(const std::vector<int>& t1) const {
    int answerable = 0, right = 0;
    for (size_t i = 0; i < t1.size(); ++i) {
      if (gold[i].empty()) continue;
      ++answerable;
      right += std::find(gold[i].begin(), gold[i].end(), t1[i]) != gold[i].end();
    }
    return 100.0 * right / answerable;
  }
  int answerable() const {
    return static_cast<int>(std::count_if(gold.begin(), gold.end(), [](const auto& g) { return !g.empty(); }));
  }
};

// Loads the FAQ set from the source tree; nullopt (with a message on stderr) when the labels do not match.
inline std::optional<FaqSet> load_faq(const std::string& source_dir, const TextTokenizer& tok) {
  FaqSet s;
  const std::string faq_dir = source_dir + "/examples/faq_assistant";
  s.entries = read_lines(faq_dir + "/faq.tsv");
  for (std::string& entry : s.entries) entry.resize(std::min(entry.size(), entry.find('\t')));  // the question
  s.questions = read_lines(faq_dir + "/questions.txt");
  for (const std::string& line : read_lines(source_dir + "/benchmarks/data/faq_labels.tsv")) {
    std::vector<std::string> f = absl::StrSplit(line, '\t');
    std::vector<int> accepted;
    if (f.size() >= 2 && f[1] != "-1") accepted.push_back(std::stoi(f[1]));
    if (f.size() >= 4 && !f[3].empty()) {
      for (const std::string& alt : std::vector<std::string>(absl::StrSplit(f[3], ',')))
        accepted.push_back(std::stoi(alt));
    }
    s.gold.push_back(accepted);
  }
  if (s.gold.size() != s.questions.size() || s.questions.empty()) {
    fmt::print(stderr, "faq_labels.tsv has {} rows for {} questions\n", s.gold.size(), s.questions.size());
    return std::nullopt;
  }
  s.entry_batches = pack(tok, s.entries, 32);
  s.question_batches = pack(tok, s.questions, 32);
  return s;
}

}  // namespace brisk::bench
