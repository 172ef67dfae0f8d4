// Single flight and host backends in C++: concurrent submits of one uncached text share one forward pass of a
// backend the test controls (Runtime::create(options, backend)), every caller is answered exactly once, and a
// follower survives its leader's cancellation.
#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <vector>

#include "brisk/runtime/runtime.h"
#include "test_util.h"

namespace {

using brisk::Runtime;

// Rows of 4 floats: value k of a sequence is its token count + k. The first run() waits for release().
class GateBackend final : public brisk::Backend {
 public:
  GateBackend() {
    info_.name = "gate";
    info_.output_dim = 4;
  }
  const brisk::BackendInfo& info() const override { return info_; }
  brisk::Status run(const brisk::PackedSequences& batch, std::span<float> out) const override {
    {
      std::unique_lock lock(mu_);
      runs_++;
      cv_.notify_all();
      cv_.wait(lock, [&] { return open_; });
    }
    sequences_ += batch.size();
    for (int64_t i = 0; i < batch.size(); ++i) {
      for (int k = 0; k < 4; ++k) out[static_cast<size_t>(i * 4 + k)] = static_cast<float>(batch.length(i) + k);
    }
    return absl::OkStatus();
  }
  size_t estimate_activation_bytes(const brisk::BatchShape&) const override { return 0; }

  void wait_running() const {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return runs_ > 0; });
  }
  void release() const {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  int64_t sequences() const { return sequences_.load(); }

 private:
  brisk::BackendInfo info_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable int runs_ = 0;
  mutable bool open_ = false;
  mutable std::atomic<int64_t> sequences_{0};
};

std::unique_ptr<Runtime> runtime_over(const GateBackend*& backend) {
  brisk::RuntimeOptions o;
  o.model_dir = brisk::default_model_dir();  // the tokenizer
  o.cache.result_cache_bytes = 0;            // only single flight can share work
  auto owned = std::make_unique<GateBackend>();
  backend = owned.get();
  auto rt = Runtime::create(o, std::move(owned));
  INFO(rt.status());
  REQUIRE(rt.ok());
  return std::move(*rt);
}

using Outcome = brisk::StatusOr<std::vector<float>>;

}  // namespace

TEST_CASE("single_flight: concurrent submits of one text share one forward pass") {
  const GateBackend* backend = nullptr;
  auto rt = runtime_over(backend);
  REQUIRE(rt->info().backend == "gate");
  // The blocker occupies the executor, so the others queue up behind it.
  std::promise<Outcome> blocker;
  REQUIRE(rt->submit("blocker", {}, [&](uint64_t, Outcome r) { blocker.set_value(std::move(r)); }).ok());
  backend->wait_running();
  constexpr int kCallers = 50;
  std::vector<std::promise<Outcome>> results(kCallers);
  std::vector<uint64_t> ids;
  for (int i = 0; i < kCallers; ++i) {
    auto id = rt->submit("reset my pin", {},
                         [&, i](uint64_t, Outcome r) { results[static_cast<size_t>(i)].set_value(std::move(r)); });
    REQUIRE(id.ok());
    ids.push_back(*id);
  }
  // A follower can be cancelled on its own.
  REQUIRE(rt->cancel(ids.back()).ok());
  REQUIRE(rt->cancel(ids.back()).code() == absl::StatusCode::kNotFound);
  backend->release();
  REQUIRE(blocker.get_future().get().ok());
  for (int i = 0; i < kCallers - 1; ++i) {
    Outcome r = results[static_cast<size_t>(i)].get_future().get();
    REQUIRE(r.ok());
    REQUIRE(*r == std::vector<float>{5, 6, 7, 8});  // [CLS] reset my pin [SEP]
  }
  REQUIRE(results.back().get_future().get().status().code() == absl::StatusCode::kCancelled);
  REQUIRE(backend->sequences() == 2);  // the blocker and one "reset my pin"
}

TEST_CASE("single_flight: followers of a cancelled leader run on their own") {
  const GateBackend* backend = nullptr;
  auto rt = runtime_over(backend);
  std::promise<Outcome> blocker, leader, follower;
  REQUIRE(rt->submit("blocker", {}, [&](uint64_t, Outcome r) { blocker.set_value(std::move(r)); }).ok());
  backend->wait_running();
  auto lead = rt->submit("lost card", {}, [&](uint64_t, Outcome r) { leader.set_value(std::move(r)); });
  auto follow = rt->submit("lost card", {}, [&](uint64_t, Outcome r) { follower.set_value(std::move(r)); });
  REQUIRE(lead.ok());
  REQUIRE(follow.ok());
  REQUIRE(*lead != *follow);
  REQUIRE(rt->cancel(*lead).ok());
  backend->release();
  REQUIRE(leader.get_future().get().status().code() == absl::StatusCode::kCancelled);
  Outcome r = follower.get_future().get();
  REQUIRE(r.ok());
  REQUIRE(*r == std::vector<float>{4, 5, 6, 7});
}

TEST_CASE("single_flight: a follower with an earlier deadline than the leader runs on its own") {
  const GateBackend* backend = nullptr;
  auto rt = runtime_over(backend);
  std::promise<Outcome> blocker, a, b;
  REQUIRE(rt->submit("blocker", {}, [&](uint64_t, Outcome r) { blocker.set_value(std::move(r)); }).ok());
  backend->wait_running();
  REQUIRE(rt->submit("opening hours", {}, [&](uint64_t, Outcome r) { a.set_value(std::move(r)); }).ok());
  brisk::EmbedRequestOptions soon;
  soon.timeout = std::chrono::hours(1);  // earlier than the leader's (none)
  REQUIRE(rt->submit("opening hours", soon, [&](uint64_t, Outcome r) { b.set_value(std::move(r)); }).ok());
  backend->release();
  REQUIRE(a.get_future().get().ok());
  REQUIRE(b.get_future().get().ok());
  REQUIRE(backend->sequences() == 3);
}
