// `brisk classify` and `brisk rerank`. See tasks.h.
#include "tasks.h"

#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <span>
#include <string_view>

#include "absl/strings/strip.h"
#include "output.h"

namespace brisk::cli {
namespace {

// The runtime's task must be classification: an embedding model is refused naming what the CLI user can change.
Status require_classifier(const Runtime& rt, std::string_view command, std::string_view expected) {
  const ModelInfo& m = rt.info();
  if (m.task == "classification") return absl::OkStatus();
  return absl::FailedPreconditionError(
      fmt::format("{}: model '{}' is an embedding model with no classification head (backend {}); expected {}", command,
                  m.model_dir, m.backend, expected));
}

// ---------------------------------------------------------------------------------------------------------------
// classify

void print_labels_line(std::string_view text, std::span<const LabelScore> labels, std::span<const float> logits,
                       std::string& buf) {
  buf.clear();
  buf += R"({"text":)";
  buf += json_string(text);
  buf += R"(,"labels":[)";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) buf += ',';
    buf += R"({"label":)";
    buf += json_string(labels[i].label);
    fmt::format_to(std::back_inserter(buf), R"(,"id":{},"score":)", labels[i].id);
    append_float(buf, labels[i].score);
    buf += '}';
  }
  buf += ']';
  if (!logits.empty()) {
    buf += R"(,"logits":[)";
    for (size_t i = 0; i < logits.size(); ++i) {
      if (i > 0) buf += ',';
      append_float(buf, logits[i]);
    }
    buf += ']';
  }
  buf += "}\n";
  std::fwrite(buf.data(), 1, buf.size(), stdout);
}

Status classify_and_print(const Runtime& rt, const ClassifyFlags& f, std::span<const std::string> texts,
                          std::string& buf) {
  if (texts.empty()) return absl::OkStatus();
  const std::vector<std::string_view> views(texts.begin(), texts.end());
  BRISK_ASSIGN_OR_RETURN(std::vector<std::vector<LabelScore>> labels, rt.classify(views, f.top_k));
  std::vector<float> logits;
  const size_t num_labels = rt.info().labels.size();
  if (f.logits) {
    // The same token ids: served from the result cache when it is on, which holds the logits.
    BRISK_ASSIGN_OR_RETURN(logits, rt.logits(views));
    if (logits.size() != texts.size() * num_labels) {
      return absl::InternalError(fmt::format("logits returned {} floats for {} texts of {} labels; expected {}",
                                             logits.size(), texts.size(), num_labels, texts.size() * num_labels));
    }
  }
  for (size_t i = 0; i < texts.size(); ++i) {
    print_labels_line(
        texts[i], labels[i],
        f.logits ? std::span<const float>(logits).subspan(i * num_labels, num_labels) : std::span<const float>(), buf);
  }
  std::fflush(stdout);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------------------------
// rerank

std::vector<std::string> read_stdin_lines() {
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace

void ClassifyFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--top-k", top_k, "labels per text, best first: 1 to the model's number of labels")
      ->capture_default_str();
  cmd.add_flag("--logits", logits, "also print every label's raw logit, by label id");
  cmd.add_option("TEXT", texts, "texts to classify; none: read one text per line from stdin");
}

Status ClassifyFlags::validate() const {
  if (top_k < 1) {
    return absl::InvalidArgumentError(
        fmt::format("--top-k {} is not a number of labels; expected 1 to the model's number of labels", top_k));
  }
  return absl::OkStatus();
}

void RerankFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--query", query, "the query every passage is scored against")->required();
  cmd.add_flag("--raw-scores", raw_scores, "print the model's logits instead of their sigmoid");
  cmd.add_option("--top-k", top_k, "print only the best K passages; 0 = all")->capture_default_str();
  cmd.add_option("PASSAGE", passages, "passages to rank; none: read one passage per line from stdin");
}

Status RerankFlags::validate() const {
  if (top_k < 0) {
    return absl::InvalidArgumentError(
        fmt::format("--top-k {} is negative; expected a number of passages, or 0 for all of them", top_k));
  }
  return absl::OkStatus();
}

int run_classify(const RuntimeOptions& options, const ClassifyFlags& flags) {
  auto rt = Runtime::create(options);
  if (!rt.ok()) return report_error(rt.status());
  if (Status s = require_classifier(**rt, "classify",
                                    "a *ForSequenceClassification model directory, or --head FILE (a head written by "
                                    "brisk fit-intents for this model)");
      !s.ok()) {
    return report_error(s);
  }
  const size_t num_labels = (*rt)->info().labels.size();
  if (static_cast<size_t>(flags.top_k) > num_labels) {
    return report_error(
        absl::InvalidArgumentError(fmt::format("--top-k {} is more than the {} labels of model '{}'; expected 1 to {}",
                                               flags.top_k, num_labels, (*rt)->info().model_dir, num_labels)));
  }
  std::string buf;
  if (flags.texts.empty()) {
    return run_over_stdin_lines(
        [&](std::span<const std::string> texts) { return classify_and_print(**rt, flags, texts, buf); });
  }
  const Status s = classify_and_print(**rt, flags, flags.texts, buf);
  return s.ok() ? kExitOk : report_error(s);
}

int run_rerank(const RuntimeOptions& options, const RerankFlags& flags) {
  const std::vector<std::string> passages = flags.passages.empty() ? read_stdin_lines() : flags.passages;
  if (passages.empty()) {
    return report_error(absl::InvalidArgumentError(
        "rerank: no passages; expected PASSAGE arguments, or one passage per line on stdin"));
  }
  auto rt = Runtime::create(options);
  if (!rt.ok()) return report_error(rt.status());
  if (Status s = require_classifier(**rt, "rerank",
                                    "a cross-encoder (a *ForSequenceClassification model with one "
                                    "label)");
      !s.ok()) {
    return report_error(s);
  }
  const std::vector<std::string_view> views(passages.begin(), passages.end());
  RerankOptions ro;
  ro.raw_scores = flags.raw_scores;
  ro.top_k = static_cast<size_t>(flags.top_k);
  auto ranked = (*rt)->rerank(flags.query, views, ro);
  if (!ranked.ok()) return report_error(ranked.status());
  std::string buf = R"({"query":)";
  buf += json_string(flags.query);
  buf += R"(,"results":[)";
  for (size_t i = 0; i < ranked->size(); ++i) {
    const RerankResult& r = (*ranked)[i];
    if (i > 0) buf += ',';
    fmt::format_to(std::back_inserter(buf), R"({{"index":{},"score":)", r.index);
    append_float(buf, r.score);
    buf += R"(,"passage":)";
    buf += json_string(passages[r.index]);
    buf += '}';
  }
  buf += "]}\n";
  std::fwrite(buf.data(), 1, buf.size(), stdout);
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace brisk::cli
