// `brisk fit-intents`. See fit_intents.h.
#include "fit_intents.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "brisk/model/intent_head.h"
#include "brisk/runtime/runtime.h"
#include "printable.h"

namespace brisk::cli {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Status fit_intents(const FitIntentsFlags& f) {
  const auto t0 = std::chrono::steady_clock::now();
  BRISK_ASSIGN_OR_RETURN(IntentExamples examples, read_intent_examples(f.examples));
  for (size_t id = 0; id < examples.labels.size(); ++id) {
    if (examples.labels[id] == "unknown") {
      const auto line = std::find(examples.label_ids.begin(), examples.label_ids.end(), static_cast<int32_t>(id));
      return absl::InvalidArgumentError(fmt::format(
          "{}:{}: the label 'unknown' is what a router answers below the threshold; expected intents only (leave "
          "out-of-scope examples out of the training file)",
          f.examples, examples.lines[static_cast<size_t>(line - examples.label_ids.begin())]));
    }
  }
  RuntimeOptions options;
  options.model_dir = f.model_dir;
  options.num_threads = f.threads;
  options.cache.result_cache_bytes = 0;  // every example is embedded once
  BRISK_ASSIGN_OR_RETURN(std::unique_ptr<Runtime> rt, Runtime::create(options));
  const auto t_embed = std::chrono::steady_clock::now();
  const std::vector<std::string_view> texts = examples.text_views();
  StatusOr<std::vector<float>> embeddings = rt->embed(texts);
  if (!embeddings.ok()) {
    return absl::Status(embeddings.status().code(),
                        fmt::format("{}: {}", f.examples, std::string(embeddings.status().message())));
  }
  const double embed_s = seconds_since(t_embed);

  IntentFitOptions fit;
  fit.l2 = f.l2;
  fit.max_iterations = f.max_iterations;
  IntentFitStats stats;
  const auto t_fit = std::chrono::steady_clock::now();
  BRISK_ASSIGN_OR_RETURN(ClassificationHead head, fit_intent_head(*embeddings, rt->embedding_dim(), examples.label_ids,
                                                                  examples.labels, fit, &stats));
  const double fit_s = seconds_since(t_fit);

  // Per-intent training accuracy, with the f32 head as it is saved.
  const int64_t rows = examples.size(), k = head.num_labels();
  std::vector<float> logits(static_cast<size_t>(rows * k));
  BRISK_RETURN_IF_ERROR(head.apply(embeddings->data(), rows, logits.data()));
  std::vector<int64_t> correct(static_cast<size_t>(k), 0);
  for (int64_t i = 0; i < rows; ++i) {
    const float* row = logits.data() + i * k;
    const int32_t want = examples.label_ids[static_cast<size_t>(i)];
    if (std::max_element(row, row + k) - row == want) ++correct[static_cast<size_t>(want)];
  }

  IntentHeadFile file;
  file.head = std::move(head);
  file.embedding_model_id = rt->cache_model_id();
  file.unknown_threshold = static_cast<float>(f.unknown_threshold);
  file.fit_options = fit;
  file.training_stats = stats;
  BRISK_RETURN_IF_ERROR(save_intent_head(f.out, file));

  size_t width = 6;
  for (const std::string& label : examples.labels) width = std::max(width, printable(label).size());
  fmt::print("{:<{}}  {:>8}  {:>9}\n", "intent", width, "examples", "train_acc");
  for (int64_t id = 0; id < k; ++id) {
    const int64_t n = stats.examples_per_label[static_cast<size_t>(id)];
    fmt::print("{:<{}}  {:>8}  {:>8.1f}%\n", printable(examples.labels[static_cast<size_t>(id)]), width, n,
               100.0 * static_cast<double>(correct[static_cast<size_t>(id)]) / static_cast<double>(n));
  }
  fmt::print("{} intents, {} examples from {}\n", k, rows, printable(f.examples));
  fmt::print("training accuracy {:.1f}% ({} of {})\n", 100.0 * stats.training_accuracy,
             static_cast<int64_t>(std::lround(stats.training_accuracy * static_cast<double>(rows))), rows);
  fmt::print("fit: l2 {}, {} L-BFGS iterations, {} (largest gradient {:.2e}), objective {:.6f}\n", fit.l2,
             stats.iterations, stats.converged ? "converged" : "NOT converged", stats.gradient_norm, stats.objective);
  if (!stats.converged) {
    fmt::print(stderr, "brisk: warning: the fit stopped before the gradient reached {:.0e}; raise --max-iterations\n",
               fit.tolerance);
  }
  fmt::print("time: embedding {:.2f} s, fit {:.3f} s, total {:.2f} s (model {})\n", embed_s, fit_s, seconds_since(t0),
             printable(rt->cache_model_id()));
  fmt::print("wrote {} ({} labels x {} dims, unknown threshold {})\n", printable(f.out), k, rt->embedding_dim(),
             file.unknown_threshold);
  return absl::OkStatus();
}

}  // namespace

void FitIntentsFlags::add_to(CLI::App& cmd) {
  model_dir = brisk::default_model_dir();
  cmd.add_option("--model", model_dir, "the embedding model: a model directory or a quantized model file")
      ->capture_default_str();
  cmd.add_option("--examples", examples, "labelled examples: label<TAB>text lines, '#' comments")->required();
  cmd.add_option("--out", out, "the head file to write (safetensors)")->required();
  cmd.add_option("--l2", l2, "L2 penalty on the weights (the objective is in brisk/model/intent_head.h)")
      ->check(CLI::Range(1e-8, 1e6))
      ->capture_default_str();
  cmd.add_option("--unknown-threshold", unknown_threshold,
                 "top probability below which a router answers 'unknown' (stored in the head file)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd.add_option("--max-iterations", max_iterations, "L-BFGS iterations at most")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd.add_option("--threads", threads, "compute threads; 0 = the CPUs this process may use")
      ->check(CLI::Range(0, brisk::kMaxThreads));
}

int run_fit_intents(const FitIntentsFlags& flags) {
  const Status s = fit_intents(flags);
  if (!s.ok()) {
    fmt::print(stderr, "brisk: error: {}\n", printable(std::string(s.message())));
    return 1;
  }
  return 0;
}

}  // namespace brisk::cli
