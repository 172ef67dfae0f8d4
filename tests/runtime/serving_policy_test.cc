// The serving policy file (brisk/runtime/serving_policy.h): round trip, every bad value's message, unknown keys, and
// a file that changes a runtime's batching observably (batch_stats, stats_json, forward passes).
#include "brisk/runtime/serving_policy.h"

#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/runtime_test_util.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;

std::string message_of(const std::string& text) {
  auto p = brisk::parse_policy_json(text, "p.json");
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().code() == absl::StatusCode::kInvalidArgument);
  return std::string(p.status().message());
}

fs::path temp_file(const std::string& name, const std::string& text) {
  const fs::path path = fs::temp_directory_path() / ("brisk_policy_test_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("policy file round trip keeps every parameter and the provenance") {
  brisk::ServingPolicy p;
  p.max_batch_size = 12;
  p.preferred_batch_multiple = 4;
  p.max_queue_delay_ms = 2.5;
  p.executor_threads = 2;
  p.max_inflight_batches = 1;
  p.num_threads = 1;
  p.max_batch_tokens = 4096;
  p.reject_predicted_late = false;
  p.provenance.tool = "brisk tune";
  p.provenance.mix = "faq";
  p.provenance.rate_per_s = 40;
  p.provenance.slo_p99_ms = 50;
  p.provenance.p99_ms = 31.25;
  p.provenance.goodput_per_s = 39.5;
  const std::string text = brisk::policy_to_json(p);
  // The written text is plain JSON a reader can check independently.
  const nlohmann::json j = nlohmann::json::parse(text);
  CHECK(j["format"] == "brisk-serving-policy");
  CHECK(j["version"] == 1);
  CHECK(j["max_batch_size"] == 12);
  CHECK(j["max_queue_delay_ms"] == 2.5);
  CHECK(j["reject_predicted_late"] == false);
  CHECK(j["provenance"]["slo_p99_ms"] == 50);

  auto back = brisk::parse_policy_json(text);
  REQUIRE(back.ok());
  CHECK(back->max_batch_size == p.max_batch_size);
  CHECK(back->preferred_batch_multiple == p.preferred_batch_multiple);
  CHECK(back->max_queue_delay_ms == p.max_queue_delay_ms);
  CHECK(back->executor_threads == p.executor_threads);
  CHECK(back->max_inflight_batches == p.max_inflight_batches);
  CHECK(back->num_threads == p.num_threads);
  CHECK(back->max_batch_tokens == p.max_batch_tokens);
  CHECK(back->reject_predicted_late == p.reject_predicted_late);
  CHECK(back->provenance.tool == "brisk tune");
  CHECK(back->provenance.mix == "faq");
  CHECK(back->provenance.p99_ms == 31.25);
  CHECK_FALSE(back->provenance.defaults_p99_ms.has_value());
  CHECK(brisk::policy_to_json(*back) == text);

  const fs::path path = temp_file("round_trip.json", "");
  REQUIRE(brisk::write_policy_file(p, path.string()).ok());
  auto read = brisk::read_policy_file(path.string());
  REQUIRE(read.ok());
  CHECK(brisk::policy_to_json(*read) == text);
  fs::remove(path);
}

TEST_CASE("policy file: absent parameters stay as they are, an empty object changes nothing") {
  auto p = brisk::parse_policy_json("{}");
  REQUIRE(p.ok());
  brisk::RuntimeOptions o;
  o.num_threads = 3;
  REQUIRE(brisk::apply_policy(*p, o).ok());
  CHECK(o.num_threads == 3);
  CHECK(o.batching.max_batch_size == 32);
  CHECK(o.batching.preferred_batch_multiple == 8);

  p = brisk::parse_policy_json(R"({"max_batch_size": 16, "max_queue_delay_ms": 3})");
  REQUIRE(p.ok());
  REQUIRE(brisk::apply_policy(*p, o).ok());
  CHECK(o.batching.max_batch_size == 16);
  CHECK(o.batching.max_queue_delay == std::chrono::milliseconds(3));
  CHECK(o.batching.preferred_batch_multiple == 8);
  CHECK(o.batching.executor_threads == 1);
}

TEST_CASE("policy file: a depth bomb is refused, naming the limit, not a stack overflow") {
  // Issue 30's reproduction: 100,000 nested arrays as max_batch_size crashed the error message's serialisation.
  const std::string bomb = std::string(100000, '[') + std::string(100000, ']');
  auto r = brisk::parse_policy_json(R"({"format":"brisk-serving-policy","version":1,"max_batch_size":)" + bomb + "}",
                                    "policy file 'p.json'");
  REQUIRE_FALSE(r.ok());
  CHECK(absl::IsInvalidArgument(r.status()));
  CHECK_THAT(std::string(r.status().message()),
             Catch::Contains("policy file 'p.json': arrays and objects are nested more than 64 levels deep"));
  // A long but shallow value is named, cut to a bounded length.
  std::string many = "[";
  for (int i = 0; i < 100000; ++i) many += (i ? ",1" : "1");
  many += "]";
  auto long_value = brisk::parse_policy_json(
      R"({"format":"brisk-serving-policy","version":1,"max_batch_size":)" + many + "}", "p.json");
  REQUIRE_FALSE(long_value.ok());
  CHECK(long_value.status().message().size() < 300);
  CHECK_THAT(std::string(long_value.status().message()), Catch::Contains("max_batch_size is [1,1,1,"));
}

TEST_CASE("policy file: each bad value is named with what was expected") {
  struct Case {
    std::string text, expected;
  };
  const std::vector<Case> cases = {
      {R"({"max_batch_size": 0})", "p.json: max_batch_size is 0; expected an integer, 1 to 4096"},
      {R"({"max_batch_size": 5000})", "p.json: max_batch_size is 5000; expected an integer, 1 to 4096"},
      {R"({"max_batch_size": 2.5})", "p.json: max_batch_size is 2.5; expected an integer, 1 to 4096"},
      {R"({"max_batch_size": "8"})", "p.json: max_batch_size is \"8\"; expected an integer, 1 to 4096"},
      {R"({"max_batch_size": -1})", "p.json: max_batch_size is -1; expected an integer, 1 to 4096"},
      {R"({"preferred_batch_multiple": 0})",
       "p.json: preferred_batch_multiple is 0; expected an integer, 1 (off) to max_batch_size"},
      {R"({"max_batch_size": 8, "preferred_batch_multiple": 16})",
       "p.json: preferred_batch_multiple is 16; expected 1 to max_batch_size (8)"},
      {R"({"max_queue_delay_ms": -1})", "p.json: max_queue_delay_ms is -1; expected milliseconds, 0 to 60000"},
      {R"({"max_queue_delay_ms": 1e9})",
       "p.json: max_queue_delay_ms is 1000000000.0; expected milliseconds, 0 to 60000"},
      {R"({"executor_threads": 0})", "p.json: executor_threads is 0; expected an integer, 1 to 256"},
      {R"({"executor_threads": 300})", "p.json: executor_threads is 300; expected an integer, 1 to 256"},
      {R"({"executor_threads": 2, "max_inflight_batches": 3})",
       "p.json: max_inflight_batches is 3; expected 0 (= executor_threads) to executor_threads (2)"},
      {R"({"max_inflight_batches": -2})",
       "p.json: max_inflight_batches is -2; expected an integer, 0 (= executor_threads) to executor_threads"},
      {R"({"num_threads": 2000})",
       "p.json: num_threads is 2000; expected an integer, 0 (the CPUs this process may use) to 1024"},
      {R"({"max_batch_tokens": 2000000000})",
       "p.json: max_batch_tokens is 2000000000; expected an integer, 0 (unlimited) to 1073741824"},
      {R"({"reject_predicted_late": 1})", "p.json: reject_predicted_late is 1; expected true or false"},
      {R"({"format": "other"})", "p.json: format is \"other\"; expected \"brisk-serving-policy\""},
      {R"({"version": 2})", "p.json: version is 2; expected 1 (this library reads version 1 files)"},
      {R"({"provenance": 3})", "p.json: provenance is 3; expected an object"},
      {R"({"provenance": {"rate_per_s": -3}})", "p.json: provenance.rate_per_s is -3; expected a finite number >= 0"},
      {R"({"provenance": {"date": 3}})", "p.json: provenance.date is 3; expected a string"},
      {R"([1, 2])", "p.json: the document is [1,2]; expected a JSON object (a brisk serving policy)"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    CHECK(message_of(c.text) == c.expected);
  }
  CHECK_THAT(message_of(R"({"max_batch_size": )"), Catch::StartsWith("p.json: is not valid JSON ("));
  CHECK_THAT(message_of(R"({"max_batch_size": )"), Catch::EndsWith("); expected a JSON document"));
}

TEST_CASE("policy file: unknown keys are refused by name") {
  const std::string top = message_of(R"({"max_batch_size": 8, "max_batch": 4, "delay": 1})");
  CHECK(top.find("unknown keys \"delay\", \"max_batch\"") != std::string::npos);
  CHECK(top.find("expected only format, version, max_batch_size") != std::string::npos);
  const std::string nested = message_of(R"({"provenance": {"tool": "x", "colour": "red"}})");
  CHECK(nested.find("unknown key \"colour\" in provenance") != std::string::npos);
}

TEST_CASE("policy file: a missing or oversized file is named") {
  auto missing = brisk::read_policy_file("/nonexistent/policy.json");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(std::string(missing.status().message()) ==
        "/nonexistent/policy.json: file not found; expected a serving policy (a JSON file written by brisk tune)");

  const fs::path big = temp_file("big.json", std::string((size_t{1} << 20) + 10, ' '));
  auto r = brisk::read_policy_file(big.string());
  REQUIRE_FALSE(r.ok());
  CHECK(std::string(r.status().message()).find("is larger than 1048576 bytes") != std::string::npos);
  fs::remove(big);
}

TEST_CASE("apply_policy checks a policy built in code and leaves the options unchanged on an error") {
  brisk::RuntimeOptions o;
  brisk::ServingPolicy p;
  p.max_batch_size = 4;
  p.preferred_batch_multiple = 8;
  const brisk::Status s = brisk::apply_policy(p, o);
  REQUIRE_FALSE(s.ok());
  CHECK(std::string(s.message()) == "serving policy: preferred_batch_multiple is 8; expected 1 to max_batch_size (4)");
  CHECK(o.batching.max_batch_size == 32);
}

TEST_CASE("a policy error names only fields the policy holds: bounds it leaves out follow the ones it sets") {
  // Issue 30: a file with only "max_batch_size": 4 was refused, naming the default preferred_batch_multiple 8.
  auto p = brisk::parse_policy_json(R"({"max_batch_size": 4})", "p.json");
  REQUIRE(p.ok());
  brisk::RuntimeOptions o;
  REQUIRE(o.batching.preferred_batch_multiple == 8);
  const brisk::Status s = brisk::apply_policy(*p, o);
  REQUIRE(s.ok());
  CHECK(o.batching.max_batch_size == 4);
  CHECK(o.batching.preferred_batch_multiple == 4);

  brisk::RuntimeOptions threads;
  threads.batching.executor_threads = 4;
  threads.batching.max_inflight_batches = 4;
  p = brisk::parse_policy_json(R"({"executor_threads": 2})", "p.json");
  REQUIRE(p.ok());
  REQUIRE(brisk::apply_policy(*p, threads).ok());
  CHECK(threads.batching.executor_threads == 2);
  CHECK(threads.batching.max_inflight_batches == 2);
}

TEST_CASE("a runtime loads policy_path: its limits show in batch_stats and stats_json and split embed() calls") {
  namespace bt = brisk::testing;
  const fs::path path = temp_file("runtime.json", R"({"format": "brisk-serving-policy", "version": 1,
      "max_batch_size": 3, "preferred_batch_multiple": 1, "max_queue_delay_ms": 4, "num_threads": 1,
      "provenance": {"tool": "hand"}})");
  brisk::RuntimeOptions opts = bt::uncached_runtime_options();
  opts.policy_path = path.string();
  auto rt = bt::make_runtime(opts);
  const brisk::batch::BatcherStats stats = rt->batch_stats();
  CHECK(stats.batch_limit == 3);
  CHECK(stats.queue_delay == std::chrono::milliseconds(4));
  const nlohmann::json j = nlohmann::json::parse(rt->stats_json());
  CHECK(j.dump().find("\"batch_limit\":3") != std::string::npos);

  // Ten texts in one embed() call: ceil(10 / 3) = 4 forward passes with the policy, 1 with the default batch of 32.
  std::vector<std::string> owned;
  for (int i = 0; i < 10; ++i) owned.push_back("question number " + std::to_string(i));
  const std::vector<std::string_view> texts(owned.begin(), owned.end());
  const uint64_t before = rt->forward_passes();
  REQUIRE(rt->embed(texts).ok());
  CHECK(rt->forward_passes() - before == 4);

  auto plain = bt::make_runtime(bt::uncached_runtime_options());
  const uint64_t plain_before = plain->forward_passes();
  REQUIRE(plain->embed(texts).ok());
  CHECK(plain->forward_passes() - plain_before == 1);
  CHECK(plain->batch_stats().batch_limit == 32);
  fs::remove(path);
}

TEST_CASE("Runtime::create names a bad policy file") {
  brisk::RuntimeOptions opts = brisk::testing::runtime_options();
  const fs::path path = temp_file("bad.json", R"({"max_batch_size": 0})");
  opts.policy_path = path.string();
  auto rt = brisk::Runtime::create(opts);
  REQUIRE_FALSE(rt.ok());
  CHECK(std::string(rt.status().message()) ==
        "policy file '" + path.string() + "': max_batch_size is 0; expected an integer, 1 to 4096");
  fs::remove(path);
  opts.policy_path = "/nonexistent/p.json";
  rt = brisk::Runtime::create(opts);
  REQUIRE_FALSE(rt.ok());
  CHECK(rt.status().code() == absl::StatusCode::kNotFound);
}
