// RedisTier against a real redis-server on loopback: values, TTLs, tags, invalidation messages between tiers,
// bad options, a server that is down at create, stalled (SIGSTOP) or killed, and the bound on blocking.
#include "brisk/cache/redis_tier.h"
#include "brisk/cache/write_behind.h"

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"

#if defined(BRISK_HAVE_REDIS)

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "cache/redis_server.h"

using brisk::Duration;
using brisk::cache::CircuitBreaker;
using brisk::cache::Invalidation;
using brisk::cache::RedisOptions;
using brisk::cache::RedisTier;
using brisk::cache::RedisWriteBehind;
using brisk::testing::kBlockingSlack;
using brisk::testing::RedisServer;
using brisk::testing::wait_until;
using namespace std::chrono_literals;

namespace {

// Lenient timeouts for the functional tests: a loaded 2-core machine can delay a loopback connect past the
// default 50 ms. The tests of the bound on blocking set the defaults back (with_default_timeouts).
RedisOptions options_for(const RedisServer& server) {
  RedisOptions o;
  o.port = server.port();
  o.connect_timeout = 500ms;
  o.command_timeout = 500ms;
  return o;
}

RedisOptions with_default_timeouts(RedisOptions o) {
  o.connect_timeout = RedisOptions().connect_timeout;
  o.command_timeout = RedisOptions().command_timeout;
  return o;
}

template <typename F>
Duration timed(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::steady_clock::now() - t0;
}

// Collects what a subscriber receives.
struct Inbox {
  std::mutex mu;
  std::vector<Invalidation> got;
  void operator()(const Invalidation& inv) {
    std::lock_guard<std::mutex> lock(mu);
    got.push_back(inv);
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu);
    return got.size();
  }
  // Waits up to 5 s for at least n messages.
  bool wait_for(size_t n) {
    for (int i = 0; i < 500; ++i) {
      if (size() >= n) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
  std::vector<Invalidation> snapshot() {
    std::lock_guard<std::mutex> lock(mu);
    return got;
  }
};

}  // namespace

TEST_CASE("redis tier get set ttl del against a real server", "[cache][redis]") {
  RedisServer server;
  REQUIRE(server.ok());
  auto tier = RedisTier::create(options_for(server));
  REQUIRE(tier.ok());
  RedisTier& r = **tier;

  auto miss = r.get("nothing");
  REQUIRE(miss.ok());
  CHECK_FALSE(miss->has_value());

  const std::string bytes("a\0b\r\nc", 6);  // binary-safe
  REQUIRE(r.set("k1", bytes, 10s).ok());
  auto hit = r.get("k1");
  REQUIRE(hit.ok());
  REQUIRE(hit->has_value());
  CHECK(**hit == bytes);
  CHECK(server.raw({"GET", "brisk:k1"}) == bytes);  // stored under "<key_prefix>:<key>"
  const int pttl = std::stoi(*server.raw({"PTTL", "brisk:k1"}));
  CHECK(pttl > 9000);
  CHECK(pttl <= 10000);

  auto with_ttl = r.get_with_ttl("k1");
  REQUIRE(with_ttl.ok());
  REQUIRE(with_ttl->has_value());
  CHECK((*with_ttl)->bytes == bytes);
  CHECK((*with_ttl)->ttl > 9s);
  CHECK((*with_ttl)->ttl <= 10s);

  REQUIRE(r.set("short", "x", 50ms).ok());
  CHECK(r.get("short")->has_value());
  CHECK(wait_until([&] { return !r.get("short")->has_value(); }));

  REQUIRE(r.set("forever", "y", 0s).ok());
  CHECK(server.raw({"PTTL", "brisk:forever"}) == "-1");

  REQUIRE(r.del("k1").ok());
  CHECK_FALSE(r.get("k1")->has_value());
  REQUIRE(r.del("k1").ok());  // deleting a missing key is fine

  auto s = r.stats();
  CHECK(s.commands >= 9);
  CHECK(s.errors == 0);
  CHECK(s.connects >= 1);
  CHECK(s.breaker_state == CircuitBreaker::State::kClosed);
}

TEST_CASE("redis tier server error replies are errors that name the command", "[cache][redis]") {
  RedisServer server;
  REQUIRE(server.ok());
  auto tier = RedisTier::create(options_for(server));
  REQUIRE(tier.ok());
  REQUIRE(server.raw({"SADD", "brisk:aset", "m"}) == "1");
  auto got = (*tier)->get("aset");  // WRONGTYPE
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == absl::StatusCode::kInternal);
  CHECK(got.status().message().find("GET brisk:aset") != std::string_view::npos);
  CHECK(got.status().message().find("127.0.0.1:" + std::to_string(server.port())) != std::string_view::npos);
  // The server is healthy: the breaker does not count it.
  for (int i = 0; i < 5; ++i) CHECK_FALSE((*tier)->get("aset").ok());
  CHECK((*tier)->stats().breaker_state == CircuitBreaker::State::kClosed);
  CHECK((*tier)->get("other").ok());
}

TEST_CASE("redis tier tags: invalidate_tag deletes the tagged keys and the set", "[cache][redis]") {
  RedisServer server;
  REQUIRE(server.ok());
  auto tier = RedisTier::create(options_for(server));
  REQUIRE(tier.ok());
  RedisTier& r = **tier;
  const std::vector<std::string> t1 = {"docs"}, both = {"docs", "faq"}, t2 = {"faq"};
  REQUIRE(r.set("a", "1", 10s, t1).ok());
  REQUIRE(r.set("b", "2", 60s, both).ok());
  REQUIRE(r.set("c", "3", 10s, t2).ok());
  REQUIRE(r.set("d", "4", 10s).ok());
  CHECK(server.raw({"SCARD", "brisk#tag:docs"}) == "2");
  // The set lives as long as its longest-lived member, whatever the order of writes.
  REQUIRE(r.set("e", "5", 1s, t1).ok());
  CHECK(std::stoi(*server.raw({"PTTL", "brisk#tag:docs"})) > 50000);

  auto n = r.invalidate_tag("docs");
  REQUIRE(n.ok());
  CHECK(*n == 3);  // a, b, e
  CHECK_FALSE(r.get("a")->has_value());
  CHECK_FALSE(r.get("b")->has_value());
  CHECK_FALSE(r.get("e")->has_value());
  CHECK(r.get("c")->has_value());
  CHECK(r.get("d")->has_value());
  CHECK(server.raw({"EXISTS", "brisk#tag:docs"}) == "0");

  auto again = r.invalidate_tag("docs");
  REQUIRE(again.ok());
  CHECK(*again == 0);
  // "faq" still lists b (deleted): only c is counted as deleted.
  auto faq = r.invalidate_tag("faq");
  REQUIRE(faq.ok());
  CHECK(*faq == 1);
}

TEST_CASE("redis tier invalidations reach other tiers' subscribers, not the sender", "[cache][redis]") {
  RedisServer server;
  REQUIRE(server.ok());
  Inbox inbox_a, inbox_b, inbox_other;
  auto a = RedisTier::create(options_for(server));
  auto b = RedisTier::create(options_for(server));
  RedisOptions other_opts = options_for(server);
  other_opts.key_prefix = "other";
  auto other = RedisTier::create(other_opts);
  REQUIRE((a.ok() && b.ok() && other.ok()));
  REQUIRE((*a)->subscribe([&](const Invalidation& i) { inbox_a(i); }).ok());
  REQUIRE((*b)->subscribe([&](const Invalidation& i) { inbox_b(i); }).ok());
  REQUIRE((*other)->subscribe([&](const Invalidation& i) { inbox_other(i); }).ok());
  // subscribe() waits only connect_timeout + command_timeout; on a loaded machine the thread may need longer.
  for (auto* t : {&a, &b, &other}) REQUIRE(wait_until([&] { return (**t)->stats().subscribed; }));
  CHECK_FALSE((*b)->subscribe([](const Invalidation&) {}).ok());  // one subscriber per tier

  REQUIRE((*a)->del("model:t:key|with:odd\nbytes").ok());
  const std::vector<std::string> tags = {"faq"};
  REQUIRE((*a)->set("x", "1", 10s, tags).ok());
  REQUIRE((*a)->set("y", "2", 10s, tags).ok());
  REQUIRE((*a)->invalidate_tag("faq").ok());
  REQUIRE(inbox_b.wait_for(2));
  auto got = inbox_b.snapshot();
  CHECK(got[0].kind == Invalidation::Kind::kKey);
  CHECK(got[0].name == "model:t:key|with:odd\nbytes");
  CHECK(got[1].kind == Invalidation::Kind::kTag);
  CHECK(got[1].name == "faq");
  CHECK(got[1].keys_complete);
  std::vector<std::string> keys = got[1].keys;
  std::sort(keys.begin(), keys.end());
  CHECK(keys == std::vector<std::string>{"x", "y"});

  // Garbage on the channel is ignored, not delivered.
  server.raw({"PUBLISH", "brisk:invalidate", "not a message"});
  server.raw({"PUBLISH", "brisk:invalidate", "BINV1|zz|T|99999:short"});
  CHECK(wait_until([&] { return (*b)->stats().messages_ignored >= 2; }));
  std::this_thread::sleep_for(50ms);
  CHECK(inbox_a.size() == 0);      // its own messages
  CHECK(inbox_other.size() == 0);  // another key_prefix
  CHECK(inbox_b.size() == 2);
}

TEST_CASE("redis tier lists no keys past max_keys_per_message", "[cache][redis]") {
  RedisServer server;
  REQUIRE(server.ok());
  RedisOptions o = options_for(server);
  o.max_keys_per_message = 2;
  auto a = RedisTier::create(o);
  auto b = RedisTier::create(o);
  REQUIRE((a.ok() && b.ok()));
  Inbox inbox;
  REQUIRE((*b)->subscribe([&](const Invalidation& i) { inbox(i); }).ok());
  REQUIRE(wait_until([&] { return (*b)->stats().subscribed; }));
  const std::vector<std::string> tags = {"big"};
  for (int i = 0; i < 3; ++i) REQUIRE((*a)->set(absl::StrCat("k", i), "v", 10s, tags).ok());
  REQUIRE(*(*a)->invalidate_tag("big") == 3);
  REQUIRE(inbox.wait_for(1));
  auto got = inbox.snapshot();
  CHECK(got[0].kind == Invalidation::Kind::kTag);
  CHECK_FALSE(got[0].keys_complete);
  CHECK(got[0].keys.empty());
}

TEST_CASE("redis tier options are validated, naming the field", "[cache][redis]") {
  auto bad = [](auto mutate, const std::string& field) {
    RedisOptions o;
    mutate(o);
    auto t = RedisTier::create(o);
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(t.status().message().find(field) != std::string_view::npos);
  };
  bad([](RedisOptions& o) { o.host = ""; }, "host");
  bad([](RedisOptions& o) { o.port = 0; }, "port");
  bad([](RedisOptions& o) { o.port = 70000; }, "port");
  bad([](RedisOptions& o) { o.key_prefix = ""; }, "key_prefix");
  bad([](RedisOptions& o) { o.pool_size = 0; }, "pool_size");
  bad([](RedisOptions& o) { o.connect_timeout = 0ms; }, "connect_timeout");
  bad([](RedisOptions& o) { o.command_timeout = -1ms; }, "command_timeout");
  bad([](RedisOptions& o) { o.breaker.failure_threshold = 0; }, "breaker");
  bad([](RedisOptions& o) { o.invalidation_channel = ""; }, "invalidation_channel");
  bad([](RedisOptions& o) { o.subscriber_backoff_max = 1ms; }, "subscriber_backoff");
  bad([](RedisOptions& o) { o.max_keys_per_message = -1; }, "max_keys_per_message");
  CHECK(RedisOptions().validate().ok());
}

TEST_CASE("redis tier works without a server at create and recovers when it starts", "[cache][redis]") {
  RedisServer server;
  REQUIRE(server.ok());
  server.kill();  // the port is known and nothing listens on it
  RedisOptions o = options_for(server);
  o.breaker.open_duration = 200ms;
  Inbox inbox;
  auto tier = RedisTier::create(o);
  REQUIRE(tier.ok());
  RedisTier& r = **tier;
  REQUIRE(r.subscribe([&](const Invalidation& i) { inbox(i); }).ok());
  CHECK_FALSE(r.stats().subscribed);

  for (int i = 0; i < 3; ++i) {
    auto got = r.get("k");
    REQUIRE_FALSE(got.ok());
    CHECK(got.status().code() == absl::StatusCode::kUnavailable);
    CHECK(got.status().message().find("127.0.0.1:" + std::to_string(server.port())) != std::string_view::npos);
    CHECK(got.status().message().find("GET brisk:k") != std::string_view::npos);
  }
  CHECK(r.stats().breaker_state == CircuitBreaker::State::kOpen);
  CHECK(r.stats().breaker_opens == 1);
  const uint64_t commands = r.stats().commands;
  auto fast = r.set("k", "v", 1s);
  CHECK(fast.code() == absl::StatusCode::kUnavailable);
  CHECK(fast.message().find("circuit breaker open") != std::string_view::npos);
  CHECK(r.stats().short_circuited >= 1);
  CHECK(r.stats().commands == commands);  // nothing reached the network

  REQUIRE(server.restart());
  // After open_duration one probe goes through, succeeds and closes the breaker.
  CHECK(wait_until([&] { return r.set("k", "v", 10s).ok(); }));
  CHECK(r.stats().breaker_state == CircuitBreaker::State::kClosed);
  CHECK(*r.get("k") == std::optional<std::string>("v"));
  // The subscriber found the server too, and says messages may have been missed.
  CHECK(wait_until([&] { return r.stats().subscribed; }));
  REQUIRE(inbox.wait_for(1));
  CHECK(inbox.snapshot()[0].kind == Invalidation::Kind::kAll);
}

TEST_CASE("redis tier calls stay within the timeouts when the server stalls or dies", "[cache][redis]") {
  RedisServer server;
  REQUIRE(server.ok());
  RedisOptions o = with_default_timeouts(options_for(server));
  o.pool_size = 2;
  o.breaker.failure_threshold = 1000;  // keep the breaker out of the way: every call meets the stall
  auto tier = RedisTier::create(o);
  REQUIRE(tier.ok());
  RedisTier& r = **tier;
  Inbox inbox;
  REQUIRE(r.subscribe([&](const Invalidation& i) { inbox(i); }).ok());
  REQUIRE(r.set("k", "v", 10s).ok());
  const Duration bound = o.connect_timeout + o.command_timeout + kBlockingSlack;

  server.pause();
  // More callers than connections: the extra ones wait for a connection at most command_timeout.
  std::atomic<int> failures{0};
  std::atomic<int64_t> worst_ns{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) {
        Duration took = timed([&] {
          if (!r.get("k").ok()) failures.fetch_add(1);
        });
        int64_t prev = worst_ns.load();
        while (took.count() > prev && !worst_ns.compare_exchange_weak(prev, took.count())) {
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures.load() == 20);
  CHECK(Duration(worst_ns.load()) < bound);
  auto s = r.stats();
  CHECK(s.timeouts >= 1);
  CHECK(s.errors == 20);

  server.resume();
  CHECK(wait_until([&] { return r.get("k").ok(); }));
  CHECK(r.stats().reconnects >= 1);  // timed-out connections were dropped and remade

  server.kill();
  Duration took = timed([&] { CHECK_FALSE(r.get("k").ok()); });
  CHECK(took < bound);
  REQUIRE(server.restart());
  CHECK(wait_until([&] { return r.set("k", "v2", 10s).ok(); }));
  CHECK(*r.get("k") == std::optional<std::string>("v2"));
  // The subscriber lost its connection with the kill and came back.
  CHECK(wait_until([&] { return inbox.size() >= 1 && r.stats().subscribed; }));
  CHECK(inbox.snapshot().back().kind == Invalidation::Kind::kAll);
}

TEST_CASE("redis tier destruction is prompt while the server is stalled", "[cache][redis]") {
  RedisServer server;
  REQUIRE(server.ok());
  auto tier = RedisTier::create(with_default_timeouts(options_for(server)));
  REQUIRE(tier.ok());
  REQUIRE((*tier)->subscribe([](const Invalidation&) {}).ok());
  REQUIRE((*tier)->set("k", "v", 10s).ok());
  server.pause();
  CHECK_FALSE((*tier)->get("k").ok());
  Duration took = timed([&] { tier->reset(); });
  CHECK(took < 500ms);
  server.resume();
}

TEST_CASE("write-behind queue coalesces, drops when full, and orders cancels after writes", "[cache][redis]") {
  RedisServer server;
  REQUIRE(server.ok());
  RedisOptions o = options_for(server);
  o.command_timeout = 3s;  // the stalled write below stays in flight until the server resumes
  auto tier = RedisTier::create(o);
  REQUIRE(tier.ok());
  RedisWriteBehind writer(tier->get(), /*capacity=*/2);
  REQUIRE((*tier)->set("warm", "up", 10s).ok());  // a pooled connection, so the stall hits the command

  server.pause();
  REQUIRE(writer.enqueue("a", "1", 10s, {}));
  REQUIRE(wait_until([&] { return writer.stats().queued == 0; }));  // "a" is in flight, stuck
  CHECK(writer.enqueue("b", "1", 10s, {"t"}));
  CHECK(writer.enqueue("c", "1", 10s, {}));
  CHECK(writer.enqueue("b", "2", 10s, {"t"}));     // replaces the queued "b"
  CHECK_FALSE(writer.enqueue("d", "1", 10s, {}));  // full
  auto s = writer.stats();
  CHECK(s.queued == 2);
  CHECK(s.coalesced == 1);
  CHECK(s.dropped == 1);
  writer.cancel_tag("t");
  CHECK(writer.stats().cancelled == 1);

  // cancel_key of the write in flight waits for it to finish, so a DEL after it cannot be overtaken.
  std::thread resumer([&] {
    std::this_thread::sleep_for(200ms);
    server.resume();
  });
  Duration took = timed([&] { writer.cancel_key("a"); });
  resumer.join();
  CHECK(took >= 150ms);
  CHECK(server.raw({"GET", "brisk:a"}) == "1");
  REQUIRE(writer.flush(5s));
  s = writer.stats();
  CHECK(s.written == 2);  // a and c
  CHECK(server.raw({"GET", "brisk:b"}) == "(nil)");
  CHECK(server.raw({"GET", "brisk:c"}) == "1");
}

#else  // a library built without hiredis

TEST_CASE("redis tier in a build without Redis reports UNIMPLEMENTED from create", "[cache][redis]") {
  auto tier = brisk::cache::RedisTier::create(brisk::cache::RedisOptions{});
  REQUIRE_FALSE(tier.ok());
  CHECK(tier.status().code() == absl::StatusCode::kUnimplemented);
  brisk::cache::RedisOptions bad;
  bad.port = 0;  // options are still checked first
  CHECK(brisk::cache::RedisTier::create(bad).status().code() == absl::StatusCode::kInvalidArgument);
}

#endif  // BRISK_HAVE_REDIS
