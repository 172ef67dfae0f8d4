// The batched path of Runtime: the batcher and its batch function, submit() with single flight, the fallback model
// and stale answers, and cancel(). The synchronous path is runtime_sync.cc; the stats are runtime_stats.cc.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <filesystem>

#include "brisk/core/internal/finite.h"
#include "brisk/core/parallel.h"
#include "brisk/metrics/prometheus.h"
#include "degradation.h"
#include "runtime_impl.h"

namespace brisk {

namespace {

Status run_batch(RuntimeImpl& impl, const batch::BatchInfo& info, std::span<TaskRequest> requests,
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

}  // namespace

size_t device_memory_budget(size_t limit, size_t weight_bytes, size_t policy_budget) {
  if (limit == 0) return policy_budget;
  // Never 0 (which would mean no budget): when the weights estimate leaves less than an eighth of the cap (it
  // overcounts int8 layers), batches still get that eighth, and a pass that does not fit fails with OUT_OF_MEMORY.
  const size_t floor = std::max<size_t>(limit / 8, 1);
  const size_t left = limit > weight_bytes ? limit - weight_bytes : 0;
  const size_t budget = std::max(left, floor);
  return policy_budget == 0 ? budget : std::min(policy_budget, budget);
}

Status start_batcher(RuntimeImpl& impl) {
  batch::BatchFunctions<TaskRequest, std::vector<float>> fns;
  fns.run = [&impl](const batch::BatchInfo& info, std::span<TaskRequest> requests,
                    std::span<StatusOr<std::vector<float>>> results) {
    return run_batch(impl, info, requests, results);
  };
  fns.cost = [](const TaskRequest& r) { return r.input.ids.size(); };
  fns.estimate_bytes = [&impl](const BatchShape& shape) { return impl.backend->estimate_activation_bytes(shape); };
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

StatusOr<uint64_t> RuntimeImpl::submit_input(TokenizedInput input, const EmbedRequestOptions& request,
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
  if (request.allow_stale) *answer = answer_stale_on_failure(std::move(*answer), *caches, key);
  StatusOr<uint64_t> id = submit_to_model(std::move(input), key, request, answer, std::move(trace));
  if (id.ok()) return id;
  return answer_refused(key, request, answer, id.status());
}

StatusOr<uint64_t> RuntimeImpl::answer_refused(const std::vector<int32_t>& key, const EmbedRequestOptions& request,
                                               const std::shared_ptr<AnswerCallback>& answer, Status refused) {
  if (fallback && fallback_may_answer(refused)) {
    StatusOr<uint64_t> fallback_id =
        fallback->impl_->submit_input(input_of_cache_key(key), fallback_request(request, options.batching),
                                      [answer](uint64_t id, StatusOr<std::vector<float>> row, AnswerPath) {
                                        (*answer)(id | kFallbackIdBit, std::move(row), AnswerPath::kFallback);
                                      });
    if (fallback_id.ok()) return *fallback_id | kFallbackIdBit;
  }
  if (request.allow_stale && stale_may_answer(refused)) {
    if (std::optional<std::vector<float>> stale = caches->lookup_stale(key)) {
      const uint64_t stale_id = local_answer_id();
      (*answer)(stale_id, std::move(*stale), AnswerPath::kStaleCache);
      return stale_id;
    }
  }
  return refused;
}

StatusOr<uint64_t> RuntimeImpl::submit_to_model(TokenizedInput input, const std::vector<int32_t>& key,
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
  FollowerRequest context{request, answer};
  if (std::optional<uint64_t> id = flights.join_or_lead(key, deadline, so.priority, done, context, &lead)) return *id;
  if (!lead) return batcher->submit(TaskRequest{std::move(input), {}, std::move(trace)}, so, std::move(done));
  auto leader_done = [this, key, done = std::move(done)](uint64_t id, StatusOr<std::vector<float>> r) mutable {
    for (auto& follower : flights.finish(key)) answer_follower(follower, key, r);
    call_guarded(done, id, std::move(r));
  };
  StatusOr<uint64_t> id =
      batcher->submit(TaskRequest{std::move(input), {}, std::move(trace)}, so, std::move(leader_done));
  if (!id.ok()) {
    for (auto& follower : flights.finish(key)) follower_refused(follower, key, id.status());
  }
  return id;
}

void RuntimeImpl::answer_follower(Flights::Follower& follower, const std::vector<int32_t>& key,
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
  if (!alone.ok()) follower_refused(follower, key, alone.status());
}

void RuntimeImpl::follower_refused(Flights::Follower& follower, const std::vector<int32_t>& key, Status refused) {
  // Whatever answers, the follower's callback gets the id its submit() returned.
  auto answer = std::make_shared<AnswerCallback>([this, id = follower.id, next = follower.context.answer](
                                                     uint64_t, StatusOr<std::vector<float>> row, AnswerPath path) {
    call_guarded(*next, id, std::move(row), path);
  });
  EmbedRequestOptions request = follower.context.request;
  if (follower.deadline != kNoDeadline) {  // the fallback gets what is left of the follower's time
    request.timeout =
        std::max<std::chrono::nanoseconds>(follower.deadline - batcher->clock().now(), std::chrono::nanoseconds(1));
  }
  StatusOr<uint64_t> answered = answer_refused(key, request, answer, std::move(refused));
  if (!answered.ok()) (*answer)(follower.id, answered.status(), AnswerPath::kModel);
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
  if (impl_->fallback && (request_id & RuntimeImpl::kFallbackIdBit) != 0 && (request_id >> 63) == 0) {
    return impl_->fallback->cancel(request_id & ~RuntimeImpl::kFallbackIdBit);
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

}  // namespace brisk
