// Internal to brisk::batch: the bodies of Batcher's longer members (admission, batch forming, deadline expiry,
// running a batch), out of the class so that batcher.h reads as the contract. Included at the end of batcher.h only.
//
// Thread safety: as Batcher's (batcher.h); each member notes the lock it expects.
#pragma once

#include "brisk/batch/batcher.h"

namespace brisk::batch {

template <typename Request, typename Result>
StatusOr<std::vector<RequestId>> Batcher<Request, Result>::admit(std::vector<Request>& requests,
                                                                 const SubmitOptions& options,
                                                                 std::vector<Callback>& callbacks) {
  for (const Callback& callback : callbacks) {
    if (!callback) return absl::InvalidArgumentError("submit: the callback is empty; expected a callable");
  }
  const size_t n = requests.size();
  const int levels = static_cast<int>(policy_.levels.size());
  if (options.priority < 0 || options.priority >= levels) {
    return reject(
        metrics_.rejected_invalid,
        absl::InvalidArgumentError(absl::StrCat("submit: priority ", options.priority, " is out of range; expected 0..",
                                                levels - 1, " (0 is the most urgent)")),
        n);
  }
  const PriorityLevel& level = policy_.levels[options.priority];
  // A group larger than a capacity it must fit in whole (the queue's, its level's, its rate-limited level's bucket
  // depth) could never be admitted, however long the caller waits: not an overload (RESOURCE_EXHAUSTED, which says
  // retry later) but a request to split. burst() is fixed at construction, so it is read without the lock.
  const auto too_large = [&](auto limit, const std::string& what) {
    return reject(
        metrics_.rejected_invalid,
        absl::InvalidArgumentError(absl::StrCat("submit_all: the group has ", n, " requests; expected at most ", limit,
                                                ", ", what, ": a larger group never fits, so split it")),
        n);
  };
  // The level's field for a message, made only when one is refused: admit is on every submit's path.
  const auto of_level = [&](const char* what, const char* field) {
    return absl::StrCat(what, " of priority ", options.priority, " (", level.name, ") (levels[", options.priority, "].",
                        field, ")");
  };
  if (n > policy_.max_queue_size) {
    return too_large(policy_.max_queue_size, "the queue's capacity (BatchPolicy.max_queue_size)");
  }
  if (level.max_queue_size != 0 && n > level.max_queue_size) {
    return too_large(level.max_queue_size, of_level("the capacity", "max_queue_size"));
  }
  if (level.rate_limit > 0 && static_cast<double>(n) > rates_[options.priority].burst()) {
    return too_large(rates_[options.priority].burst(), of_level("the burst", "burst"));
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
                  absl::ResourceExhaustedError(absl::StrCat("overloaded: the queue holds ", queue_.size(), " requests",
                                                            group_note, " (BatchPolicy.max_queue_size ",
                                                            policy_.max_queue_size, "); retry later")),
                  n);
  }
  const size_t level_size = queue_.size(options.priority);
  if (level.max_queue_size != 0 && level_size + n > level.max_queue_size) {
    return reject(metrics_.rejected_overloaded,
                  absl::ResourceExhaustedError(absl::StrCat(
                      "overloaded: priority ", options.priority, " (", level.name, ") holds ", level_size, " requests",
                      group_note, " (levels[", options.priority, "].max_queue_size ", level.max_queue_size, ")")),
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
  undelivered_ += n;
  metrics_.submitted.add(n);
  prediction_.accepted(now, n);
  if (earliest_deadline) timer_cv_.notify_one();
  if (idle_executors_ > 0 && (queue_.size() == n || batch_ready(now))) work_cv_.notify_one();
  lock.unlock();
  if (evicted) {
    metrics_.evicted.add(1);
    complete(*evicted, absl::ResourceExhaustedError(
                           absl::StrCat("overloaded: request ", evicted->info.id, " (priority ", evicted->info.priority,
                                        ") was evicted from the full queue for a more urgent one")));
    delivered(1);
  }
  return ids;
}

template <typename Request, typename Result>
typename Batcher<Request, Result>::FormedBatch Batcher<Request, Result>::form_batch(TimePoint now) {
  FormedBatch formed;
  if (inflight_ >= max_inflight_ || !batch_ready(now)) return formed;
  // Only a batch formed from a deep queue is rounded to the preferred multiple: one formed because the delay
  // expired (or at shutdown) is never held back.
  const bool deep_queue = full_batch_queued();
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
    const size_t bytes = memory_limited() ? functions_.estimate_bytes(next) : 0;
    const bool over_memory = memory_limited() && bytes > memory_limit();
    if (over_tokens || over_memory) {
      if (batch.empty()) {
        // Not even alone, though submit() admitted it (the estimate changed since): it would stay queued forever,
        // the queue ready with no batch to form. It fails, as a batch of its own that execute() does not run.
        e->too_large = fits_alone("forming a batch: ", e->info.cost, bytes);  // not OK: next is {1, cost, cost}
        queue_.erase(e);
        e->running = true;
        batch.push_back(e);
        break;
      }
      skip.add(e);  // this list's head does not fit; similar lengths will not either
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
  if (multiple > 1 && deep_queue && queue_.size() > 0 && batch.size() > multiple && batch.size() % multiple != 0) {
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

template <typename Request, typename Result>
void Batcher<Request, Result>::expire_due() {
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
  delivered(expired.size());
}

template <typename Request, typename Result>
void Batcher<Request, Result>::execute(FormedBatch batch) {
  const TimePoint checked_at = clock_->now();
  std::vector<Entry*> runnable;
  std::vector<std::unique_ptr<Entry>> dropped;  // cancelled or expired just before running
  std::vector<Status> dropped_status;
  {
    std::unique_lock lock(mu_);
    size_t runnable_cost = 0;
    for (Entry* e : batch.entries) {
      const bool expired =
          e->info.deadline <= checked_at && policy_.levels[e->info.priority].deadline_action == DeadlineAction::kReject;
      Status drop;
      if (e->cancelled) {
        drop = absl::CancelledError(absl::StrCat("request ", e->info.id, " was cancelled"));
        metrics_.cancelled.add(1);
      } else if (!e->too_large.ok()) {
        drop = e->too_large;
        metrics_.failed.add(1);
      } else if (expired) {
        drop = absl::DeadlineExceededError("the request's deadline passed before it ran");
        metrics_.expired.add(1);
      }
      if (!drop.ok()) {
        dropped_status.push_back(std::move(drop));
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
  delivered(dropped.size() + owned.size());
}

}  // namespace brisk::batch
