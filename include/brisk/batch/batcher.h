// Batcher<Request, Result>: turns a stream of single requests into batches for a batch function, with
// priorities, deadlines, a padded-token and a memory budget, length bucketing, rate limits, cancellation and
// SLO-adaptive sizing. The policy is in policy.h, the metrics in batcher_metrics.h.
//
//   using Emb = std::vector<float>;
//   BatchFunctions<Text, Emb> fns;
//   fns.run = [&](const BatchInfo&, std::span<Text> in, std::span<StatusOr<Emb>> out) {
//     for (size_t i = 0; i < in.size(); ++i) out[i] = embed(in[i]);
//     return absl::OkStatus();                      // an error here fails every request of the batch
//   };
//   fns.cost = [](const Text& t) { return t.tokens.size(); };
//   BRISK_ASSIGN_OR_RETURN(auto batcher, (Batcher<Text, Emb>::create(policy, std::move(fns))));
//   BRISK_ASSIGN_OR_RETURN(RequestId id, batcher->submit(text, {.priority = 0},
//       [](RequestId id, StatusOr<Emb> r) { ... }));
//
// Completion: when submit() returns an error the request was never admitted and its callback is never called.
// Otherwise the callback runs exactly once, with a result or one of: RESOURCE_EXHAUSTED (overloaded),
// DEADLINE_EXCEEDED, CANCELLED, UNAVAILABLE (shut down), INVALID_ARGUMENT (the memory estimate of the request alone
// grew past the limit after submit() admitted it), or the batch function's error. Callbacks run on the
// executor, deadline-timer or cancelling thread (or, for a request evicted by evict_lower_priority, the thread
// of the submit() that evicted it); they must not block for long, may call submit() and
// cancel(), and must not call shutdown() (it returns FAILED_PRECONDITION there).
//
// Thread safety: submit(), cancel(), stats() and shutdown() may be called from any number of threads.
// The destructor shuts down with kCancel; no callback runs after it returns.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <queue>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/strings/str_cat.h"
#include "brisk/batch/adaptive.h"
#include "brisk/batch/batcher_metrics.h"
#include "brisk/batch/internal/in_order_delivery.h"
#include "brisk/batch/internal/late_prediction.h"
#include "brisk/batch/internal/request_queue.h"
#include "brisk/batch/internal/token_bucket.h"
#include "brisk/batch/policy.h"
#include "brisk/core/clock.h"
#include "brisk/core/status.h"

namespace brisk::batch {

template <typename Request, typename Result>
struct BatchFunctions {
  // Fills results[i] for requests[i] (each starts as an error saying it was left unset). Returning an error
  // fails every request of the batch with it; so does throwing.
  std::function<Status(const BatchInfo&, std::span<Request>, std::span<StatusOr<Result>>)> run;
  std::function<size_t(const Request&)> cost;               // empty: every request costs 1
  std::function<size_t(const BatchShape&)> estimate_bytes;  // empty: no memory estimate
};

template <typename Request, typename Result>
class Batcher {
 public:
  using ResultOr = StatusOr<Result>;
  using Callback = absl::AnyInvocable<void(RequestId, ResultOr)>;
  using Functions = BatchFunctions<Request, Result>;

  static StatusOr<std::unique_ptr<Batcher>> create(BatchPolicy policy, Functions functions,
                                                   std::shared_ptr<Clock> clock = nullptr) {
    if (Status s = policy.validate(); !s.ok()) return s;
    if (!functions.run) return absl::InvalidArgumentError("BatchFunctions.run is empty; expected a batch function");
    if (!clock) clock = std::make_shared<SteadyClock>();
    return std::unique_ptr<Batcher>(new Batcher(std::move(policy), std::move(functions), std::move(clock)));
  }

  ~Batcher() { (void)shutdown(ShutdownMode::kCancel); }
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  StatusOr<RequestId> submit(Request request, const SubmitOptions& options, Callback callback) {
    std::vector<Request> requests;
    requests.push_back(std::move(request));
    std::vector<Callback> callbacks;
    callbacks.push_back(std::move(callback));
    StatusOr<std::vector<RequestId>> ids = admit(requests, options, callbacks);
    if (!ids.ok()) return ids.status();
    return ids->front();
  }

  // Queues requests as one unit: under one lock, in order, all of them or none (the error says why, and no
  // callback runs). A free executor therefore finds them together, and up to max_batch_size of them share a
  // batch instead of the first few starting a batch of their own. callbacks[i] completes requests[i]; the
  // returned ids are in the same order. evict_lower_priority does not apply to groups. A group of more requests than
  // max_queue_size (or its level's max_queue_size, or its rate-limited level's burst) could never be admitted:
  // INVALID_ARGUMENT, not the RESOURCE_EXHAUSTED of a queue that is full for now.
  StatusOr<std::vector<RequestId>> submit_all(std::vector<Request> requests, const SubmitOptions& options,
                                              std::vector<Callback> callbacks) {
    if (requests.size() != callbacks.size()) {
      return absl::InvalidArgumentError(absl::StrCat("submit_all: ", requests.size(), " requests but ",
                                                     callbacks.size(), " callbacks; expected one callback each"));
    }
    if (requests.empty()) return std::vector<RequestId>{};
    return admit(requests, options, callbacks);
  }

  // The same, completing a future instead of calling back. On error no future exists.
  StatusOr<std::pair<RequestId, std::future<ResultOr>>> submit(Request request, const SubmitOptions& options = {}) {
    auto promise = std::make_shared<std::promise<ResultOr>>();
    std::future<ResultOr> future = promise->get_future();
    StatusOr<RequestId> id =
        submit(std::move(request), options, [promise](RequestId, ResultOr r) { promise->set_value(std::move(r)); });
    if (!id.ok()) return id.status();
    return std::make_pair(*id, std::move(future));
  }

  // Cancels a request: a queued one completes with CANCELLED at once; a running one completes with
  // CANCELLED when its batch ends (its result is dropped). NOT_FOUND when the id is unknown or completed.
  Status cancel(RequestId id) {
    std::unique_lock lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end() || it->second->cancelled) {
      return absl::NotFoundError(absl::StrCat("cancel: request ", id, " is not queued or running"));
    }
    Entry* e = it->second.get();
    e->cancelled = true;
    if (e->running) return absl::OkStatus();
    std::unique_ptr<Entry> owned = unlink_and_take(e);
    wake_executors_if_drained();
    lock.unlock();
    metrics_.cancelled.add(1);
    complete(*owned, absl::CancelledError(absl::StrCat("request ", id, " was cancelled")));
    delivered(1);
    return absl::OkStatus();
  }

  // Stops accepting requests and completes every queued one (kDrain: by running it; kCancel: with SHUTDOWN),
  // waits for running batches and joins the threads. Idempotent; when it returns every admitted request is
  // complete, also while other threads call it at the same time: its callback has returned, also one running on a
  // cancel() or submit() thread, or held back for in_order_completion. With executor_threads == 0 and kDrain, the
  // queue is run on the calling thread.
  Status shutdown(ShutdownMode mode = ShutdownMode::kDrain) {
    if (current_batcher_ == this) {
      return absl::FailedPreconditionError(
          "shutdown: called from the batcher's own thread (a callback or the "
          "batch function); call it from another thread");
    }
    std::vector<std::unique_ptr<Entry>> cancelled;
    {
      std::unique_lock lock(mu_);
      stopping_ = true;
      if (mode == ShutdownMode::kCancel) cancelled = take_all_queued();
      work_cv_.notify_all();
      timer_cv_.notify_all();
    }
    complete_unrun(cancelled);
    std::lock_guard join_lock(join_mu_);
    if (policy_.executor_threads == 0) {
      while (run_ready() > 0) {
      }
    }
    for (std::thread& t : executors_) t.join();
    executors_.clear();
    {
      std::unique_lock lock(mu_);
      timer_stop_ = true;
      timer_cv_.notify_all();
    }
    if (timer_.joinable()) timer_.join();
    // Anything still queued now was admitted during a drain race with no executor left: finish it.
    std::vector<std::unique_ptr<Entry>> rest;
    {
      std::unique_lock lock(mu_);
      rest = take_all_queued();
    }
    complete_unrun(rest);
    // Other threads may still be completing requests they took (a concurrent shutdown(kCancel), cancel(), an
    // eviction, a run_ready()), or delivering in order the completions others handed them: wait for them all.
    std::unique_lock lock(mu_);
    shutdown_cv_.wait(lock, [&] { return undelivered_ == 0; });
    return absl::OkStatus();
  }

  // For executor_threads == 0: expires due requests, then forms and runs every batch that is ready now on the
  // calling thread. Returns the number of batches run. With executor threads it does nothing.
  size_t run_ready() {
    size_t batches = 0;
    if (policy_.executor_threads > 0) return 0;
    expire_due();
    for (;;) {
      std::unique_lock lock(mu_);
      FormedBatch batch = form_batch(clock_->now());
      if (batch.entries.empty()) return batches;
      lock.unlock();
      execute(std::move(batch));
      ++batches;
    }
  }

  BatcherStats stats() const {
    BatcherStats s = metrics_.snapshot();
    std::unique_lock lock(mu_);
    s.queued = queue_.size();
    s.inflight_batches = inflight_;
    s.batch_limit = sizer_.batch_limit();
    s.queue_delay = sizer_.queue_delay();
    for (size_t i = 0; i < policy_.levels.size(); ++i) s.queued_per_level.push_back(queue_.size(static_cast<int>(i)));
    return s;
  }

  const BatcherMetrics& metrics() const { return metrics_; }
  const BatchPolicy& policy() const { return policy_; }
  // True inside the batch function or a callback of this batcher, where waiting for it would deadlock.
  bool on_batcher_thread() const { return current_batcher_ == this; }
  Clock& clock() const { return *clock_; }

 private:
  struct Entry {
    Request request;
    Callback callback;
    RequestInfo info;
    size_t bucket = 0;
    bool delayed = false;    // late under kDelay: queued behind every request that is not
    bool running = false;    // taken into a batch
    bool cancelled = false;  // cancel() was called while running
    Status too_large;        // set by form_batch when the request cannot run even alone: it fails with this
    Entry* prev = nullptr;
    Entry* next = nullptr;
  };

  Batcher(BatchPolicy policy, Functions functions, std::shared_ptr<Clock> clock)
      : policy_(std::move(policy)),
        functions_(std::move(functions)),
        clock_(std::move(clock)),
        metrics_(policy_.levels.size()),
        queue_(policy_.levels.size(), policy_.aging_interval),
        sizer_(policy_.adaptive, policy_.max_batch_size, policy_.max_queue_delay, policy_.preferred_batch_multiple) {
    const TimePoint now = clock_->now();
    for (const PriorityLevel& p : policy_.levels) rates_.emplace_back(p.rate_limit, p.burst, now);
    max_inflight_ =
        policy_.max_inflight_batches > 0 ? policy_.max_inflight_batches : std::max(1, policy_.executor_threads);
    // With no executors the caller drives everything through run_ready(), so nothing runs in the background.
    if (policy_.executor_threads > 0) {
      for (int i = 0; i < policy_.executor_threads; ++i) executors_.emplace_back([this] { executor_loop(); });
      timer_ = std::thread([this] { timer_loop(); });
    }
  }

  Status reject(metrics::Counter& counter, Status status, size_t requests = 1) {
    counter.add(requests);
    return status;
  }

  // Admits requests[i] with callbacks[i], all or none: the shared body of submit() and submit_all().
  StatusOr<std::vector<RequestId>> admit(std::vector<Request>& requests, const SubmitOptions& options,
                                         std::vector<Callback>& callbacks);

  // Called with mu_ held: how long until a group of n requests (group_cost) submitted now at `priority` has its
  // results (internal/late_prediction.h); zero when nothing has been measured yet.
  Duration predicted_wait(TimePoint now, int priority, size_t n, size_t group_cost) const {
    return prediction_.wait(now, {queue_.size_up_to(priority), queue_.cost_up_to(priority)}, n, group_cost,
                            sizer_.batch_limit(), inflight_ >= max_inflight_, max_inflight_);
  }

  bool memory_limited() const {
    return policy_.memory_budget_bytes != 0 && static_cast<bool>(functions_.estimate_bytes);
  }

  // INVALID_ARGUMENT, its message starting with `when`, if a request of `cost` whose memory estimate in a batch of
  // its own is `bytes` cannot run even alone; else OK.
  Status fits_alone(const char* when, size_t cost, size_t bytes) const {
    if (policy_.max_batch_tokens != 0 && cost > policy_.max_batch_tokens) {
      return absl::InvalidArgumentError(absl::StrCat(when, "the request costs ", cost,
                                                     ", more than a whole batch may (BatchPolicy.max_batch_tokens ",
                                                     policy_.max_batch_tokens, ")"));
    }
    if (memory_limited() && bytes > memory_limit()) {
      return absl::InvalidArgumentError(absl::StrCat(when, "the request alone needs an estimated ", bytes,
                                                     " bytes, more than the batch memory limit of ", memory_limit(),
                                                     " (memory_headroom x memory_budget_bytes)"));
    }
    return absl::OkStatus();
  }

  Status check_fits_alone(size_t cost) const {
    return fits_alone("submit: ", cost, memory_limited() ? functions_.estimate_bytes(BatchShape{1, cost, cost}) : 0);
  }

  size_t memory_limit() const { return static_cast<size_t>(policy_.memory_headroom * policy_.memory_budget_bytes); }

  // More is queued than one batch takes (by count or by padded-token budget): a batch is ready without waiting.
  bool full_batch_queued() const {
    return queue_.size() >= sizer_.batch_limit() ||
           (policy_.max_batch_tokens != 0 && queue_.cost() >= policy_.max_batch_tokens);
  }

  bool batch_ready(TimePoint now) const {
    if (queue_.size() == 0) return false;
    if (stopping_ || full_batch_queued()) return true;
    return now - queue_.oldest_enqueued() >= sizer_.queue_delay();
  }

  struct FormedBatch {
    std::vector<Entry*> entries;
    uint64_t sequence = 0;
    TimePoint formed_at;
    uint64_t sizer_generation = 0;  // the adaptive setting the batch was formed under
  };

  // Called with mu_ held. Empty when no executor slot is free or no batch is ready; otherwise the batch counts
  // as in flight until execute() ends. A request that cannot run even alone (its memory estimate grew after
  // admission) is taken as a batch of its own, marked too_large, which execute() fails without running it.
  FormedBatch form_batch(TimePoint now);

  // Removes a queued entry from its list and from the id map, returning ownership.
  std::unique_ptr<Entry> unlink_and_take(Entry* e) {
    queue_.erase(e);
    auto node = entries_.extract(e->info.id);
    return std::move(node.mapped());
  }

  std::vector<std::unique_ptr<Entry>> take_all_queued() {
    const std::vector<Entry*> queued = queue_.all();
    std::vector<std::unique_ptr<Entry>> taken;
    taken.reserve(queued.size());
    for (Entry* e : queued) taken.push_back(unlink_and_take(e));
    return taken;
  }

  // Moves requests whose deadline has passed out of the queue: completes kReject ones with DEADLINE_EXCEEDED,
  // moves kDelay ones behind everything.
  void expire_due();

  // During shutdown, executors waiting for a free slot must learn that the queue emptied behind them.
  void wake_executors_if_drained() {
    if (stopping_ && queue_.size() == 0) work_cv_.notify_all();
  }

  void executor_loop() {
    current_batcher_ = this;
    std::unique_lock lock(mu_);
    for (;;) {
      if (stopping_ && queue_.size() == 0) break;
      FormedBatch batch = form_batch(clock_->now());
      if (!batch.entries.empty()) {
        lock.unlock();
        execute(std::move(batch));
        lock.lock();
        continue;
      }
      TimePoint wake = kNoDeadline;
      if (queue_.size() > 0 && inflight_ < max_inflight_) wake = queue_.oldest_enqueued() + sizer_.queue_delay();
      ++idle_executors_;
      clock_->wait_until(work_cv_, lock, wake);
      --idle_executors_;
    }
    current_batcher_ = nullptr;
  }

  void timer_loop() {
    current_batcher_ = this;
    for (;;) {
      expire_due();
      std::unique_lock lock(mu_);
      if (timer_stop_) break;
      // Re-read under the lock: a submit between expire_due() and here may have added an earlier deadline.
      clock_->wait_until(timer_cv_, lock, deadlines_.empty() ? kNoDeadline : deadlines_.top().first);
    }
    current_batcher_ = nullptr;
  }

  // Runs one formed batch (inflight_ already counted) and completes its requests.
  void execute(FormedBatch batch);

  // Completes requests taken from the queue at shutdown with UNAVAILABLE.
  void complete_unrun(std::vector<std::unique_ptr<Entry>>& entries) {
    for (auto& e : entries) {
      metrics_.shutdown.add(1);
      complete(*e, absl::UnavailableError("the batcher shut down before the request ran"));
    }
    delivered(entries.size());
  }

  // Called without mu_ after complete() has returned for n requests: the last access to the batcher of a thread
  // that may race with the destructor, which waits for every admitted request to get here.
  void delivered(size_t n) {
    if (n == 0) return;
    std::lock_guard lock(mu_);
    undelivered_ -= n;
    if (undelivered_ == 0 && stopping_) shutdown_cv_.notify_all();
  }

  // Delivers a completion: directly, or through the in-order sequencer.
  void complete(Entry& e, ResultOr result) {
    if (policy_.in_order_completion) {
      order_.deliver(e.info.id, std::move(e.callback), std::move(result),
                     [this](RequestId id, Callback& cb, ResultOr r) { invoke(id, cb, std::move(r)); });
    } else {
      invoke(e.info.id, e.callback, std::move(result));
    }
  }

  void invoke(RequestId id, Callback& callback, ResultOr result) {
    InsideScope inside(this);  // whichever thread delivers it (run_ready, cancel, shutdown): shutdown() refuses
    try {
      callback(id, std::move(result));
    } catch (...) {
      metrics_.callback_exceptions.add(1);  // a throwing callback must not take an executor down
    }
  }

  const BatchPolicy policy_;
  const Functions functions_;
  const std::shared_ptr<Clock> clock_;
  BatcherMetrics metrics_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable timer_cv_;
  absl::flat_hash_map<RequestId, std::unique_ptr<Entry>> entries_;  // queued and running
  using Queue = internal::RequestQueue<Entry>;
  Queue queue_;
  std::vector<internal::TokenBucket> rates_;  // per level
  using DeadlineItem = std::pair<TimePoint, RequestId>;
  std::priority_queue<DeadlineItem, std::vector<DeadlineItem>, std::greater<>> deadlines_;  // lazily pruned
  AdaptiveSizer sizer_;
  internal::LatePrediction prediction_;  // for reject_predicted_late
  RequestId next_id_ = 1;
  uint64_t batch_sequence_ = 0;
  int inflight_ = 0;
  int max_inflight_ = 1;
  int idle_executors_ = 0;
  bool stopping_ = false;
  bool timer_stop_ = false;
  // Admitted requests whose complete() has not returned yet (in order: whose callback has not run, or runs now).
  size_t undelivered_ = 0;
  std::condition_variable shutdown_cv_;  // undelivered_ reached 0 while stopping_

  internal::InOrderDelivery<Callback, ResultOr> order_;

  std::mutex join_mu_;
  std::vector<std::thread> executors_;
  std::thread timer_;

  static inline thread_local const void* current_batcher_ = nullptr;

  // Marks the calling thread as inside this batcher (a callback or the batch function) for shutdown().
  class InsideScope {
   public:
    explicit InsideScope(const Batcher* b) : saved_(current_batcher_) { current_batcher_ = b; }
    ~InsideScope() { current_batcher_ = saved_; }
    InsideScope(const InsideScope&) = delete;
    InsideScope& operator=(const InsideScope&) = delete;

   private:
    const void* saved_;
  };
};

}  // namespace brisk::batch

#include "brisk/batch/internal/batcher_impl.h"  // the longer members' bodies
