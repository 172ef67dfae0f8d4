// batching: one HTTP request's inputs through Runtime::submit() (or submit_classify(), submit_rerank()), one submit per
// input, waiting for all of them; and brisk statuses as HTTP errors. While it waits it watches the client's connection:
// when the client has gone, every input still pending is cancelled (Runtime::cancel) and the wait ends once their
// callbacks have run, so that nothing is left behind.
//
//   std::vector<brisk::AnswerPath> paths;
//   auto rows = brisk_http::run_batch<std::vector<float>>(rt, req, texts.size(),
//       [&](size_t i, auto done) { return rt.submit(texts[i], opts, std::move(done)); }, metrics, &paths, &err);
//
// An error names the input that failed as field[i] ("inputs[2]", or "texts[2]" with field "texts").
//
// Thread safety: run_batch() blocks its calling (handler) thread; the callbacks run on brisk's threads.
#pragma once

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "brisk/core/status.h"
#include "brisk/runtime/runtime.h"
#include "connections.h"
#include "http_metrics.h"
#include "json_io.h"

namespace brisk_http {

// How often a waiting handler looks at its client's socket.
inline constexpr std::chrono::milliseconds kClientCheckInterval{20};

// A brisk status as an HTTP error; `field` names the input ("inputs[2]").
inline HttpError error_of_status(const brisk::Status& s, const std::string& field) {
  const std::string msg = field + ": " + std::string(s.message());
  switch (s.code()) {
    case absl::StatusCode::kResourceExhausted: return {429, msg, "overloaded"};
    case absl::StatusCode::kDeadlineExceeded: return {504, msg, "timeout"};
    case absl::StatusCode::kInvalidArgument: return {400, msg, "validation"};
    case absl::StatusCode::kFailedPrecondition: return {424, msg, "backend"};
    case absl::StatusCode::kUnavailable: return {503, msg, "unhealthy"};
    case absl::StatusCode::kCancelled: return {499, msg, "cancelled"};
    default: return {500, msg, "backend"};
  }
}

template <typename Result, typename SubmitOne>
std::optional<std::vector<Result>> run_batch(const brisk::Runtime& rt, const httplib::Request& req, size_t n,
                                             SubmitOne submit_one, HttpMetrics& metrics,
                                             std::vector<brisk::AnswerPath>* paths, HttpError* err,
                                             const std::string& field = "inputs") {
  struct Gather {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::optional<brisk::StatusOr<Result>>> results;
    std::vector<brisk::AnswerPath> paths;
    size_t pending = 0;
  };
  auto g = std::make_shared<Gather>();  // shared with the callbacks
  g->results.resize(n);
  g->paths.resize(n);
  std::vector<uint64_t> ids;
  ids.reserve(n);
  std::optional<HttpError> failed;
  for (size_t i = 0; i < n && !failed; ++i) {
    {
      std::lock_guard<std::mutex> lock(g->mu);
      ++g->pending;
    }
    brisk::StatusOr<uint64_t> id = submit_one(i, [g, i](uint64_t, brisk::StatusOr<Result> r, brisk::AnswerPath path) {
      std::lock_guard<std::mutex> lock(g->mu);
      g->results[i] = std::move(r);
      g->paths[i] = path;
      if (--g->pending == 0) g->cv.notify_all();
    });
    if (id.ok()) {
      ids.push_back(*id);
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(g->mu);
      --g->pending;
    }
    failed = error_of_status(id.status(), field + "[" + std::to_string(i) + "]");
  }
  const auto cancel_all = [&](brisk::metrics::Counter& counted) {
    for (uint64_t id : ids) {
      if (rt.cancel(id).ok()) counted.add();
    }
  };
  if (failed) cancel_all(metrics.abandoned_inputs);  // the request fails as a whole: its other inputs need no compute
  std::unique_lock<std::mutex> lock(g->mu);
  bool gone = false;
  while (g->pending > 0) {
    if (g->cv.wait_for(lock, kClientCheckInterval, [&] { return g->pending == 0; })) break;
    if (gone) continue;
    lock.unlock();
    if (client_gone(req)) {
      gone = true;
      metrics.client_disconnects.add();
      cancel_all(metrics.cancelled_inputs);
    }
    lock.lock();
  }
  if (failed) {
    *err = *failed;
    return std::nullopt;
  }
  std::vector<Result> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!g->results[i]->ok()) {
      *err = error_of_status(g->results[i]->status(), field + "[" + std::to_string(i) + "]");
      return std::nullopt;
    }
    out.push_back(std::move(**g->results[i]));
  }
  if (paths) *paths = g->paths;
  return out;
}

}  // namespace brisk_http
