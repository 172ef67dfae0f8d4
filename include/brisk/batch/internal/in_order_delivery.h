// Internal: not part of brisk's API and may change without notice; use brisk/batch/batcher.h.
// Delivers completions in request-id order (1, 2, 3, ...) whatever order they finish in: a completion that
// arrives early waits until every lower id has been delivered. The batcher uses it for in_order_completion.
//
//   InOrderDelivery<Callback, Result> order;
//   order.deliver(id, std::move(callback), std::move(result), [](RequestId id, Callback& cb, Result r) {
//     cb(id, std::move(r));
//   });
//
// Thread safety: deliver() may be called from any number of threads; callbacks run one at a time, in order,
// on whichever calling thread finds the next id ready.
#pragma once

#include <mutex>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "brisk/batch/policy.h"

namespace brisk::batch::internal {

template <typename Callback, typename Result>
class InOrderDelivery {
 public:
  template <typename Invoke>
  void deliver(RequestId id, Callback callback, Result result, Invoke&& invoke) {
    {
      std::lock_guard lock(mu_);
      pending_.emplace(id, Pending{std::move(callback), std::move(result)});
      if (delivering_) return;  // the delivering thread will reach this id
      delivering_ = true;
    }
    for (;;) {
      std::unique_lock lock(mu_);
      auto it = pending_.find(next_);
      if (it == pending_.end()) {
        delivering_ = false;
        return;
      }
      Pending p = std::move(it->second);
      pending_.erase(it);
      const RequestId ready = next_++;
      lock.unlock();
      invoke(ready, p.callback, std::move(p.result));
    }
  }

 private:
  struct Pending {
    Callback callback;
    Result result;
  };

  std::mutex mu_;
  absl::flat_hash_map<RequestId, Pending> pending_;
  RequestId next_ = 1;
  bool delivering_ = false;
};

}  // namespace brisk::batch::internal
