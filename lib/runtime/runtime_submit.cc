// The batched path of Runtime: submit() tokenizes and queues a text; the batcher's executor packs the queued
// texts into one forward pass. Also the runtime's stats as JSON and Prometheus text.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <filesystem>

#include "brisk/core/internal/finite.h"
#include "brisk/core/parallel.h"
#include "brisk/metrics/prometheus.h"
#include "runtime_impl.h"

namespace brisk {

namespace {

Status run_batch(Runtime::Impl& impl, const batch::BatchInfo& info, std::span<TaskRequest> requests,
                 std::span<StatusOr<std::vector<float>>> results) {
  std::vector<TokenizedInput> inputs;
  std::vector<std::vector<std::string>> tags;
  inputs.reserve(requests.size());
  tags.reserve(requests.size());
  for (TaskRequest& r : requests) {
    inputs.push_back(std::move(r.input));
    tags.push_back(std::move(r.cache_tags));
  }
  const size_t dim = impl.output_dim;
  std::vector<float> out(requests.size() * dim);
  std::vector<Status> row_errors;
  const Status computed = impl.compute(inputs, out.data(), tags, &row_errors);
  if (impl.options.span_sink) record_batch_spans(info, requests, impl.batcher->clock().now(), computed);
  BRISK_RETURN_IF_ERROR(computed);
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!row_errors[i].ok()) {
      results[i] = row_errors[i];
      continue;
    }
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

DType runtime_activation_dtype(const RuntimeOptions& options) {
  return options.activation_dtype.value_or(options.device == Device::kCUDA ? DType::kF16 : DType::kF32);
}

// CPU: from the encoder's buffers, per token the hidden state, QKV, attention output and residual copies (about
// 8 x hidden floats) and the FFN's intermediate activations (run in chunks of 512 tokens); per sequence one
// length x length score matrix per thread.
// CUDA: in the activation dtype's elements; per token the same 8 x hidden plus the whole FFN intermediate (no
// chunking on the GPU); with padding removal the attention's padded Q, K, V and context (4 x hidden per padded
// token), without it every per-token buffer padded to the longest text; and the scores of every text and head at
// once. An estimate for the batcher's budget, not a count of allocations.
size_t estimate_activation_bytes(const ModelInfo& info, const RuntimeOptions& options, const batch::BatchShape& shape) {
  const size_t hidden = static_cast<size_t>(info.hidden_size);
  const size_t intermediate = static_cast<size_t>(info.intermediate_size);
  if (options.device != Device::kCUDA) {
    const size_t floats = shape.total_cost * 8 * hidden + std::min<size_t>(shape.total_cost, 512) * intermediate +
                          static_cast<size_t>(num_threads()) * shape.max_cost * shape.max_cost;
    return floats * sizeof(float);
  }
  const size_t heads = static_cast<size_t>(std::max(info.num_heads, 1));
  const size_t padded = shape.size * shape.max_cost;
  const size_t tokens = options.remove_padding ? shape.total_cost : padded;
  const size_t elements = tokens * (8 * hidden + intermediate) + (options.remove_padding ? padded * 4 * hidden : 0) +
                          shape.size * heads * shape.max_cost * shape.max_cost;
  return elements * dtype_size(runtime_activation_dtype(options));
}

size_t device_memory_budget(size_t limit, size_t weight_bytes, size_t policy_budget) {
  if (limit == 0) return policy_budget;
  // Never 0 (which would mean no budget): when the weights estimate leaves less than an eighth of the cap (it
  // overcounts int8 layers), batches still get that eighth, and a pass that does not fit fails with OUT_OF_MEMORY.
  const size_t floor = std::max<size_t>(limit / 8, 1);
  const size_t left = limit > weight_bytes ? limit - weight_bytes : 0;
  const size_t budget = std::max(left, floor);
  return policy_budget == 0 ? budget : std::min(policy_budget, budget);
}

Status start_batcher(Runtime::Impl& impl) {
  batch::BatchFunctions<TaskRequest, std::vector<float>> fns;
  fns.run = [&impl](const batch::BatchInfo& info, std::span<TaskRequest> requests,
                    std::span<StatusOr<std::vector<float>>> results) {
    return run_batch(impl, info, requests, results);
  };
  fns.cost = [](const TaskRequest& r) { return r.input.ids.size(); };
  fns.estimate_bytes = [&impl](const batch::BatchShape& shape) {
    return impl.backend->estimate_activation_bytes(shape);
  };
  batch::BatchPolicy policy = impl.options.batching;
  // Under a device memory cap the batches get what the cap leaves after the weights (estimated at the activation
  // dtype's size per parameter, as the model loads them), so that a surge is queued or split, or a text too long
  // for the cap refused at submit, rather than failing forward passes with OUT_OF_MEMORY.
  if (impl.options.device == Device::kCUDA && impl.options.device_memory_limit > 0) {
    const size_t weight_bytes = static_cast<size_t>(std::max<int64_t>(impl.info.num_parameters, 0)) *
                                dtype_size(runtime_activation_dtype(impl.options));
    policy.memory_budget_bytes =
        device_memory_budget(impl.options.device_memory_limit, weight_bytes, policy.memory_budget_bytes);
  }
  auto batcher = TaskBatcher::create(policy, std::move(fns));
  if (!batcher.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("RuntimeOptions::batching: ", batcher.status().message()));
  }
  impl.batcher = std::move(*batcher);
  return absl::OkStatus();
}

namespace {

// The first non-finite value of a row of the backend's output, as an error naming the backend and the element.
Status check_finite_row(const Runtime::Impl& impl, const float* row) {
  const int64_t j = first_non_finite(row, static_cast<int64_t>(impl.output_dim));
  if (j < 0) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat("the ", impl.info.backend, " backend of model '", model_label(impl.info),
                                          "' produced ", row[j], " at element ", j, " of ", impl.output_dim,
                                          " for this input; expected finite values (the result was neither ",
                                          "served nor cached: a corrupt model file or a faulty backend)"));
}

}  // namespace

Status Runtime::Impl::compute(std::span<const TokenizedInput> inputs, float* out,
                              std::span<const std::vector<std::string>> cache_tags,
                              std::vector<Status>* row_errors) const {
  const uint64_t epoch = caches->invalidation_epoch();
  {
    ScopedNumThreads threads(options.num_threads);
    PackedSequences packed;
    const bool pairs =
        std::any_of(inputs.begin(), inputs.end(), [](const TokenizedInput& in) { return in.second_start > 0; });
    for (const TokenizedInput& in : inputs) {
      packed.add(in.ids);
      if (!pairs) continue;
      const size_t first = in.second_start > 0 ? static_cast<size_t>(in.second_start) : in.ids.size();
      packed.token_type_ids.resize(packed.token_type_ids.size() + first, 0);
      packed.token_type_ids.resize(packed.input_ids.size(), 1);
    }
    BRISK_RETURN_IF_ERROR(backend->run(packed, {out, inputs.size() * output_dim}));
    forward_passes.add(1);
  }
  if (row_errors != nullptr) row_errors->assign(inputs.size(), absl::OkStatus());
  Status first_error;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (Status finite = check_finite_row(*this, out + i * output_dim); !finite.ok()) {
      nonfinite_outputs.add(1);
      if (row_errors != nullptr) (*row_errors)[i] = finite;
      if (first_error.ok()) first_error = finite;
      continue;
    }
    caches->store(result_cache_key(inputs[i]), {out + i * output_dim, output_dim},
                  i < cache_tags.size() ? cache_tags[i] : std::span<const std::string>{}, epoch);
  }
  return row_errors != nullptr ? absl::OkStatus() : first_error;
}

Status Runtime::Impl::rows_for(std::span<TokenizedInput> inputs, std::span<float* const> rows) {
  // One lookup for all of them: with a Redis tier, one MGET for every L1 miss.
  std::vector<std::vector<int32_t>> keys;
  keys.reserve(inputs.size());
  for (const TokenizedInput& in : inputs) keys.push_back(result_cache_key(in));
  const std::vector<std::span<const int32_t>> key_spans(keys.begin(), keys.end());
  std::vector<std::optional<std::vector<float>>> hits = caches->lookup_many(key_spans);
  std::vector<TokenizedInput> misses;
  std::vector<float*> miss_rows;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (hits[i]) {
      std::copy(hits[i]->begin(), hits[i]->end(), rows[i]);
      continue;
    }
    misses.push_back(std::move(inputs[i]));
    miss_rows.push_back(rows[i]);
  }
  return compute_rows(misses, miss_rows);
}

Status Runtime::Impl::compute_here(std::span<const TokenizedInput> inputs, std::span<float* const> rows) {
  const size_t dim = output_dim;
  const size_t limit = options.batching.max_batch_size;
  std::vector<float> out(std::min(limit, inputs.size()) * dim);
  for (size_t begin = 0; begin < inputs.size(); begin += limit) {
    const size_t n = std::min(limit, inputs.size() - begin);
    BRISK_RETURN_IF_ERROR(compute(inputs.subspan(begin, n), out.data()));
    for (size_t k = 0; k < n; ++k) std::copy_n(out.begin() + static_cast<ptrdiff_t>(k * dim), dim, rows[begin + k]);
  }
  return absl::OkStatus();
}

Status Runtime::Impl::compute_rows(std::span<const TokenizedInput> inputs, std::span<float* const> rows) {
  if (inputs.empty()) return absl::OkStatus();
  if (options.batching.executor_threads == 0 || batcher->on_batcher_thread()) return compute_here(inputs, rows);
  const size_t limit = options.batching.max_batch_size;
  std::mutex mu;
  std::condition_variable cv;
  size_t pending = 0;  // this call's inputs in the batcher
  Status first_error;
  Status here;
  for (size_t begin = 0; begin < inputs.size();) {
    const size_t n = std::min(limit, inputs.size() - begin);
    {
      // At most two groups queued: the executor stays busy, and one call does not fill the queue.
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return pending <= limit; });
      if (!first_error.ok()) break;
      pending += n;
    }
    std::vector<TaskRequest> group;
    std::vector<TaskBatcher::Callback> callbacks;
    group.reserve(n);
    callbacks.reserve(n);
    for (size_t k = begin; k < begin + n; ++k) {
      group.push_back(TaskRequest{inputs[k], {}});  // a copy: a refused group is run here from inputs
      callbacks.push_back([&, row = rows[k]](uint64_t, StatusOr<std::vector<float>> e) {
        std::lock_guard lock(mu);
        if (e.ok()) {
          std::copy(e->begin(), e->end(), row);
        } else if (first_error.ok()) {
          first_error = e.status();
        }
        --pending;
        cv.notify_all();
      });
    }
    if (batcher->submit_all(std::move(group), {}, std::move(callbacks)).ok()) {
      begin += n;
      continue;
    }
    std::unique_lock lock(mu);
    pending -= n;
    if (pending > 0) {  // our own groups fill the queue: wait for them, then try again
      cv.wait(lock, [&] { return pending == 0; });
      continue;
    }
    lock.unlock();
    here = compute_here(inputs.subspan(begin, n), rows.subspan(begin, n));
    if (!here.ok()) break;
    begin += n;
  }
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return pending == 0; });
  return first_error.ok() ? here : first_error;
}

namespace {

// Overload, not a quota: the queue is full or predicts the request late. A rate-limited request is not rerouted.
bool fallback_may_answer(const Status& refused) {
  return refused.code() == absl::StatusCode::kResourceExhausted && !batch::is_rate_limited(refused);
}

// What the model failing means for a request that allows a stale answer: anything but the caller's own doing (a
// cancel) or a bad request.
bool stale_may_answer(const Status& failure) {
  return failure.code() != absl::StatusCode::kCancelled && failure.code() != absl::StatusCode::kInvalidArgument;
}

}  // namespace

StatusOr<uint64_t> Runtime::Impl::submit_input(TokenizedInput input, const EmbedRequestOptions& request,
                                               AnswerCallback done, std::shared_ptr<RequestTrace> trace) {
  if (request.timeout < std::chrono::nanoseconds::zero()) {
    return absl::InvalidArgumentError(absl::StrCat("Runtime::submit: timeout is negative (", request.timeout.count(),
                                                   " ns); expected >= 0 (0: none)"));
  }
  const int levels = static_cast<int>(options.batching.levels.size());
  if (request.priority < 0 || request.priority >= levels) {
    return absl::InvalidArgumentError(absl::StrCat("Runtime::submit: priority ", request.priority,
                                                   " is out of range; expected 0..", levels - 1,
                                                   " (0 is the most urgent)"));
  }
  if (trace) done = traced_callback(trace, std::move(done));
  // Every answer is counted by its path, here and nowhere else.
  AnswerCallback counted = [this, done = std::move(done)](uint64_t id, StatusOr<std::vector<float>> row,
                                                          AnswerPath path) mutable {
    if (row.ok()) answers[static_cast<size_t>(path)].add(1);
    done(id, std::move(row), path);
  };
  std::vector<int32_t> key = result_cache_key(input);
  const TimePoint lookup_start = trace ? std::chrono::steady_clock::now() : TimePoint{};
  std::optional<std::vector<float>> hit = caches->lookup(key);
  if (trace) record_cache_lookup(*trace, lookup_start, hit.has_value());
  if (hit) {
    const uint64_t id = local_answer_id();
    counted(id, std::move(*hit), AnswerPath::kCache);
    return id;
  }
  // Shared, so that a request the model's queue refuses can still be handed on with it.
  auto answer = std::make_shared<AnswerCallback>(std::move(counted));
  if (request.allow_stale) {
    *answer = [this, key, next = std::move(*answer)](uint64_t id, StatusOr<std::vector<float>> row,
                                                     AnswerPath path) mutable {
      if (!row.ok() && stale_may_answer(row.status())) {
        if (std::optional<std::vector<float>> stale = caches->lookup_stale(key)) {
          return next(id, std::move(*stale), AnswerPath::kStaleCache);
        }
      }
      next(id, std::move(row), path);
    };
  }
  StatusOr<uint64_t> id = submit_to_model(std::move(input), key, request, answer, std::move(trace));
  if (id.ok()) return id;
  if (fallback && fallback_may_answer(id.status())) {
    EmbedRequestOptions to_fallback = request;
    // The deadline this runtime would have held the request to: its own, else its level's default.
    if (to_fallback.timeout == std::chrono::nanoseconds::zero()) {
      to_fallback.timeout = options.batching.levels[static_cast<size_t>(request.priority)].default_timeout;
    }
    to_fallback.allow_stale = false;   // this runtime's stale copies answer a failed fallback too, through `answer`
    to_fallback.cache_tags.clear();    // the fallback's results are not cached
    to_fallback.trace_parent.clear();  // the request's trace is this runtime's: its callback span and answer path
    to_fallback.trace_context_out = nullptr;
    StatusOr<uint64_t> fallback_id = fallback->impl_->submit_input(
        input_of_cache_key(key), to_fallback, [answer](uint64_t id, StatusOr<std::vector<float>> row, AnswerPath) {
          (*answer)(id | kFallbackIdBit, std::move(row), AnswerPath::kFallback);
        });
    if (fallback_id.ok()) return *fallback_id | kFallbackIdBit;
  }
  if (request.allow_stale && stale_may_answer(id.status())) {
    if (std::optional<std::vector<float>> stale = caches->lookup_stale(key)) {
      const uint64_t stale_id = local_answer_id();
      (*answer)(stale_id, std::move(*stale), AnswerPath::kStaleCache);
      return stale_id;
    }
  }
  return id;
}

StatusOr<uint64_t> Runtime::Impl::submit_to_model(TokenizedInput input, const std::vector<int32_t>& key,
                                                  const EmbedRequestOptions& request,
                                                  const std::shared_ptr<AnswerCallback>& answer,
                                                  std::shared_ptr<RequestTrace> trace) {
  Flights::Done done = [answer](uint64_t id, StatusOr<std::vector<float>> row) {
    (*answer)(id, std::move(row), AnswerPath::kModel);
  };
  const TimePoint now = batcher->clock().now();
  batch::SubmitOptions so;
  so.priority = request.priority;
  if (request.timeout > std::chrono::nanoseconds::zero()) so.deadline = deadline_after(now, request.timeout);
  if (!request.cache_tags.empty()) {
    return batcher->submit(TaskRequest{std::move(input), request.cache_tags, std::move(trace)}, so, std::move(done));
  }
  // The deadline the batcher will hold the request to: its own, else its level's default.
  const Duration level_timeout = options.batching.levels[static_cast<size_t>(request.priority)].default_timeout;
  const TimePoint deadline = so.deadline != kNoDeadline || level_timeout <= Duration::zero()
                                 ? so.deadline
                                 : deadline_after(now, level_timeout);
  bool lead = false;
  if (std::optional<uint64_t> id = flights.join_or_lead(key, deadline, so.priority, done, &lead)) return *id;
  if (!lead) return batcher->submit(TaskRequest{std::move(input), {}, std::move(trace)}, so, std::move(done));
  auto leader_done = [this, key, done = std::move(done)](uint64_t id, StatusOr<std::vector<float>> r) mutable {
    for (auto& follower : flights.finish(key)) answer_follower(follower, key, r);
    call_guarded(done, id, std::move(r));
  };
  StatusOr<uint64_t> id =
      batcher->submit(TaskRequest{std::move(input), {}, std::move(trace)}, so, std::move(leader_done));
  if (!id.ok()) {
    for (auto& follower : flights.finish(key)) call_guarded(follower.done, follower.id, id.status());
  }
  return id;
}

void Runtime::Impl::call_guarded(Flights::Done& done, uint64_t id, StatusOr<std::vector<float>> result) {
  try {
    done(id, std::move(result));
  } catch (...) {  // a callback must not throw; the others are still answered
    callback_exceptions.add(1);
  }
}

void Runtime::Impl::answer_follower(Flights::Follower& follower, const std::vector<int32_t>& key,
                                    const StatusOr<std::vector<float>>& leader) {
  const absl::StatusCode code = leader.status().code();
  if (code != absl::StatusCode::kCancelled && code != absl::StatusCode::kDeadlineExceeded) {
    return call_guarded(follower.done, follower.id, leader);
  }
  // The leader was cancelled or expired, which says nothing about this request: it runs alone (cancel() no longer
  // reaches it under its follower id).
  batch::SubmitOptions so;
  so.priority = follower.priority;
  so.deadline = follower.deadline;
  auto shared = std::make_shared<Flights::Done>(std::move(follower.done));
  auto done = [this, id = follower.id, shared](uint64_t, StatusOr<std::vector<float>> r) {
    call_guarded(*shared, id, std::move(r));
  };
  StatusOr<uint64_t> alone = batcher->submit(TaskRequest{input_of_cache_key(key), {}}, so, std::move(done));
  if (!alone.ok()) call_guarded(*shared, follower.id, alone.status());
}

StatusOr<uint64_t> Runtime::submit(std::string_view text, const EmbedRequestOptions& options,
                                   EmbeddingCallback done) const {
  if (!done) return absl::InvalidArgumentError("Runtime::submit: the callback is empty; expected a callable");
  return submit(text, options,
                [done = std::move(done)](uint64_t id, StatusOr<std::vector<float>> embedding, AnswerPath) mutable {
                  done(id, std::move(embedding));
                });
}

StatusOr<uint64_t> Runtime::submit(std::string_view text, const EmbedRequestOptions& options,
                                   EmbeddingAnswerCallback done) const {
  if (!done) return absl::InvalidArgumentError("Runtime::submit: the callback is empty; expected a callable");
  BRISK_RETURN_IF_ERROR(impl_->require_output(BackendOutput::kEmbedding, "Runtime::submit"));
  BRISK_ASSIGN_OR_RETURN(std::shared_ptr<RequestTrace> trace,
                         RequestTrace::start(impl_->options.span_sink, options, "Runtime::submit", "embed"));
  BRISK_ASSIGN_OR_RETURN(std::vector<int32_t> ids, traced_tokenize(trace.get(), [&] { return impl_->tokenize(text); }));
  return finish_if_refused(trace.get(),
                           impl_->submit_input(TokenizedInput{std::move(ids), 0}, options, std::move(done), trace));
}

Status Runtime::cancel(uint64_t request_id) const {
  if (impl_->fallback && (request_id & Impl::kFallbackIdBit) != 0 && (request_id >> 63) == 0) {
    return impl_->fallback->cancel(request_id & ~Impl::kFallbackIdBit);
  }
  if (Flights::is_follower_id(request_id)) {
    std::optional<Flights::Done> done = impl_->flights.cancel(request_id);
    if (!done) return absl::NotFoundError(absl::StrCat("request ", request_id, " is not pending"));
    impl_->call_guarded(*done, request_id,
                        absl::CancelledError(absl::StrCat("request ", request_id, " was cancelled")));
    return absl::OkStatus();
  }
  return impl_->batcher->cancel(request_id);
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
