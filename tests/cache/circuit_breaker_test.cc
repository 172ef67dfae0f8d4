// The circuit breaker's state machine on a ManualClock: closed → open after N consecutive failures → half-open
// after open_duration with exactly one probe → closed on its success, open again on its failure.
#include "brisk/cache/circuit_breaker.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

using brisk::ManualClock;
using brisk::cache::CircuitBreaker;
using brisk::cache::CircuitBreakerOptions;
using State = CircuitBreaker::State;
using namespace std::chrono_literals;

namespace {

CircuitBreakerOptions three_for_one_second() {
  CircuitBreakerOptions o;
  o.failure_threshold = 3;
  o.open_duration = 1s;
  return o;
}

void fail(CircuitBreaker& b) {
  auto p = b.try_acquire();
  REQUIRE(p);
  b.record_failure(p);
}

}  // namespace

TEST_CASE("circuit breaker opens after consecutive failures only", "[cache][redis][breaker]") {
  auto clock = std::make_shared<ManualClock>();
  CircuitBreaker b(three_for_one_second(), clock);
  fail(b);
  fail(b);
  auto p = b.try_acquire();
  b.record_success(p);  // a success resets the count
  fail(b);
  fail(b);
  CHECK(b.state() == State::kClosed);
  fail(b);
  CHECK(b.state() == State::kOpen);
  CHECK(b.opens() == 1);
  // Open: refused without a call, counted.
  CHECK_FALSE(b.try_acquire());
  CHECK_FALSE(b.try_acquire());
  CHECK(b.short_circuited() == 2);
  clock->advance(999ms);
  CHECK_FALSE(b.try_acquire());
  CHECK(b.state() == State::kOpen);
}

TEST_CASE("circuit breaker half-open lets one probe through and its success closes it", "[cache][redis][breaker]") {
  auto clock = std::make_shared<ManualClock>();
  CircuitBreaker b(three_for_one_second(), clock);
  for (int i = 0; i < 3; ++i) fail(b);
  clock->advance(1s);
  auto probe = b.try_acquire();
  REQUIRE(probe);
  CHECK(probe.probe);
  CHECK(b.state() == State::kHalfOpen);
  CHECK_FALSE(b.try_acquire());  // a second caller while the probe is out
  b.record_success(probe);
  CHECK(b.state() == State::kClosed);
  auto p = b.try_acquire();
  CHECK(p);
  CHECK_FALSE(p.probe);
  b.record_success(p);
  CHECK(b.opens() == 1);
}

TEST_CASE("circuit breaker half-open probe failure reopens for a full period", "[cache][redis][breaker]") {
  auto clock = std::make_shared<ManualClock>();
  CircuitBreaker b(three_for_one_second(), clock);
  for (int i = 0; i < 3; ++i) fail(b);
  clock->advance(1500ms);
  auto probe = b.try_acquire();
  REQUIRE(probe.probe);
  b.record_failure(probe);
  CHECK(b.state() == State::kOpen);
  CHECK(b.opens() == 2);
  clock->advance(999ms);  // measured from the reopening, not the first opening
  CHECK_FALSE(b.try_acquire());
  clock->advance(1ms);
  auto probe2 = b.try_acquire();
  CHECK(probe2.probe);
  // A neutral end (the call never reached the server) frees the probe slot without a verdict.
  b.record_neutral(probe2);
  CHECK(b.state() == State::kHalfOpen);
  auto probe3 = b.try_acquire();
  CHECK(probe3.probe);
  b.record_success(probe3);
  CHECK(b.state() == State::kClosed);
}

TEST_CASE("circuit breaker ignores late failures of calls made before it opened", "[cache][redis][breaker]") {
  auto clock = std::make_shared<ManualClock>();
  CircuitBreaker b(three_for_one_second(), clock);
  std::vector<CircuitBreaker::Permit> in_flight;
  for (int i = 0; i < 5; ++i) in_flight.push_back(b.try_acquire());
  for (int i = 0; i < 5; ++i) b.record_failure(in_flight[i]);
  CHECK(b.opens() == 1);  // the 4th and 5th failures land on an open breaker
  clock->advance(1s);
  auto probe = b.try_acquire();
  REQUIRE(probe.probe);
  auto old = CircuitBreaker::Permit{true, false};
  b.record_failure(old);  // not the probe: the half-open breaker waits for its probe
  CHECK(b.state() == State::kHalfOpen);
  b.record_failure(probe);
  CHECK(b.state() == State::kOpen);
}

TEST_CASE("circuit breaker grants one probe among racing threads", "[cache][redis][breaker]") {
  auto clock = std::make_shared<ManualClock>();
  CircuitBreaker b(three_for_one_second(), clock);
  for (int i = 0; i < 3; ++i) fail(b);
  clock->advance(2s);
  std::atomic<int> granted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        if (b.try_acquire()) granted.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(granted.load() == 1);
  CHECK(b.short_circuited() == 799);
}

TEST_CASE("circuit breaker options are validated", "[cache][redis][breaker]") {
  CircuitBreakerOptions o;
  CHECK(o.validate().ok());
  o.failure_threshold = 0;
  CHECK(o.validate().message().find("failure_threshold") != std::string::npos);
  o = {};
  o.open_duration = 0s;
  CHECK(o.validate().message().find("open_duration") != std::string::npos);
}
