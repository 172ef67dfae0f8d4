// A circuit breaker for a remote dependency (the Redis tier): after `failure_threshold` consecutive failures it
// opens and every call fails fast, without touching the network, for `open_duration`; then it turns half-open
// and lets exactly one probe through. The probe's success closes it; its failure opens it again.
//
//   CircuitBreaker breaker({.failure_threshold = 3, .open_duration = std::chrono::seconds(1)}, clock);
//   CircuitBreaker::Permit permit = breaker.try_acquire();
//   if (!permit) return absl::UnavailableError("redis: circuit breaker open");
//   Status s = talk_to_server();
//   s.ok() ? breaker.record_success(permit) : breaker.record_failure(permit);
//
// Every granted permit must end in exactly one record_success / record_failure / record_neutral (the last for a
// call that never reached the server, e.g. no free connection): a half-open breaker waits for its probe's verdict.
//
// Thread safety: every member may be called from any thread at once (one small mutex).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "brisk/core/clock.h"
#include "brisk/core/status.h"

namespace brisk::cache {

struct CircuitBreakerOptions {
  int failure_threshold = 3;                         // consecutive failures that open the breaker
  Duration open_duration = std::chrono::seconds(1);  // how long it stays open before one probe
  Status validate() const {
    if (failure_threshold < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("CircuitBreakerOptions.failure_threshold is ", failure_threshold, "; expected >= 1"));
    }
    if (open_duration <= Duration::zero()) {
      return absl::InvalidArgumentError(
          absl::StrCat("CircuitBreakerOptions.open_duration is ", open_duration.count(), " ns; expected > 0"));
    }
    return absl::OkStatus();
  }
};

class CircuitBreaker {
 public:
  enum class State : uint8_t { kClosed, kOpen, kHalfOpen };

  // What try_acquire() grants: whether the call may proceed, and whether it is the half-open probe.
  struct Permit {
    bool allowed = false;
    bool probe = false;
    explicit operator bool() const { return allowed; }
  };

  // clock null: SteadyClock.
  explicit CircuitBreaker(CircuitBreakerOptions options, std::shared_ptr<Clock> clock = nullptr)
      : options_(options), clock_(clock ? std::move(clock) : std::make_shared<SteadyClock>()) {}

  Permit try_acquire() {
    std::lock_guard<std::mutex> lock(mu_);
    switch (state_) {
      case State::kClosed: return {true, false};
      case State::kOpen:
        if (clock_->now() - opened_at_ < options_.open_duration) break;
        state_ = State::kHalfOpen;
        probe_in_flight_ = true;
        return {true, true};
      case State::kHalfOpen:
        if (probe_in_flight_) break;  // one probe at a time
        probe_in_flight_ = true;
        return {true, true};
    }
    ++short_circuited_;
    return {false, false};
  }

  void record_success(const Permit& permit) {
    std::lock_guard<std::mutex> lock(mu_);
    if (permit.probe) probe_in_flight_ = false;
    // Any success proves the server answers: close (a late success from before the opening counts too).
    state_ = State::kClosed;
    consecutive_failures_ = 0;
  }

  void record_failure(const Permit& permit) {
    std::lock_guard<std::mutex> lock(mu_);
    if (permit.probe) probe_in_flight_ = false;
    if (state_ == State::kHalfOpen) {
      if (permit.probe) open_locked();
      return;
    }
    if (state_ == State::kOpen) return;  // a call from before the opening failing late changes nothing
    if (++consecutive_failures_ >= options_.failure_threshold) open_locked();
  }

  // The call ended without a verdict on the server's health; a probe's slot is released.
  void record_neutral(const Permit& permit) {
    std::lock_guard<std::mutex> lock(mu_);
    if (permit.probe) probe_in_flight_ = false;
  }

  State state() const {
    std::lock_guard<std::mutex> lock(mu_);
    return state_;
  }
  uint64_t opens() const {
    std::lock_guard<std::mutex> lock(mu_);
    return opens_;
  }
  uint64_t short_circuited() const {
    std::lock_guard<std::mutex> lock(mu_);
    return short_circuited_;
  }
  const CircuitBreakerOptions& options() const { return options_; }

  static const char* state_name(State s) {
    switch (s) {
      case State::kClosed: return "closed";
      case State::kOpen: return "open";
      case State::kHalfOpen: return "half-open";
    }
    return "unknown";
  }

 private:
  void open_locked() {
    state_ = State::kOpen;
    opened_at_ = clock_->now();
    consecutive_failures_ = 0;
    ++opens_;
  }

  const CircuitBreakerOptions options_;
  const std::shared_ptr<Clock> clock_;
  mutable std::mutex mu_;
  State state_ = State::kClosed;
  int consecutive_failures_ = 0;
  bool probe_in_flight_ = false;
  TimePoint opened_at_{};
  uint64_t opens_ = 0;
  uint64_t short_circuited_ = 0;
};

}  // namespace brisk::cache
