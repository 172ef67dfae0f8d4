// RedisTier against a real redis-server that demands a password (requirepass) and knows an ACL user: the right
// credentials work on the pool and the subscriber, wrong or missing ones give a clear PERMISSION_DENIED and are
// counted; TLS without hiredis_ssl is refused rather than faked.
#include <catch2/catch.hpp>

#include "brisk/cache/redis_tier.h"

#if defined(BRISK_HAVE_REDIS)

#include <mutex>
#include <string>
#include <vector>

#include "cache/redis_server.h"

using brisk::cache::Invalidation;
using brisk::cache::RedisOptions;
using brisk::cache::RedisTier;
using brisk::testing::RedisServer;
using brisk::testing::RedisServerAuth;
using brisk::testing::wait_until;
using namespace std::chrono_literals;

namespace {

const RedisServerAuth kAuth = {.password = "default-secret", .acl_user = "app", .acl_password = "app-secret"};

RedisOptions options_for(const RedisServer& server, std::string user, std::string password) {
  RedisOptions o;
  o.port = server.port();
  o.connect_timeout = 500ms;
  o.command_timeout = 500ms;
  o.user = std::move(user);
  o.password = std::move(password);
  return o;
}

bool contains(const brisk::Status& s, const std::string& part) {
  return std::string(s.message()).find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("redis tier authenticates with requirepass and with an ACL user", "[cache][redis][auth]") {
  RedisServer server(kAuth);
  REQUIRE(server.ok());
  for (const auto& [user, password] : {std::pair<std::string, std::string>{"", "default-secret"},
                                       std::pair<std::string, std::string>{"app", "app-secret"}}) {
    INFO("user \"" << user << "\"");
    auto tier = RedisTier::create(options_for(server, user, password));
    REQUIRE(tier.ok());
    REQUIRE((*tier)->set("k-" + user, "v", 10s).ok());
    auto got = (*tier)->get("k-" + user);
    REQUIRE(got.ok());
    CHECK(got->value_or("") == "v");
    CHECK(server.raw({"GET", "brisk:k-" + user}) == "v");
    // The subscriber authenticates too: it receives another tier's invalidation.
    std::mutex mu;
    std::vector<Invalidation> inbox;
    REQUIRE((*tier)
                ->subscribe([&](const Invalidation& inv) {
                  std::lock_guard<std::mutex> lock(mu);
                  inbox.push_back(inv);
                })
                .ok());
    CHECK(wait_until([&] { return (*tier)->stats().subscribed; }, 5s));
    auto other = RedisTier::create(options_for(server, user, password));
    REQUIRE(other.ok());
    REQUIRE((*other)->del("k-" + user).ok());
    CHECK(wait_until(
        [&] {
          std::lock_guard<std::mutex> lock(mu);
          return !inbox.empty();
        },
        5s));
    CHECK((*tier)->stats().auth_failures == 0);
  }
}

TEST_CASE("redis tier reports a wrong or missing password as PERMISSION_DENIED and counts it", "[cache][redis][auth]") {
  RedisServer server(kAuth);
  REQUIRE(server.ok());
  struct Case {
    std::string user, password, names;
  };
  for (const Case& c :
       {Case{"", "wrong", "RedisOptions.password"}, Case{"app", "wrong", "RedisOptions.user \"app\""},
        Case{"nobody", "app-secret", "RedisOptions.user \"nobody\""}, Case{"", "", "RedisOptions.password is empty"}}) {
    INFO("user \"" << c.user << "\" password \"" << c.password << "\"");
    auto tier = RedisTier::create(options_for(server, c.user, c.password));
    REQUIRE(tier.ok());  // create() does not touch the network
    auto got = (*tier)->get("k");
    REQUIRE_FALSE(got.ok());
    CHECK(got.status().code() == absl::StatusCode::kPermissionDenied);
    CHECK(contains(got.status(), c.names));
    CHECK(contains(got.status(), "127.0.0.1:" + std::to_string(server.port())));
    CHECK((*tier)->stats().auth_failures >= 1);
    // The subscriber gives up at once on refused credentials instead of retrying for ever.
    auto sub = (*tier)->subscribe([](const Invalidation&) {});
    CHECK(sub.code() == absl::StatusCode::kPermissionDenied);
  }
  CHECK(server.raw({"DBSIZE"}) == "0");
}

TEST_CASE("redis options refuse a user without a password, and TLS without hiredis_ssl", "[cache][redis][auth]") {
  RedisOptions o;
  o.user = "app";
  CHECK(o.validate().code() == absl::StatusCode::kInvalidArgument);
  CHECK(contains(o.validate(), "RedisOptions.user"));
  RedisOptions tls;
  tls.tls = true;
  auto tier = RedisTier::create(tls);
  REQUIRE_FALSE(tier.ok());
  CHECK(tier.status().code() == absl::StatusCode::kUnimplemented);
  CHECK(contains(tier.status(), "RedisOptions.tls"));
  CHECK(contains(tier.status(), "hiredis"));
}

#endif  // BRISK_HAVE_REDIS
