// brisk/runtime/tracing.h without a runtime: traceparent parsing against the W3C Trace Context (level 1,
// Recommendation of 2021-11-23) examples and rules, ids, and the OTLP/JSON encoding against the field names of the
// OTLP specification's JSON Protobuf Encoding and opentelemetry-proto's trace.proto / common.proto.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <mutex>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "brisk/runtime/tracing.h"

namespace {

using brisk::parse_traceparent;

// The traceparent of W3C Trace Context section 3.2.3 ("Examples of HTTP traceparent Headers").
constexpr const char* kSpecSampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
constexpr const char* kSpecNotSampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";

std::string message_of(std::string_view value) {
  auto parsed = parse_traceparent(value);
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.status().code() == absl::StatusCode::kInvalidArgument);
  return std::string(parsed.status().message());
}

brisk::Span sample_span() {
  brisk::Span s;
  s.trace_id = {0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36};
  s.span_id = {0xee, 0xe1, 0x9b, 0x7e, 0xc3, 0xc1, 0xb1, 0x74};
  s.parent_span_id = {0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7};
  s.name = "brisk.request";
  s.start_unix_nanos = 1544712660000000000;
  s.end_unix_nanos = 1544712661000000000;
  s.status = brisk::SpanStatusCode::kError;
  s.status_message = "DEADLINE_EXCEEDED: late";
  s.attributes = {{"brisk.cache", std::string("miss")},
                  {"brisk.batch_size", int64_t{-3}},
                  {"brisk.ratio", 0.25},
                  {"brisk.flag", true}};
  return s;
}

}  // namespace

TEST_CASE("traceparent: the spec's example parses (section 3.2.3)") {
  auto sampled = parse_traceparent(kSpecSampled);
  REQUIRE(sampled.ok());
  CHECK(brisk::to_hex(sampled->trace_id) == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(brisk::to_hex(sampled->span_id) == "00f067aa0ba902b7");
  CHECK(sampled->flags == 0x01);
  CHECK(sampled->sampled());
  CHECK(brisk::format_traceparent(*sampled) == kSpecSampled);

  auto not_sampled = parse_traceparent(kSpecNotSampled);
  REQUIRE(not_sampled.ok());
  CHECK_FALSE(not_sampled->sampled());
  CHECK(brisk::format_traceparent(*not_sampled) == kSpecNotSampled);
  // trace-flags is a bit field: 0x03 is sampled with an unknown flag set (section 3.2.2.5).
  auto more = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03");
  REQUIRE(more.ok());
  CHECK(more->sampled());
  CHECK(brisk::child_of(*more).flags == 0x01);  // only the sampled flag is forwarded
}

TEST_CASE("traceparent: invalid values name what is wrong (sections 3.2.2.1-3.2.2.5)") {
  // All-zero trace-id (3.2.2.3) and parent-id (3.2.2.4) are invalid.
  CHECK_THAT(message_of("00-00000000000000000000000000000000-00f067aa0ba902b7-01"),
             Catch::Contains("trace-id is all zeros"));
  CHECK_THAT(message_of("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"),
             Catch::Contains("parent-id is all zeros"));
  // Version ff is invalid (3.2.2.1).
  CHECK_THAT(message_of("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), Catch::Contains("version ff"));
  // HEXDIGLC: lowercase only, in every field.
  CHECK_THAT(message_of("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"), Catch::Contains("trace-id"));
  CHECK_THAT(message_of("00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01"), Catch::Contains("parent-id"));
  CHECK_THAT(message_of("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A"), Catch::Contains("trace-flags"));
  CHECK_THAT(message_of("0G-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), Catch::Contains("version"));
  // Version 00 is exactly 55 characters.
  CHECK_THAT(message_of("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-"),
             Catch::Contains("version 00 has exactly 55"));
  CHECK_THAT(message_of("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1"), Catch::Contains("fewer than"));
  CHECK_THAT(message_of(""), Catch::Contains("fewer than"));
  CHECK_THAT(message_of("00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01"), Catch::Contains("'-'"));
  CHECK_THAT(message_of("00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01"), Catch::Contains("'-'"));
  // The message shows the value and the expected form, with control bytes escaped.
  const std::string m = message_of(std::string("00-\n\x01", 5));
  CHECK_THAT(m, Catch::StartsWith("traceparent is '00-\\x0a\\x01'"));
  CHECK_THAT(m, Catch::EndsWith("expected 00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>"));
  CHECK(message_of(std::string(10000, 'a')).size() < 400);  // a huge header is not echoed whole
}

TEST_CASE("traceparent: a higher version is read by the forward-compatibility rule (section 3.2.4)") {
  // Its version 00 fields, then the end of the value or a '-' and anything after it.
  auto exact = parse_traceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  REQUIRE(exact.ok());
  CHECK(exact->sampled());
  auto longer =
      parse_traceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-will-be-like");
  REQUIRE(longer.ok());
  CHECK(brisk::to_hex(longer->trace_id) == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(brisk::to_hex(longer->span_id) == "00f067aa0ba902b7");
  // Only the sampled bit of a future version's flags is read.
  auto flags = parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff");
  REQUIRE(flags.ok());
  CHECK(flags->flags == 0x01);
  CHECK_THAT(message_of("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01.what"),
             Catch::Contains("other than '-'"));
  CHECK_THAT(message_of("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0"), Catch::Contains("fewer than"));
  CHECK_THAT(message_of("cc-00000000000000000000000000000000-00f067aa0ba902b7-01"), Catch::Contains("all zeros"));
}

TEST_CASE("tracing: random ids are never zero and do not repeat, on any thread") {
  std::set<std::string> ids;
  std::mutex mu;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::vector<std::string> mine;
      for (int i = 0; i < 2000; ++i) mine.push_back(brisk::to_hex(brisk::random_span_id()));
      std::lock_guard lock(mu);
      ids.insert(mine.begin(), mine.end());
    });
  }
  for (auto& t : threads) t.join();
  CHECK(ids.size() == 8000);
  CHECK(ids.count("0000000000000000") == 0);
  const brisk::TraceContext root = brisk::new_trace(true);
  CHECK(brisk::to_hex(root.trace_id) != std::string(32, '0'));
  CHECK(root.sampled());
  const brisk::TraceContext child = brisk::child_of(root);
  CHECK(child.trace_id == root.trace_id);
  CHECK(child.span_id != root.span_id);
  auto reparsed = parse_traceparent(brisk::format_traceparent(child));
  REQUIRE(reparsed.ok());
  CHECK(reparsed->trace_id == child.trace_id);
  CHECK(reparsed->span_id == child.span_id);
}

TEST_CASE("tracing: unix_nanos follows the system clock") {
  const auto system_before = std::chrono::system_clock::now().time_since_epoch();
  const int64_t ns = brisk::unix_nanos(std::chrono::steady_clock::now());
  const auto system_after = std::chrono::system_clock::now().time_since_epoch();
  // Within a second of the wall clock (the offset is taken once; the clocks may drift apart slowly).
  CHECK(ns > std::chrono::duration_cast<std::chrono::nanoseconds>(system_before).count() - 1'000'000'000);
  CHECK(ns < std::chrono::duration_cast<std::chrono::nanoseconds>(system_after).count() + 1'000'000'000);
}

TEST_CASE("otlp_json: an ExportTraceServiceRequest with the OTLP/JSON field names and encodings") {
  const brisk::Span span = sample_span();
  const auto j = nlohmann::json::parse(brisk::otlp_json({&span, 1}, {.service_name = "faq-api"}));
  const auto& resource_spans = j.at("resourceSpans");
  REQUIRE(resource_spans.size() == 1);
  const auto& resource_attrs = resource_spans[0].at("resource").at("attributes");
  REQUIRE(resource_attrs.size() == 1);
  CHECK(resource_attrs[0] == nlohmann::json::parse(R"({"key":"service.name","value":{"stringValue":"faq-api"}})"));
  const auto& scope_spans = resource_spans[0].at("scopeSpans");
  REQUIRE(scope_spans.size() == 1);
  CHECK(scope_spans[0].at("scope").at("name") == "brisk");
  const auto& spans = scope_spans[0].at("spans");
  REQUIRE(spans.size() == 1);
  const auto& s = spans[0];
  // Ids as hex, not base64 (the JSON Protobuf Encoding's deviation from proto3 JSON); fixed64 times as strings.
  CHECK(s.at("traceId") == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(s.at("spanId") == "eee19b7ec3c1b174");
  CHECK(s.at("parentSpanId") == "00f067aa0ba902b7");
  CHECK(s.at("name") == "brisk.request");
  CHECK(s.at("startTimeUnixNano") == "1544712660000000000");
  CHECK(s.at("endTimeUnixNano") == "1544712661000000000");
  CHECK(s.at("kind") == 1);  // enums as integers: SPAN_KIND_INTERNAL
  CHECK(s.at("status") == nlohmann::json::parse(R"({"code":2,"message":"DEADLINE_EXCEEDED: late"})"));
  // AnyValue: int64 as a decimal string (proto3 JSON), double and bool as JSON values.
  CHECK(s.at("attributes") == nlohmann::json::parse(R"([
      {"key":"brisk.cache","value":{"stringValue":"miss"}},
      {"key":"brisk.batch_size","value":{"intValue":"-3"}},
      {"key":"brisk.ratio","value":{"doubleValue":0.25}},
      {"key":"brisk.flag","value":{"boolValue":true}}])"));

  // A root span has no parentSpanId; an unset status is code 0.
  brisk::Span root = sample_span();
  root.parent_span_id = {};
  root.status = brisk::SpanStatusCode::kUnset;
  root.status_message.clear();
  root.attributes = {{"bad", std::string("\xff")}, {"nan", std::nan("")}};
  const auto r = nlohmann::json::parse(brisk::otlp_json({&root, 1}));
  const auto& rs = r["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
  CHECK_FALSE(rs.contains("parentSpanId"));
  CHECK(rs.at("status") == nlohmann::json::parse(R"({"code":0})"));
  CHECK(rs["attributes"][0]["value"]["stringValue"] == "\xef\xbf\xbd");  // invalid UTF-8 replaced, not thrown
  CHECK(rs["attributes"][1]["value"]["doubleValue"] == "NaN");
  CHECK(r["resourceSpans"][0]["resource"]["attributes"][0]["value"]["stringValue"] == "brisk");
}

TEST_CASE("OtlpJsonLinesSink: one JSON line per export, whole lines under concurrent exports") {
  const auto path = std::filesystem::temp_directory_path() / ("brisk_otlp_" + std::to_string(::getpid()) + ".jsonl");
  std::filesystem::remove(path);
  {
    auto sink = brisk::OtlpJsonLinesSink::open(path.string(), {.service_name = "lines"});
    REQUIRE(sink.ok());
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        std::vector<brisk::Span> spans(3, sample_span());
        spans[0].name = "thread-" + std::to_string(t);
        for (int i = 0; i < 50; ++i) (*sink)->export_spans(spans);
      });
    }
    for (auto& t : threads) t.join();
    (*sink)->export_spans({});  // nothing to write: no line
    CHECK((*sink)->status().ok());
  }
  std::ifstream in(path);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);  // throws (fails the test) on a torn line
    CHECK(j["resourceSpans"][0]["scopeSpans"][0]["spans"].size() == 3);
    CHECK(j["resourceSpans"][0]["resource"]["attributes"][0]["value"]["stringValue"] == "lines");
    ++lines;
  }
  CHECK(lines == 200);
  std::filesystem::remove(path);

  auto missing = brisk::OtlpJsonLinesSink::open("/nonexistent-dir/spans.jsonl");
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(std::string(missing.status().message()), Catch::Contains("/nonexistent-dir/spans.jsonl"));

  // Over a FILE* that cannot be written: the error is kept, nothing crashes.
  std::FILE* read_only = std::fopen("/dev/null", "r");
  REQUIRE(read_only != nullptr);
  {
    auto sink = brisk::OtlpJsonLinesSink::over(read_only);
    const brisk::Span span = sample_span();
    sink->export_spans({&span, 1});
    CHECK_FALSE(sink->status().ok());
  }
  std::fclose(read_only);
}
