// SingleFlight: concurrent requests for the same uncached input share one computation. The first request for a key
// leads (it goes to the batcher); later ones follow it and are answered with its result, as Go's singleflight and
// Caffeine's AsyncLoadingCache do. A follower joins only a leader whose deadline is no later than its own and whose
// priority is at least as urgent, so following never makes a request later or less urgent than it asked for.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "brisk/core/clock.h"
#include "brisk/core/status.h"

namespace brisk {

// `Context` is what the caller keeps with each follower to answer it some other way when the leader cannot.
//
// Thread safety: every member may be called from any thread at once. No callback runs under its lock.
template <typename Key, typename Result, typename Context>
class SingleFlight {
 public:
  using Done = absl::AnyInvocable<void(uint64_t request_id, StatusOr<Result>)>;
  struct Follower {
    uint64_t id = 0;
    Done done;
    TimePoint deadline = kNoDeadline;  // what the follower asked for, to run it alone if the leader cannot answer
    int priority = 0;
    Context context;
  };

  // Follower ids have bit 62 set (and not 63, which the runtime's cache hits use), so they never name a batcher
  // request.
  static constexpr uint64_t kFollowerBit = uint64_t{1} << 62;
  static bool is_follower_id(uint64_t id) { return (id >> 62) == 1; }

  // Joins the leader in flight for `key` when there is one whose deadline is no later than `deadline` and whose
  // priority is no larger (0 is the most urgent): takes
  // `done` and `context` and returns the follower's id. Otherwise, when no leader is in flight, makes the caller the
  // leader (returns nullopt, `done` and `context` untouched; the caller must call finish(key) exactly once later).
  // With a leader whose deadline is later, returns nullopt and sets *lead = false: the caller runs alone.
  std::optional<uint64_t> join_or_lead(const Key& key, TimePoint deadline, int priority, Done& done, Context& context,
                                       bool* lead) {
    std::lock_guard lock(mu_);
    auto it = flights_.find(key);
    if (it == flights_.end()) {
      flights_.emplace(key, Flight{deadline, priority, {}});
      *lead = true;
      return std::nullopt;
    }
    *lead = false;
    if (it->second.deadline > deadline || it->second.priority > priority) return std::nullopt;
    const uint64_t id = kFollowerBit | next_id_++;
    it->second.followers.push_back(Follower{id, std::move(done), deadline, priority, std::move(context)});
    follower_keys_.emplace(id, key);
    joined_++;
    return id;
  }

  // Ends the flight for `key` and hands back its followers, to be answered by the caller.
  std::vector<Follower> finish(const Key& key) {
    std::lock_guard lock(mu_);
    auto it = flights_.find(key);
    if (it == flights_.end()) return {};
    std::vector<Follower> followers = std::move(it->second.followers);
    flights_.erase(it);
    for (const Follower& f : followers) follower_keys_.erase(f.id);
    return followers;
  }

  // Removes a follower that has not been answered; nullopt when there is none with this id.
  std::optional<Done> cancel(uint64_t id) {
    std::lock_guard lock(mu_);
    auto key = follower_keys_.find(id);
    if (key == follower_keys_.end()) return std::nullopt;
    std::vector<Follower>& followers = flights_.at(key->second).followers;
    follower_keys_.erase(key);
    for (auto f = followers.begin(); f != followers.end(); ++f) {
      if (f->id != id) continue;
      Done done = std::move(f->done);
      followers.erase(f);
      return done;
    }
    return std::nullopt;
  }

  // Requests answered by another's computation so far.
  uint64_t joined() const {
    std::lock_guard lock(mu_);
    return joined_;
  }

 private:
  struct Flight {
    TimePoint deadline;
    int priority = 0;
    std::vector<Follower> followers;
  };
  mutable std::mutex mu_;
  absl::flat_hash_map<Key, Flight> flights_;
  absl::flat_hash_map<uint64_t, Key> follower_keys_;
  uint64_t next_id_ = 0;
  uint64_t joined_ = 0;
};

}  // namespace brisk
