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
// DEADLINE_EXCEEDED, CANCELLED, UNAVAILABLE (shut down), or the batch function's error. Callbacks run on the
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
  // returned ids are in the same order. evict_lower_priority does not apply to groups.
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
    return absl::OkStatus();
  }

  // Stops accepting requests and completes every queued one (kDrain: by running it; kCancel: with SHUTDOWN),
  // waits for running batches and joins the threads. Idempotent; when it returns every admitted request is
  // complete, also while other threads call it at the same time. With executor_threads == 0 and kDrain, the
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
      if (!cancelled.empty()) ++shutdown_completing_;
      work_cv_.notify_all();
      timer_cv_.notify_all();
    }
    for (auto& e : cancelled) {
      metrics_.shutdown.add(1);
      complete(*e, absl::UnavailableError("the batcher shut down before the request ran"));
    }
    if (!cancelled.empty()) {
      std::lock_guard lock(mu_);
      --shutdown_completing_;
      shutdown_cv_.notify_all();
    }
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
    for (auto& e : rest) {
      metrics_.shutdown.add(1);
      complete(*e, absl::UnavailableError("the batcher shut down before the request ran"));
    }
    // A concurrent shutdown(kCancel) may still be completing the requests it took: wait for it.
    std::unique_lock lock(mu_);
    shutdown_cv_.wait(lock, [&] { return shutdown_completing_ == 0; });
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
                                         std::vector<Callback>& callbacks) {
    for (const Callback& callback : callbacks) {
      if (!callback) return absl::InvalidArgumentError("submit: the callback is empty; expected a callable");
    }
    const size_t n = requests.size();
    const int levels = static_cast<int>(policy_.levels.size());
    if (options.priority < 0 || options.priority >= levels) {
      return reject(metrics_.rejected_invalid,
                    absl::InvalidArgumentError(absl::StrCat("submit: priority ", options.priority,
                                                            " is out of range; expected 0..", levels - 1,
                                                            " (0 is the most urgent)")),
                    n);
    }
    std::vector<std::unique_ptr<Entry>> group;
    group.reserve(n);
    size_t group_cost = 0;
    for (size_t i = 0; i < n; ++i) {
      const size_t cost = functions_.cost ? functions_.cost(requests[i]) : 1;
      if (Status s = check_fits_alone(cost); !s.ok()) {
        if (n > 1) s = Status(s.code(), absl::StrCat("request ", i, " of the group: ", s.message()));
        return reject(metrics_.rejected_invalid, std::move(s), n);
      }
      auto entry = std::make_unique<Entry>();
      entry->request = std::move(requests[i]);
      entry->callback = std::move(callbacks[i]);
      entry->info.priority = options.priority;
      entry->info.cost = cost;
      entry->bucket = policy_.length_bucketing ? Queue::bucket_of(cost) : 0;
      group_cost += cost;
      group.push_back(std::move(entry));
    }
    const PriorityLevel& level = policy_.levels[options.priority];

    std::unique_lock lock(mu_);
    const TimePoint now = clock_->now();
    const TimePoint deadline = options.deadline != kNoDeadline            ? options.deadline
                               : level.default_timeout > Duration::zero() ? deadline_after(now, level.default_timeout)
                                                                          : kNoDeadline;
    if (stopping_) {
      return reject(metrics_.rejected_shutdown,
                    absl::UnavailableError("submit: the batcher is shut down; no new requests are accepted"), n);
    }
    const bool late = deadline <= now;
    if (late && level.deadline_action == DeadlineAction::kReject) {
      return reject(metrics_.rejected_deadline,
                    absl::DeadlineExceededError("submit: the request's deadline has already passed"), n);
    }
    const std::string group_note = n > 1 ? absl::StrCat(" and this group adds ", n) : std::string();
    Entry* victim = nullptr;  // a less urgent queued request that makes room (evict_lower_priority)
    if (n == 1 && queue_.size() >= policy_.max_queue_size && policy_.evict_lower_priority) {
      victim = queue_.newest_less_urgent_than(options.priority);
    }
    if (queue_.size() + n > policy_.max_queue_size && victim == nullptr) {
      return reject(metrics_.rejected_overloaded,
                    absl::ResourceExhaustedError(absl::StrCat("overloaded: the queue holds ", queue_.size(),
                                                              " requests", group_note, " (BatchPolicy.max_queue_size ",
                                                              policy_.max_queue_size, "); retry later")),
                    n);
    }
    const size_t level_size = queue_.size(options.priority);
    if (level.max_queue_size != 0 && level_size + n > level.max_queue_size) {
      return reject(
          metrics_.rejected_overloaded,
          absl::ResourceExhaustedError(absl::StrCat("overloaded: priority ", options.priority, " (", level.name,
                                                    ") holds ", level_size, " requests", group_note, " (levels[",
                                                    options.priority, "].max_queue_size ", level.max_queue_size, ")")),
          n);
    }
    if (policy_.reject_predicted_late && deadline != kNoDeadline && !late) {
      const Duration wait = predicted_wait(now, options.priority, n, group_cost);
      if (wait > Duration::zero() && now + wait > deadline) {
        return reject(
            metrics_.rejected_overloaded,
            absl::ResourceExhaustedError(absl::StrCat(
                "overloaded: the work ahead needs about ", std::chrono::round<std::chrono::milliseconds>(wait).count(),
                " ms, past the request's deadline in ",
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count(),
                " ms (BatchPolicy.reject_predicted_late)")),
            n);
      }
    }
    if (!rates_[options.priority].try_take(now, static_cast<double>(n))) {
      return reject(
          metrics_.rejected_overloaded,
          rate_limited_error(absl::StrCat("overloaded: priority ", options.priority, " (", level.name,
                                          ") is over its rate limit of ", level.rate_limit, " requests/s", group_note)),
          n);
    }
    std::unique_ptr<Entry> evicted;
    if (victim != nullptr) evicted = unlink_and_take(victim);
    std::vector<RequestId> ids;
    ids.reserve(n);
    bool earliest_deadline = false;
    for (std::unique_ptr<Entry>& entry : group) {
      const RequestId id = next_id_++;
      entry->info.id = id;
      entry->info.enqueued_at = now;
      entry->info.deadline = deadline;
      entry->delayed = late;
      Entry* e = entry.get();
      entries_.emplace(id, std::move(entry));
      queue_.push_back(e);
      ids.push_back(id);
      if (deadline != kNoDeadline && !late) {
        earliest_deadline |= deadlines_.empty() || deadline < deadlines_.top().first;
        deadlines_.emplace(deadline, id);
      }
    }
    metrics_.submitted.add(n);
    prediction_.accepted(now, n);
    if (earliest_deadline) timer_cv_.notify_one();
    if (idle_executors_ > 0 && (queue_.size() == n || batch_ready(now))) work_cv_.notify_one();
    lock.unlock();
    if (evicted) {
      metrics_.evicted.add(1);
      complete(*evicted, absl::ResourceExhaustedError(absl::StrCat(
                             "overloaded: request ", evicted->info.id, " (priority ", evicted->info.priority,
                             ") was evicted from the full queue for a more urgent one")));
    }
    return ids;
  }

  // Called with mu_ held: how long until a group of n requests (group_cost) submitted now at `priority` has its
  // results (internal/late_prediction.h); zero when nothing has been measured yet.
  Duration predicted_wait(TimePoint now, int priority, size_t n, size_t group_cost) const {
    return prediction_.wait(now, {queue_.size_up_to(priority), queue_.cost_up_to(priority)}, n, group_cost,
                            sizer_.batch_limit(), inflight_ >= max_inflight_, max_inflight_);
  }

  Status check_fits_alone(size_t cost) const {
    if (policy_.max_batch_tokens != 0 && cost > policy_.max_batch_tokens) {
      return absl::InvalidArgumentError(absl::StrCat("submit: the request costs ", cost,
                                                     ", more than a whole batch may (BatchPolicy.max_batch_tokens ",
                                                     policy_.max_batch_tokens, ")"));
    }
    if (policy_.memory_budget_bytes != 0 && functions_.estimate_bytes) {
      const size_t bytes = functions_.estimate_bytes(BatchShape{1, cost, cost});
      if (bytes > memory_limit()) {
        return absl::InvalidArgumentError(absl::StrCat("submit: the request alone needs an estimated ", bytes,
                                                       " bytes, more than the batch memory limit of ", memory_limit(),
                                                       " (memory_headroom x memory_budget_bytes)"));
      }
    }
    return absl::OkStatus();
  }

  size_t memory_limit() const { return static_cast<size_t>(policy_.memory_headroom * policy_.memory_budget_bytes); }

  bool batch_ready(TimePoint now) const {
    if (queue_.size() == 0) return false;
    if (stopping_ || queue_.size() >= sizer_.batch_limit()) return true;
    if (policy_.max_batch_tokens != 0 && queue_.cost() >= policy_.max_batch_tokens) return true;
    return now - queue_.oldest_enqueued() >= sizer_.queue_delay();
  }

  struct FormedBatch {
    std::vector<Entry*> entries;
    uint64_t sequence = 0;
    TimePoint formed_at;
    uint64_t sizer_generation = 0;  // the adaptive setting the batch was formed under
  };

  // Called with mu_ held. Empty when no executor slot is free or no batch is ready; otherwise the batch counts
  // as in flight until execute() ends.
  FormedBatch form_batch(TimePoint now) {
    FormedBatch formed;
    if (inflight_ >= max_inflight_ || !batch_ready(now)) return formed;
    std::vector<Entry*>& batch = formed.entries;
    const size_t limit = sizer_.batch_limit();
    typename Queue::Exclusions skip(policy_.levels.size());
    int anchor_bucket = -1;
    BatchShape shape;
    while (batch.size() < limit) {
      Entry* e = queue_.best(now, anchor_bucket, skip);
      if (!e) break;
      // Candidates come in (effective level, bucket distance, age) order, so the first one too far from the
      // anchor's length means every later one is too far or less urgent: stop rather than pad to it.
      if (anchor_bucket >= 0 && std::abs(static_cast<int>(e->bucket) - anchor_bucket) > policy_.bucket_spread) break;
      const BatchShape next{shape.size + 1, std::max(shape.max_cost, e->info.cost), shape.total_cost + e->info.cost};
      const bool over_tokens = policy_.max_batch_tokens != 0 && next.size * next.max_cost > policy_.max_batch_tokens;
      const bool over_memory = policy_.memory_budget_bytes != 0 && functions_.estimate_bytes &&
                               functions_.estimate_bytes(next) > memory_limit();
      if (over_tokens || over_memory) {  // this list's head does not fit; similar lengths will not either
        skip.add(e);
        continue;
      }
      if (anchor_bucket < 0) anchor_bucket = static_cast<int>(e->bucket);
      queue_.erase(e);
      e->running = true;
      shape = next;
      batch.push_back(e);
    }
    // Round down to the preferred multiple when the queue is deep, putting the tail back at the list heads.
    const size_t multiple = policy_.preferred_batch_multiple;
    if (multiple > 1 && queue_.size() > 0 && batch.size() > multiple && batch.size() % multiple != 0) {
      for (size_t keep = batch.size() / multiple * multiple; batch.size() > keep;) {
        Entry* e = batch.back();
        batch.pop_back();
        e->running = false;
        queue_.push_front(e);
      }
    }
    if (!batch.empty()) {
      ++inflight_;
      formed.sequence = batch_sequence_++;
      formed.formed_at = now;
      formed.sizer_generation = sizer_.generation();
    }
    return formed;
  }

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
  void expire_due() {
    std::vector<std::unique_ptr<Entry>> expired;
    {
      std::unique_lock lock(mu_);
      const TimePoint now = clock_->now();
      while (!deadlines_.empty() && deadlines_.top().first <= now) {
        const RequestId id = deadlines_.top().second;
        deadlines_.pop();
        auto it = entries_.find(id);
        if (it == entries_.end() || it->second->running || it->second->delayed) continue;
        Entry* e = it->second.get();
        if (policy_.levels[e->info.priority].deadline_action == DeadlineAction::kDelay) {
          queue_.make_late(e);
        } else {
          expired.push_back(unlink_and_take(e));
        }
      }
      if (!expired.empty()) wake_executors_if_drained();
    }
    for (auto& e : expired) {
      metrics_.expired.add(1);
      complete(*e, absl::DeadlineExceededError("the request's deadline passed while it was queued"));
    }
  }

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
  void execute(FormedBatch batch) {
    const TimePoint checked_at = clock_->now();
    std::vector<Entry*> runnable;
    std::vector<std::unique_ptr<Entry>> dropped;  // cancelled or expired just before running
    std::vector<Status> dropped_status;
    {
      std::unique_lock lock(mu_);
      size_t runnable_cost = 0;
      for (Entry* e : batch.entries) {
        const bool expired = e->info.deadline <= checked_at &&
                             policy_.levels[e->info.priority].deadline_action == DeadlineAction::kReject;
        if (e->cancelled || expired) {
          dropped_status.push_back(e->cancelled
                                       ? absl::CancelledError(absl::StrCat("request ", e->info.id, " was cancelled"))
                                       : absl::DeadlineExceededError("the request's deadline passed before it ran"));
          (e->cancelled ? metrics_.cancelled : metrics_.expired).add(1);
          dropped.push_back(std::move(entries_.extract(e->info.id).mapped()));
        } else {
          runnable.push_back(e);
          runnable_cost += e->info.cost;
        }
      }
      prediction_.batch_started(batch.sequence, checked_at, runnable_cost);
    }
    for (size_t i = 0; i < dropped.size(); ++i) complete(*dropped[i], std::move(dropped_status[i]));

    std::vector<Request> requests;
    std::vector<RequestInfo> infos;
    requests.reserve(runnable.size());
    infos.reserve(runnable.size());
    BatchShape shape;
    for (Entry* e : runnable) {
      requests.push_back(std::move(e->request));
      infos.push_back(e->info);
      shape = {shape.size + 1, std::max(shape.max_cost, e->info.cost), shape.total_cost + e->info.cost};
    }
    std::vector<ResultOr> results;
    Status batch_status;
    // The instant of the deadline check above: no kReject request runs with deadline <= started_at, even when
    // completing the dropped ones took time.
    const TimePoint started = checked_at;
    if (!runnable.empty()) {
      results.reserve(runnable.size());
      for (size_t i = 0; i < runnable.size(); ++i) {
        results.emplace_back(absl::InternalError(absl::StrCat("the batch function left result ", i, " unset")));
      }
      BatchInfo info{batch.sequence, batch.formed_at, started, shape, shape.size * shape.max_cost, infos};
      try {
        InsideScope inside(this);
        batch_status = functions_.run(info, std::span<Request>(requests), std::span<ResultOr>(results));
      } catch (const std::exception& ex) {
        batch_status = absl::InternalError(absl::StrCat("the batch function threw: ", ex.what()));
      } catch (...) {
        batch_status = absl::InternalError("the batch function threw a non-standard exception");
      }
    }
    const TimePoint finished = clock_->now();

    std::vector<std::unique_ptr<Entry>> owned;
    owned.reserve(runnable.size());
    {
      std::unique_lock lock(mu_);
      --inflight_;
      prediction_.batch_finished(batch.sequence, shape.total_cost, finished - started);
      for (Entry* e : runnable) {
        sizer_.record_latency(finished - e->info.enqueued_at, batch.sizer_generation);
        owned.push_back(std::move(entries_.extract(e->info.id).mapped()));
      }
      if (!runnable.empty()) {
        sizer_.record_batch(runnable.size(), finished - started, batch.sizer_generation);
      }
      if (stopping_) {
        work_cv_.notify_all();
      } else if (idle_executors_ > 0 && queue_.size() > 0) {
        work_cv_.notify_one();
      }
    }
    if (!runnable.empty()) metrics_.record_batch(infos, shape, started, finished, batch_status.ok());
    for (size_t i = 0; i < owned.size(); ++i) {
      Entry& e = *owned[i];
      if (e.cancelled) {
        metrics_.cancelled.add(1);
        complete(e, absl::CancelledError(absl::StrCat("request ", e.info.id, " was cancelled while running")));
      } else if (!batch_status.ok()) {
        metrics_.failed.add(1);
        complete(e, batch_status);
      } else if (policy_.fail_late_results && e.info.deadline < finished &&
                 policy_.levels[e.info.priority].deadline_action == DeadlineAction::kReject) {
        metrics_.expired.add(1);
        const auto late_by = std::chrono::duration_cast<std::chrono::microseconds>(finished - e.info.deadline);
        complete(e, absl::DeadlineExceededError(
                        absl::StrCat("the request's deadline passed while its batch ran (finished ",
                                     late_by.count() / 1000.0, " ms late; BatchPolicy.fail_late_results)")));
      } else {
        (results[i].ok() ? metrics_.completed : metrics_.failed).add(1);
        complete(e, std::move(results[i]));
      }
    }
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
  int shutdown_completing_ = 0;  // shutdown() calls completing the requests they took
  std::condition_variable shutdown_cv_;

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
