// Request tracing through a Runtime (RuntimeOptions::span_sink, EmbedRequestOptions::trace_parent): the span tree of a
// traced submit, a batch shared by traced requests, a cache hit, a failing backend, a refused submit, single flight,
// submit_classify, and the cases that must record nothing. A host backend the test controls does the compute.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "brisk/runtime/runtime.h"
#include "brisk/runtime/tracing.h"

namespace {

using brisk::Runtime;
using brisk::Span;
using namespace std::chrono_literals;

constexpr const char* kParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
constexpr const char* kParentNotSampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";

// Rows of 4 floats (or one logit per label); run() waits while the gate is closed and fails when told to.
class TestBackend final : public brisk::Backend {
 public:
  explicit TestBackend(bool logits = false) {
    info_.name = "trace-test";
    if (logits) {
      info_.output = brisk::BackendOutput::kLogits;
      info_.labels = {"a", "b"};
      info_.output_dim = 2;
    } else {
      info_.output_dim = 4;
    }
  }
  const brisk::BackendInfo& info() const override { return info_; }
  brisk::Status run(const brisk::PackedSequences& batch, std::span<float> out) const override {
    std::unique_lock lock(mu_);
    ++runs_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
    if (fail_) return absl::InternalError("injected backend failure");
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(i % 3);
    return absl::OkStatus();
  }
  size_t estimate_activation_bytes(const brisk::BatchShape&) const override { return 0; }

  void close() const { set(false, fail_); }
  void open() const { set(true, fail_); }
  void fail() const { set(open_, true); }
  void wait_runs(int n) const {
    std::unique_lock lock(mu_);
    REQUIRE(cv_.wait_for(lock, 10s, [&] { return runs_ >= n; }));
  }

 private:
  void set(bool open, bool fail) const {
    std::lock_guard lock(mu_);
    open_ = open;
    fail_ = fail;
    cv_.notify_all();
  }
  brisk::BackendInfo info_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable int runs_ = 0;
  mutable bool open_ = true;
  mutable bool fail_ = false;
};

class CollectingSink final : public brisk::SpanSink {
 public:
  void export_spans(std::span<const Span> spans) override {
    std::lock_guard lock(mu_);
    exports_.emplace_back(spans.begin(), spans.end());
    cv_.notify_all();
  }
  // The exports so far, once there are at least n (waiting up to 10 s).
  std::vector<std::vector<Span>> wait_for(size_t n) {
    std::unique_lock lock(mu_);
    REQUIRE(cv_.wait_for(lock, 10s, [&] { return exports_.size() >= n; }));
    return exports_;
  }
  size_t count() {
    std::lock_guard lock(mu_);
    return exports_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::vector<Span>> exports_;
};

struct Fixture {
  explicit Fixture(bool cache = false, bool logits = false, bool with_sink = true) {
    brisk::RuntimeOptions o;
    o.model_dir = brisk::default_model_dir();  // the tokenizer
    if (!cache) o.cache.result_cache_bytes = 0;
    if (with_sink) o.span_sink = sink;
    auto owned = std::make_unique<TestBackend>(logits);
    backend = owned.get();
    auto created = Runtime::create(o, std::move(owned));
    INFO(created.status());
    REQUIRE(created.ok());
    rt = std::move(*created);
  }
  std::shared_ptr<CollectingSink> sink = std::make_shared<CollectingSink>();
  const TestBackend* backend = nullptr;
  std::unique_ptr<Runtime> rt;
};

using Outcome = brisk::StatusOr<std::vector<float>>;

struct Pending {
  std::shared_ptr<std::promise<Outcome>> promise = std::make_shared<std::promise<Outcome>>();
  std::future<Outcome> future = promise->get_future();
  brisk::EmbeddingCallback callback() {
    return [p = promise](uint64_t, Outcome e) { p->set_value(std::move(e)); };
  }
};

const Span& named(const std::vector<Span>& spans, std::string_view name) {
  for (const Span& s : spans) {
    if (s.name == name) return s;
  }
  FAIL("no span named " << name);
  return spans.front();
}

std::multiset<std::string> names(const std::vector<Span>& spans) {
  std::multiset<std::string> out;
  for (const Span& s : spans) out.insert(s.name);
  return out;
}

template <typename T>
T attribute(const Span& span, std::string_view key) {
  const brisk::SpanAttribute* a = span.attribute(key);
  INFO(span.name << " " << key);
  REQUIRE(a != nullptr);
  REQUIRE(std::holds_alternative<T>(a->value));
  return std::get<T>(a->value);
}

// The tree every traced request has: brisk.request under the traceparent's span, the others under it, one trace,
// distinct non-zero ids, start <= end, each child inside the request span.
void check_tree(const std::vector<Span>& spans, const brisk::TraceContext& out) {
  const brisk::TraceContext parent = *brisk::parse_traceparent(kParent);
  const Span& request = named(spans, "brisk.request");
  CHECK(request.parent_span_id == parent.span_id);
  CHECK(request.span_id == out.span_id);
  CHECK(out.trace_id == parent.trace_id);
  CHECK(out.sampled());
  std::set<std::string> ids;
  for (const Span& s : spans) {
    INFO(s.name);
    CHECK(s.trace_id == parent.trace_id);
    CHECK(s.start_unix_nanos <= s.end_unix_nanos);
    CHECK(s.span_id != brisk::SpanId{});
    ids.insert(brisk::to_hex(s.span_id));
    if (&s == &request) continue;
    CHECK(s.parent_span_id == request.span_id);
    CHECK(s.start_unix_nanos >= request.start_unix_nanos);
    CHECK(s.end_unix_nanos <= request.end_unix_nanos);
  }
  CHECK(ids.size() == spans.size());
}

}  // namespace

TEST_CASE("a traced submit records request, tokenize, cache_lookup, queue, batch_compute and callback") {
  Fixture f;
  brisk::TraceContext out;
  Pending p;
  auto id =
      f.rt->submit("how do I reset my card PIN?", {.trace_parent = kParent, .trace_context_out = &out}, p.callback());
  REQUIRE(id.ok());
  REQUIRE(p.future.get().ok());
  const auto exports = f.sink->wait_for(1);
  REQUIRE(exports.size() == 1);
  const std::vector<Span>& spans = exports[0];
  CHECK(names(spans) == std::multiset<std::string>{"brisk.request", "brisk.tokenize", "brisk.cache_lookup",
                                                   "brisk.queue", "brisk.batch_compute", "brisk.callback"});
  check_tree(spans, out);
  const Span& request = named(spans, "brisk.request");
  const Span& tokenize = named(spans, "brisk.tokenize");
  const Span& lookup = named(spans, "brisk.cache_lookup");
  const Span& queue = named(spans, "brisk.queue");
  const Span& compute = named(spans, "brisk.batch_compute");
  const Span& callback = named(spans, "brisk.callback");
  // In order: tokenize, lookup, queue up to the batch's start, compute from there, then the callback.
  CHECK(tokenize.end_unix_nanos <= lookup.start_unix_nanos);
  CHECK(lookup.end_unix_nanos <= queue.start_unix_nanos);
  CHECK(queue.end_unix_nanos == compute.start_unix_nanos);
  CHECK(compute.end_unix_nanos <= callback.start_unix_nanos);
  CHECK(attribute<std::string>(lookup, "brisk.cache") == "miss");
  const int64_t tokens = attribute<int64_t>(tokenize, "brisk.tokens");
  CHECK(tokens > 2);  // [CLS] text [SEP]
  CHECK(attribute<int64_t>(compute, "brisk.batch_size") == 1);
  CHECK(attribute<int64_t>(compute, "brisk.batch_tokens") == tokens);
  CHECK(attribute<int64_t>(compute, "brisk.tokens") == tokens);
  CHECK(attribute<std::string>(request, "brisk.request_id") == std::to_string(*id));
  CHECK(attribute<std::string>(request, "brisk.task") == "embed");
  CHECK(attribute<int64_t>(request, "brisk.priority") == 0);
  for (const Span& s : spans) CHECK(s.status == brisk::SpanStatusCode::kUnset);
  // What a service returns downstream names brisk's request span in the caller's trace.
  CHECK(brisk::format_traceparent(out) ==
        "00-4bf92f3577b34da6a3ce929d0e0e4736-" + brisk::to_hex(request.span_id) + "-01");
}

TEST_CASE("requests sharing a batch get batch_compute spans with the batch's size and timing") {
  Fixture f;
  f.backend->close();
  Pending blocker;
  REQUIRE(f.rt->submit("the first text holds the executor", {}, blocker.callback()).ok());
  f.backend->wait_runs(1);
  const std::vector<std::string> texts = {"lost card", "opening hours", "send money abroad"};
  std::vector<Pending> pending(texts.size());
  std::vector<brisk::TraceContext> outs(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    REQUIRE(
        f.rt->submit(texts[i], {.trace_parent = kParent, .trace_context_out = &outs[i]}, pending[i].callback()).ok());
  }
  f.backend->open();
  for (Pending& p : pending) REQUIRE(p.future.get().ok());
  const auto exports = f.sink->wait_for(texts.size());
  REQUIRE(exports.size() == texts.size());
  const Span& first = named(exports[0], "brisk.batch_compute");
  for (const auto& spans : exports) {
    const Span& compute = named(spans, "brisk.batch_compute");
    CHECK(attribute<int64_t>(compute, "brisk.batch_size") == 3);
    CHECK(attribute<int64_t>(compute, "brisk.batch_sequence") == attribute<int64_t>(first, "brisk.batch_sequence"));
    CHECK(compute.start_unix_nanos == first.start_unix_nanos);
    CHECK(compute.end_unix_nanos == first.end_unix_nanos);
    CHECK(named(spans, "brisk.queue").end_unix_nanos == compute.start_unix_nanos);
  }
  std::set<std::string> request_ids;
  for (size_t i = 0; i < exports.size(); ++i)
    request_ids.insert(brisk::to_hex(named(exports[i], "brisk.request").span_id));
  CHECK(request_ids.size() == 3);
  REQUIRE(blocker.future.get().ok());
}

TEST_CASE("a traced cache hit records tokenize, a cache_lookup hit and the callback") {
  Fixture f(/*cache=*/true);
  const std::string_view text = "what are your opening hours";
  REQUIRE(f.rt->embed({&text, 1}).ok());  // now cached
  brisk::TraceContext out;
  Pending p;
  REQUIRE(f.rt->submit(text, {.trace_parent = kParent, .trace_context_out = &out}, p.callback()).ok());
  REQUIRE(p.future.get().ok());
  REQUIRE(f.sink->count() == 1);  // a hit completes, and exports, before submit() returns
  const auto spans = f.sink->wait_for(1)[0];
  CHECK(names(spans) ==
        std::multiset<std::string>{"brisk.request", "brisk.tokenize", "brisk.cache_lookup", "brisk.callback"});
  check_tree(spans, out);
  CHECK(attribute<std::string>(named(spans, "brisk.cache_lookup"), "brisk.cache") == "hit");
}

TEST_CASE("a failing batch sets the error status on batch_compute and the request span") {
  Fixture f;
  f.backend->fail();
  brisk::TraceContext out;
  Pending p;
  REQUIRE(f.rt->submit("this batch fails", {.trace_parent = kParent, .trace_context_out = &out}, p.callback()).ok());
  CHECK(p.future.get().status().code() == absl::StatusCode::kInternal);
  const auto spans = f.sink->wait_for(1)[0];
  check_tree(spans, out);
  for (const char* name : {"brisk.request", "brisk.batch_compute"}) {
    const Span& s = named(spans, name);
    INFO(name);
    CHECK(s.status == brisk::SpanStatusCode::kError);
    CHECK_THAT(s.status_message, Catch::Contains("INTERNAL") && Catch::Contains("injected backend failure"));
  }
  CHECK(named(spans, "brisk.tokenize").status == brisk::SpanStatusCode::kUnset);
  CHECK(named(spans, "brisk.callback").status == brisk::SpanStatusCode::kUnset);
}

TEST_CASE("a refused submit exports its request span with the error, a malformed traceparent is refused") {
  Fixture f;
  Pending p;
  auto refused = f.rt->submit("priority 7 does not exist", {.priority = 7, .trace_parent = kParent}, p.callback());
  REQUIRE_FALSE(refused.ok());
  const auto spans = f.sink->wait_for(1)[0];
  CHECK(names(spans) == std::multiset<std::string>{"brisk.request", "brisk.tokenize"});
  const Span& request = named(spans, "brisk.request");
  CHECK(request.status == brisk::SpanStatusCode::kError);
  CHECK_THAT(request.status_message, Catch::Contains("priority 7"));

  bool called = false;
  auto malformed = f.rt->submit("text", {.trace_parent = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"},
                                [&](uint64_t, Outcome) { called = true; });
  REQUIRE_FALSE(malformed.ok());
  CHECK(malformed.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(malformed.status().message()),
             Catch::StartsWith("Runtime::submit: traceparent is '00-4BF92F") && Catch::Contains("expected 00-<32 hex"));
  CHECK_FALSE(called);
  CHECK(f.sink->count() == 1);
}

TEST_CASE("not sampled, no trace_parent or no sink: nothing is recorded") {
  Fixture f;
  const brisk::TraceContext parent = *brisk::parse_traceparent(kParentNotSampled);
  brisk::TraceContext out = brisk::new_trace();
  Pending unsampled, untraced;
  REQUIRE(
      f.rt->submit("not sampled", {.trace_parent = kParentNotSampled, .trace_context_out = &out}, unsampled.callback())
          .ok());
  REQUIRE(f.rt->submit("no traceparent", {}, untraced.callback()).ok());
  REQUIRE(unsampled.future.get().ok());
  REQUIRE(untraced.future.get().ok());
  // Unsampled: the caller's context passes through unchanged (no span of brisk's to name).
  CHECK(out.trace_id == parent.trace_id);
  CHECK(out.span_id == parent.span_id);
  CHECK_FALSE(out.sampled());
  // A sampled request behind them on the one executor: its export is the first and only one.
  Pending sampled;
  REQUIRE(f.rt->submit("sampled", {.trace_parent = kParent}, sampled.callback()).ok());
  REQUIRE(sampled.future.get().ok());
  const auto exports = f.sink->wait_for(1);
  REQUIRE(exports.size() == 1);
  CHECK(named(exports[0], "brisk.request").status == brisk::SpanStatusCode::kUnset);

  Fixture no_sink(false, false, /*with_sink=*/false);
  brisk::TraceContext passed;
  Pending p;
  REQUIRE(no_sink.rt->submit("no sink", {.trace_parent = kParent, .trace_context_out = &passed}, p.callback()).ok());
  REQUIRE(p.future.get().ok());
  CHECK(passed.span_id == brisk::parse_traceparent(kParent)->span_id);
  CHECK(no_sink.rt->submit("x", {.trace_parent = "00-zz"}, Pending().callback()).status().code() ==
        absl::StatusCode::kInvalidArgument);
  no_sink.rt.reset();
  CHECK(no_sink.sink->count() == 0);
}

TEST_CASE("a single-flight follower is traced as joined, the leader carries the batch") {
  Fixture f;
  f.backend->close();
  Pending leader, follower;
  brisk::TraceContext leader_out, follower_out;
  REQUIRE(
      f.rt->submit("same text", {.trace_parent = kParent, .trace_context_out = &leader_out}, leader.callback()).ok());
  f.backend->wait_runs(1);
  auto joined =
      f.rt->submit("same text", {.trace_parent = kParent, .trace_context_out = &follower_out}, follower.callback());
  REQUIRE(joined.ok());
  f.backend->open();
  REQUIRE(leader.future.get().ok());
  REQUIRE(follower.future.get().ok());
  const auto exports = f.sink->wait_for(2);
  for (const auto& spans : exports) {
    const Span& request = named(spans, "brisk.request");
    if (request.span_id == leader_out.span_id) {
      check_tree(spans, leader_out);
      CHECK(request.attribute("brisk.single_flight") == nullptr);
      CHECK(names(spans).count("brisk.batch_compute") == 1);
    } else {
      check_tree(spans, follower_out);
      CHECK(attribute<std::string>(request, "brisk.single_flight") == "joined");
      CHECK(attribute<std::string>(request, "brisk.request_id") == std::to_string(*joined));
      CHECK(names(spans) ==
            std::multiset<std::string>{"brisk.request", "brisk.tokenize", "brisk.cache_lookup", "brisk.callback"});
    }
  }
}

TEST_CASE("submit_classify is traced as a classify task") {
  Fixture f(false, /*logits=*/true);
  brisk::TraceContext out;
  std::promise<brisk::StatusOr<std::vector<brisk::LabelScore>>> done;
  REQUIRE(f.rt->submit_classify("I lost my card", {{.trace_parent = kParent, .trace_context_out = &out}, 1},
                                [&](uint64_t, brisk::StatusOr<std::vector<brisk::LabelScore>> labels) {
                                  done.set_value(std::move(labels));
                                })
              .ok());
  REQUIRE(done.get_future().get().ok());
  const auto spans = f.sink->wait_for(1)[0];
  check_tree(spans, out);
  CHECK(names(spans).size() == 6);
  CHECK(attribute<std::string>(named(spans, "brisk.request"), "brisk.task") == "classify");
}

TEST_CASE("OtlpJsonLinesSink as the runtime's sink: one OTLP/JSON line per traced request") {
  const auto path =
      std::filesystem::temp_directory_path() / ("brisk_runtime_otlp_" + std::to_string(::getpid()) + ".jsonl");
  std::filesystem::remove(path);
  brisk::TraceContext out;
  {
    brisk::RuntimeOptions o;
    o.model_dir = brisk::default_model_dir();
    auto sink = brisk::OtlpJsonLinesSink::open(path.string(), {.service_name = "runtime-test"});
    REQUIRE(sink.ok());
    o.span_sink = std::move(*sink);
    auto rt = Runtime::create(o, std::make_unique<TestBackend>());
    REQUIRE(rt.ok());
    Pending p;
    REQUIRE((*rt)->submit("hello", {.trace_parent = kParent, .trace_context_out = &out}, p.callback()).ok());
    REQUIRE(p.future.get().ok());
  }  // the runtime's destructor joins the executor: the export has happened
  std::ifstream in(path);
  std::string line;
  std::vector<nlohmann::json> lines;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  std::filesystem::remove(path);
  REQUIRE(lines.size() == 1);
  const auto& spans = lines[0]["resourceSpans"][0]["scopeSpans"][0]["spans"];
  REQUIRE(spans.size() == 6);
  CHECK(spans[0]["name"] == "brisk.request");
  CHECK(spans[0]["spanId"] == brisk::to_hex(out.span_id));
  CHECK(spans[0]["parentSpanId"] == "00f067aa0ba902b7");
  for (const auto& s : spans) {
    CHECK(s["traceId"] == "4bf92f3577b34da6a3ce929d0e0e4736");
    CHECK(std::stoll(s["startTimeUnixNano"].get<std::string>()) <= std::stoll(s["endTimeUnixNano"].get<std::string>()));
    if (s["name"] != "brisk.request") CHECK(s["parentSpanId"] == spans[0]["spanId"]);
  }
}
