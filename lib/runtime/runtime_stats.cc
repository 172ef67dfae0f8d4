// The runtime's stats: batch_stats(), stats_json() and metrics_prometheus().
#include <nlohmann/json.hpp>

#include <filesystem>

#include "brisk/core/parallel.h"
#include "brisk/kernels/linear.h"
#include "brisk/metrics/prometheus.h"
#include "runtime_impl.h"

namespace brisk {

namespace {

nlohmann::json latency_json(const metrics::HistogramSnapshot& h) {
  constexpr double kMs = 1e-6;
  return {{"count", h.count()},
          {"mean", h.mean() * kMs},
          {"p50", h.percentile(50) * kMs},
          {"p90", h.percentile(90) * kMs},
          {"p99", h.percentile(99) * kMs},
          {"max", h.max() * kMs}};
}

nlohmann::json size_json(const metrics::HistogramSnapshot& h) {
  return {{"mean", h.mean()}, {"p50", h.percentile(50)}, {"p99", h.percentile(99)}, {"max", h.max()}};
}

}  // namespace

std::string model_label(const ModelInfo& info) {
  return std::filesystem::path(info.model_dir).lexically_normal().filename().string();
}

batch::BatcherStats Runtime::batch_stats() const { return impl_->batcher->stats(); }

std::string Runtime::stats_json() const {
  const batch::BatcherStats s = batch_stats();
  nlohmann::json j;
  j["model"] = impl_->info.model_dir;
  if (!impl_->info.cpu_isa.empty()) {
    j["cpu_isa"] = impl_->info.cpu_isa;
    j["linear_kernels"] = impl_->info.linear_kernels;
    j["int8_attention_layers"] = impl_->info.int8_attention_layers;
  }
  j["forward_passes"] = forward_passes();
  j["late_parallel_regions"] = late_parallel_regions();                 // the process's (brisk/core/parallel.h)
  j["cuda_int8_fallback_calls"] = kernels::cuda_int8_fallback_calls();  // the process's (brisk/kernels/linear.h)
  j["nonfinite_outputs"] = impl_->nonfinite_outputs.value();
  j["single_flight_joined"] = impl_->flights.joined();
  j["callback_exceptions"] = impl_->callback_exceptions.value();
  nlohmann::json answers;
  for (size_t p = 0; p < kAnswerPaths; ++p) {
    answers[std::string(answer_path_name(static_cast<AnswerPath>(p)))] = impl_->answers[p].value();
  }
  j["answers"] = answers;
  if (impl_->fallback) j["fallback"] = nlohmann::json::parse(impl_->fallback->stats_json());
  j["tokenize_ms"] = latency_json(impl_->tokenize_ns.snapshot());
  j["cache"] = nlohmann::json::parse(impl_->caches->stats_json());
  j["batcher"] = {
      {"submitted", s.submitted},
      {"completed", s.completed},
      {"failed", s.failed},
      {"expired", s.expired},
      {"cancelled", s.cancelled},
      {"shutdown", s.shutdown},
      {"evicted", s.evicted},
      {"rejected",
       {{"overloaded", s.rejected_overloaded},
        {"deadline", s.rejected_deadline},
        {"invalid", s.rejected_invalid},
        {"shutdown", s.rejected_shutdown}}},
      {"queued", s.queued},
      {"queued_per_level", s.queued_per_level},
      {"inflight_batches", s.inflight_batches},
      {"batch_limit", s.batch_limit},
      {"queue_delay_ms", static_cast<double>(s.queue_delay.count()) * 1e-6},
      {"batches", s.batches},
      {"failed_batches", s.failed_batches},
      {"tokens", s.tokens},
      {"padded_tokens", s.padded_tokens},
      {"padding_waste", s.padding_waste()},
      {"batch_size", size_json(s.batch_size)},
      {"queue_ms", latency_json(s.queue_time)},
      {"compute_ms", latency_json(s.compute_time)},
      {"latency_ms", latency_json(s.latency)},
  };
  return j.dump();
}

std::string Runtime::metrics_prometheus() const {
  metrics::PrometheusWriter w;
  const std::string model = model_label(impl_->info);
  const metrics::Label model_label_pair{"model", model};
  w.gauge("brisk_runtime_info", "The loaded model (value 1).", {&model_label_pair, 1}, 1);
  if (!impl_->info.cpu_isa.empty()) {
    for (const std::string& kernel : impl_->info.linear_kernels) {
      const metrics::Label labels[] = {{"model", model}, {"isa", impl_->info.cpu_isa}, {"linear_kernel", kernel}};
      w.gauge("brisk_build_info",
              "The CPU ISA level the model's kernels run at and what computes each precision of its Linear layers "
              "(value 1).",
              labels, 1);
    }
  }
  w.counter("brisk_runtime_forward_passes_total", "Forward passes of the encoder.", {&model_label_pair, 1},
            forward_passes());
  w.counter("brisk_late_parallel_regions_total",
            "Parallel regions of this process whose workers started over 1 ms late because other work held their "
            "CPUs; two within 100 ms run brisk on one thread for a while (brisk/core/parallel.h). Process-wide: every "
            "runtime of the process reports the same count.",
            {&model_label_pair, 1}, late_parallel_regions());
  w.counter("brisk_cuda_int8_fallback_calls_total",
            "Calls of int8 Linears on CUDA that ran on their dequantized weights because cuBLASLt had no int8 "
            "algorithm for the row count: slower, not wrong (brisk/kernels/linear.h). Process-wide.",
            {&model_label_pair, 1}, kernels::cuda_int8_fallback_calls());
  w.counter("brisk_runtime_nonfinite_outputs_total",
            "Rows of the backend's output refused for a NaN or an infinity: neither served nor cached.",
            {&model_label_pair, 1}, impl_->nonfinite_outputs.value());
  w.summary("brisk_runtime_tokenize_seconds", "Tokenization time per text.", {&model_label_pair, 1},
            impl_->tokenize_ns.snapshot(), 1e-9);
  for (size_t p = 0; p < kAnswerPaths; ++p) {
    const metrics::Label labels[] = {{"model", model}, {"path", answer_path_name(static_cast<AnswerPath>(p))}};
    w.counter("brisk_runtime_answers_total",
              "Submitted requests answered, by path: model, cache, fallback (the lighter model) or stale.", labels,
              impl_->answers[p].value());
  }
  batch::write_prometheus(w, batch_stats(), impl_->options.batching, "brisk_batcher", {{"model", model}});
  if (impl_->fallback) {
    std::string light = model_label(impl_->fallback->info());
    if (light == model) light += "-fallback";
    batch::write_prometheus(w, impl_->fallback->batch_stats(), impl_->fallback->impl_->options.batching,
                            "brisk_batcher", {{"model", light}});
  }
  impl_->caches->write_prometheus(w, model);
  if (!w.status().ok()) return absl::StrCat("# error: ", w.status().message(), "\n");
  return w.str();
}

}  // namespace brisk
