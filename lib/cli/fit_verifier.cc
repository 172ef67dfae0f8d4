// `brisk fit-verifier`. See fit_verifier.h.
#include "fit_verifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include "brisk/runtime/pair_verifier.h"
#include "brisk/runtime/runtime.h"
#include "printable.h"

namespace brisk::cli {
namespace {

// The rows' pairs with both questions embedded (each distinct text once) and L2-normalised.
StatusOr<std::vector<LabelledPair>> embed_rows(const Runtime& rt, const std::vector<PairRow>& rows,
                                               const std::string& source) {
  std::map<std::string, size_t> index;
  std::vector<std::string_view> texts;
  for (const PairRow& r : rows) {
    for (const std::string* t : {&r.cached, &r.incoming}) {
      if (index.emplace(*t, texts.size()).second) texts.push_back(*t);
    }
  }
  StatusOr<std::vector<float>> emb = rt.embed(texts);
  if (!emb.ok()) return Status(emb.status().code(), fmt::format("{}: {}", source, std::string(emb.status().message())));
  const size_t dim = static_cast<size_t>(rt.embedding_dim());
  auto vector_of = [&](const std::string& t) {
    const float* v = emb->data() + index.at(t) * dim;
    double n = 0.0;
    for (size_t j = 0; j < dim; ++j) n += double(v[j]) * v[j];
    std::vector<float> out(v, v + dim);
    if (n > 0.0) {
      for (float& x : out) x = static_cast<float>(x / std::sqrt(n));
    }
    return out;
  };
  std::vector<LabelledPair> out;
  for (const PairRow& r : rows) {
    out.push_back(LabelledPair{r.label, r.category, r.cached, r.incoming, vector_of(r.cached), vector_of(r.incoming)});
  }
  return out;
}

struct Scored {
  std::vector<float> scores;
  std::vector<int> labels;
};

Scored score_all(const PairVerifier& v, const std::vector<LabelledPair>& pairs) {
  Scored s;
  for (const LabelledPair& p : pairs) {
    s.scores.push_back(v.score(p.pair()).value_or(0.0f));
    s.labels.push_back(p.label);
  }
  return s;
}

void print_point(const std::string& name, const std::vector<LabelledPair>& pairs, const std::vector<float>& scores,
                 const std::vector<int>& labels, float t) {
  const PrecisionRecall pr = precision_recall(scores, labels, t);
  fmt::print("{}: {} pairs, threshold {:.4f}: precision {:.3f}, recall {:.3f} ({} accepted)\n", name, pairs.size(), t,
             pr.precision, pr.recall, pr.accepted);
  for (const auto& [category, c] : accepted_by_category(pairs, scores, t)) {
    fmt::print("  {:<18} {:>4} of {:>4} accepted ({:.3f})\n", printable(category), c.accepted, c.total, c.share());
  }
}

Status write_curve(const FitVerifierFlags& f, const std::vector<LabelledPair>& pairs,
                   const PairVerifierFitReport& report) {
  std::vector<float> thresholds = report.out_of_fold_scores;
  std::sort(thresholds.begin(), thresholds.end(), std::greater<>());
  thresholds.erase(std::unique(thresholds.begin(), thresholds.end()), thresholds.end());
  std::vector<int> labels;
  for (const LabelledPair& p : pairs) labels.push_back(p.label);
  std::vector<std::pair<double, double>> curve;  // recall, precision
  if (!f.curve_csv.empty()) {
    std::ofstream csv(f.curve_csv);
    if (!csv) return absl::InvalidArgumentError(fmt::format("--curve-csv {}: cannot be written", f.curve_csv));
    const auto categories = accepted_by_category(pairs, report.out_of_fold_scores, 0.0f);
    csv << "threshold,precision,recall,chosen";
    for (const auto& [category, c] : categories) csv << ",accepted_" << category;
    csv << "\n";
    for (float t : thresholds) {
      const PrecisionRecall pr = precision_recall(report.out_of_fold_scores, labels, t);
      csv << fmt::format("{:.6f},{:.6f},{:.6f},{}", t, pr.precision, pr.recall, t == report.threshold ? 1 : 0);
      for (const auto& [category, c] : accepted_by_category(pairs, report.out_of_fold_scores, t)) {
        csv << fmt::format(",{:.6f}", c.share());
      }
      csv << "\n";
    }
  }
  if (!f.curve_svg.empty()) {
    std::ofstream svg(f.curve_svg);
    if (!svg) return absl::InvalidArgumentError(fmt::format("--curve-svg {}: cannot be written", f.curve_svg));
    const auto x = [](double recall) { return 60.0 + 400.0 * recall; };
    const auto y = [](double precision) { return 440.0 - 400.0 * precision; };
    svg << "<svg xmlns='http://www.w3.org/2000/svg' width='500' height='500' font-family='sans-serif' "
           "font-size='12'>\n<rect width='500' height='500' fill='white'/>\n"
        << fmt::format("<line x1='{0}' y1='{1}' x2='{2}' y2='{1}' stroke='black'/>\n", x(0), y(0), x(1))
        << fmt::format("<line x1='{0}' y1='{1}' x2='{0}' y2='{2}' stroke='black'/>\n", x(0), y(0), y(1))
        << fmt::format("<text x='{}' y='480'>recall (cross-validated)</text>\n", x(0.35))
        << fmt::format("<text x='5' y='{}'>precision</text>\n", y(1.02))
        << fmt::format("<line x1='{0}' y1='{1}' x2='{2}' y2='{1}' stroke='gray' stroke-dasharray='4'/>\n", x(0),
                       y(f.target_precision), x(1))
        << "<polyline fill='none' stroke='steelblue' stroke-width='2' points='";
    for (float t : thresholds) {
      const PrecisionRecall pr = precision_recall(report.out_of_fold_scores, labels, t);
      svg << fmt::format("{:.1f},{:.1f} ", x(pr.recall), y(pr.precision));
    }
    svg << "'/>\n"
        << fmt::format("<circle cx='{:.1f}' cy='{:.1f}' r='5' fill='crimson'/>\n", x(report.recall),
                       y(report.precision))
        << fmt::format("<text x='{:.1f}' y='{:.1f}'>threshold {:.3f}: P {:.3f}, R {:.3f}</text>\n",
                       x(report.recall) + 8, y(report.precision) - 8, report.threshold, report.precision, report.recall)
        << "</svg>\n";
  }
  return absl::OkStatus();
}

Status fit_verifier(const FitVerifierFlags& f) {
  BRISK_ASSIGN_OR_RETURN(std::vector<PairRow> rows, read_pair_rows(f.pairs));
  const bool has_split = !rows.empty() && !rows.front().split.empty();
  std::vector<PairRow> train, held;
  for (const PairRow& r : rows) {
    if (!has_split || r.split == f.split) {
      train.push_back(r);
    } else if (!f.evaluate.empty() && r.split == f.evaluate) {
      held.push_back(r);
    }
  }
  if (train.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: no pair of split '{}'; expected --split to name one of the file's splits", f.pairs, f.split));
  }
  RuntimeOptions options;
  options.model_dir = f.model_dir;
  options.num_threads = f.threads;
  options.cache.result_cache_bytes = 0;
  BRISK_ASSIGN_OR_RETURN(std::unique_ptr<Runtime> rt, Runtime::create(options));
  BRISK_ASSIGN_OR_RETURN(std::vector<LabelledPair> train_pairs, embed_rows(*rt, train, f.pairs));
  PairVerifierFitOptions fit;
  fit.target_precision = static_cast<float>(f.target_precision);
  PairVerifierFitReport report;
  BRISK_ASSIGN_OR_RETURN(PairVerifier v, fit_pair_verifier(train_pairs, rt->embedding_model_id(), fit, &report));
  BRISK_RETURN_IF_ERROR(v.save(f.out));
  const std::string chosen = report.model == "trees" ? std::string("gradient-boosted trees over the text features")
                                                     : fmt::format("logistic, l2 {}, embedding features' weight {}",
                                                                   report.l2, report.embedding_weight);
  fmt::print("fit on {} pairs ({}): {}, {}\n", train_pairs.size(), has_split ? "split " + f.split : "all", chosen,
             report.target_met ? "target met" : "TARGET NOT MET (the threshold with the best precision)");
  std::vector<int> labels;
  for (const LabelledPair& p : train_pairs) labels.push_back(p.label);
  print_point("cross-validated", train_pairs, report.out_of_fold_scores, labels, report.threshold);
  BRISK_RETURN_IF_ERROR(write_curve(f, train_pairs, report));
  if (!held.empty()) {
    BRISK_ASSIGN_OR_RETURN(std::vector<LabelledPair> held_pairs, embed_rows(*rt, held, f.pairs));
    const Scored s = score_all(v, held_pairs);
    print_point("split " + f.evaluate + " (not fitted on)", held_pairs, s.scores, s.labels, v.threshold());
  } else if (!f.evaluate.empty()) {
    return absl::InvalidArgumentError(fmt::format("{}: no pair of split '{}' to evaluate", f.pairs, f.evaluate));
  }
  if (!f.evaluate_pairs.empty()) {
    BRISK_ASSIGN_OR_RETURN(std::vector<PairRow> other, read_pair_rows(f.evaluate_pairs));
    BRISK_ASSIGN_OR_RETURN(std::vector<LabelledPair> other_pairs, embed_rows(*rt, other, f.evaluate_pairs));
    const Scored s = score_all(v, other_pairs);
    print_point(printable(f.evaluate_pairs), other_pairs, s.scores, s.labels, v.threshold());
  }
  fmt::print("wrote {} (model {}, threshold {:.4f} for precision {})\n", printable(f.out),
             printable(rt->embedding_model_id()), v.threshold(), f.target_precision);
  return absl::OkStatus();
}

}  // namespace

void FitVerifierFlags::add_to(CLI::App& cmd) {
  model_dir = brisk::default_model_dir();
  cmd.add_option("--model", model_dir, "the embedding model: a model directory or a quantized model file")
      ->capture_default_str();
  cmd.add_option("--pairs", pairs, "labelled pairs: label<TAB>category<TAB>cached<TAB>incoming[<TAB>split]")
      ->required();
  cmd.add_option("--out", out, "the verifier file to write (safetensors)")->required();
  cmd.add_option("--target-precision", target_precision, "cross-validated precision the threshold must reach")
      ->check(CLI::Range(0.01, 1.0))
      ->capture_default_str();
  cmd.add_option("--split", split, "the split to fit on, when the file has a split column")->capture_default_str();
  cmd.add_option("--evaluate", evaluate, "a split of the same file to evaluate on (never fitted on)");
  cmd.add_option("--evaluate-pairs", evaluate_pairs, "another pairs file to evaluate on");
  cmd.add_option("--curve-csv", curve_csv, "write the cross-validated precision/recall curve as CSV");
  cmd.add_option("--curve-svg", curve_svg, "write the cross-validated precision/recall curve as an SVG plot");
  cmd.add_option("--threads", threads, "compute threads; 0 = the CPUs this process may use")
      ->check(CLI::Range(0, brisk::kMaxThreads));
}

int run_fit_verifier(const FitVerifierFlags& flags) {
  const Status s = fit_verifier(flags);
  if (!s.ok()) {
    fmt::print(stderr, "brisk: error: {}\n", printable(std::string(s.message())));
    return 1;
  }
  return 0;
}

}  // namespace brisk::cli
