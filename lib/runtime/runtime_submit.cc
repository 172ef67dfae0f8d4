// The batched path of Runtime: submit() tokenizes and queues a text; the batcher's executor packs the queued
// texts into one forward pass. Also the runtime's stats as JSON and Prometheus text.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <filesystem>

#include "brisk/core/parallel.h"
#include "brisk/metrics/prometheus.h"
#include "runtime_impl.h"

namespace brisk {

namespace {

// Activation bytes of one forward pass, from the encoder's buffers: per token the hidden state, QKV, attention
// output and residual copies (about 8 x hidden floats) and the FFN's intermediate activations (run in chunks of
// 512 tokens); per sequence one length x length score matrix per thread.
size_t estimate_activation_bytes(const ModelInfo& info, const batch::BatchShape& shape) {
  const size_t hidden = static_cast<size_t>(info.hidden_size);
  const size_t intermediate = static_cast<size_t>(info.intermediate_size);
  const size_t floats = shape.total_cost * 8 * hidden + std::min<size_t>(shape.total_cost, 512) * intermediate +
                        static_cast<size_t>(num_threads()) * shape.max_cost * shape.max_cost;
  return floats * sizeof(float);
}

Status run_batch(Runtime::Impl& impl, std::span<EmbedRequest> requests,
                 std::span<StatusOr<std::vector<float>>> results) {
  std::vector<std::vector<int32_t>> ids;
  std::vector<std::vector<std::string>> tags;
  ids.reserve(requests.size());
  tags.reserve(requests.size());
  for (EmbedRequest& r : requests) {
    ids.push_back(std::move(r.ids));
    tags.push_back(std::move(r.cache_tags));
  }
  const size_t dim = static_cast<size_t>(impl.info.hidden_size);
  std::vector<float> out(requests.size() * dim);
  BRISK_RETURN_IF_ERROR(impl.encode(ids, out.data(), tags));
  for (size_t i = 0; i < requests.size(); ++i) {
    results[i] = std::vector<float>(out.begin() + static_cast<ptrdiff_t>(i * dim),
                                    out.begin() + static_cast<ptrdiff_t>((i + 1) * dim));
  }
  return absl::OkStatus();
}

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

std::string model_label(const ModelInfo& info) {
  return std::filesystem::path(info.model_dir).lexically_normal().filename().string();
}

}  // namespace

Status start_batcher(Runtime::Impl& impl) {
  batch::BatchFunctions<EmbedRequest, std::vector<float>> fns;
  fns.run = [&impl](const batch::BatchInfo&, std::span<EmbedRequest> requests,
                    std::span<StatusOr<std::vector<float>>> results) { return run_batch(impl, requests, results); };
  fns.cost = [](const EmbedRequest& r) { return r.ids.size(); };
  fns.estimate_bytes = [&impl](const batch::BatchShape& shape) { return estimate_activation_bytes(impl.info, shape); };
  auto batcher = EmbedBatcher::create(impl.options.batching, std::move(fns));
  if (!batcher.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("RuntimeOptions::batching: ", batcher.status().message()));
  }
  impl.batcher = std::move(*batcher);
  return absl::OkStatus();
}

Status Runtime::Impl::embed_ids(std::span<const std::vector<int32_t>> ids, float* out) {
  if (options.batching.executor_threads == 0 || batcher->on_batcher_thread()) return encode(ids, out);
  const size_t dim = static_cast<size_t>(info.hidden_size);
  std::mutex mu;
  std::condition_variable cv;
  size_t pending = 0;
  Status first_error;
  size_t submitted = 0;
  for (; submitted < ids.size(); ++submitted) {
    float* row = out + submitted * dim;
    auto done = [&, row](uint64_t, StatusOr<std::vector<float>> e) {
      std::lock_guard lock(mu);
      if (e.ok()) {
        std::copy(e->begin(), e->end(), row);
      } else if (first_error.ok()) {
        first_error = e.status();
      }
      if (--pending == 0) cv.notify_all();
    };
    {
      std::lock_guard lock(mu);
      ++pending;
    }
    // A copy: a refused submit destroys its request, and this text then runs here from ids.
    if (!batcher->submit(EmbedRequest{ids[submitted], {}}, {}, std::move(done)).ok()) {
      std::lock_guard lock(mu);
      --pending;
      break;  // queue full: the rest run here
    }
  }
  Status rest;
  if (submitted < ids.size()) rest = encode(ids.subspan(submitted), out + submitted * dim);
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return pending == 0; });
  return first_error.ok() ? rest : first_error;
}

StatusOr<uint64_t> Runtime::submit(std::string_view text, const EmbedRequestOptions& options,
                                   EmbeddingCallback done) const {
  if (!done) return absl::InvalidArgumentError("Runtime::submit: the callback is empty; expected a callable");
  if (options.timeout < std::chrono::nanoseconds::zero()) {
    return absl::InvalidArgumentError(absl::StrCat("Runtime::submit: timeout is negative (",
                                                   options.timeout.count(), " ns); expected >= 0 (0: none)"));
  }
  BRISK_ASSIGN_OR_RETURN(std::vector<int32_t> ids, impl_->tokenize(text));
  if (std::optional<std::vector<float>> hit = impl_->caches->lookup(ids)) {
    // A hit refuses what the batcher would refuse on a miss.
    const int levels = static_cast<int>(impl_->options.batching.levels.size());
    if (options.priority < 0 || options.priority >= levels) {
      return absl::InvalidArgumentError(absl::StrCat("Runtime::submit: priority ", options.priority,
                                                     " is out of range; expected 0..", levels - 1,
                                                     " (0 is the most urgent)"));
    }
    // Ids of cache hits have the top bit set, so they never name a batcher request.
    const uint64_t id = (uint64_t{1} << 63) | impl_->next_cached_request_id.fetch_add(1, std::memory_order_relaxed);
    done(id, std::move(*hit));
    return id;
  }
  batch::SubmitOptions so;
  so.priority = options.priority;
  if (options.timeout > std::chrono::nanoseconds::zero()) so.deadline = impl_->batcher->clock().now() + options.timeout;
  return impl_->batcher->submit(EmbedRequest{std::move(ids), options.cache_tags}, so, std::move(done));
}

Status Runtime::cancel(uint64_t request_id) const { return impl_->batcher->cancel(request_id); }

batch::BatcherStats Runtime::batch_stats() const { return impl_->batcher->stats(); }

std::string Runtime::stats_json() const {
  const batch::BatcherStats s = batch_stats();
  nlohmann::json j;
  j["model"] = impl_->info.model_dir;
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
  w.summary("brisk_runtime_tokenize_seconds", "Tokenization time per text.", {&model_label_pair, 1},
            impl_->tokenize_ns.snapshot(), 1e-9);
  batch::write_prometheus(w, batch_stats(), impl_->options.batching, "brisk_batcher", {{"model", model}});
  impl_->caches->write_prometheus(w, model);
  if (!w.status().ok()) return absl::StrCat("# error: ", w.status().message(), "\n");
  return w.str();
}

}  // namespace brisk
