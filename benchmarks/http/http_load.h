// brisk_http_load's drivers: the same request schedule sent either over HTTP to examples/http_server (POST /embed,
// httplib::Client, one keep-alive connection per worker thread) or in-process to Runtime::submit(), open loop (a
// seeded Poisson schedule; latency counted from each request's scheduled arrival, so a slow server cannot slow the
// generator down and hide its own queueing: no coordinated omission) or closed loop (a fixed number of workers, each
// sending its next request when the previous one is answered). Every request gets a Record; summarize() turns a
// cell's records into throughput, latency percentiles of the accepted (200) ones, 429s and their latency, errors and
// lost requests (never answered).
//
//   HttpTarget http{.host = "127.0.0.1", .port = 8080, .timeout_ms = 100, .pool = 64};
//   std::vector<Record> r = run_open_loop(Target{&http, nullptr}, texts, schedule);
//   CellSummary s = summarize(r, /*slo_ms=*/100);
//
// Thread safety: each run_* call owns its threads and records; a Runtime may be shared (its submit() is thread-safe).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "brisk/runtime/runtime.h"
#include "load/load.h"

namespace brisk::httpload {

using Clock = std::chrono::steady_clock;

// One request. Times are nanoseconds from the cell's start. status: the HTTP status (in-process: the status the
// HTTP service maps brisk's status to, 200 for an embedding); kTransportError: the connection failed; 0: never
// answered (lost).
inline constexpr int kTransportError = -1;
struct Record {
  int64_t scheduled_ns = 0, sent_ns = 0, done_ns = 0;
  int status = 0;
};

struct HttpTarget {
  std::string host = "127.0.0.1";
  int port = 0;
  int timeout_ms = 0;  // X-Request-Timeout-Ms; 0: none (the server's --timeout-ms)
  size_t pool = 64;    // worker threads, each with its own keep-alive connection
};
struct InProcessTarget {
  const Runtime* runtime = nullptr;
  int timeout_ms = 0;  // EmbedRequestOptions::timeout, as the service sets it from the header
};
// Exactly one of the two is set.
struct Target {
  const HttpTarget* http = nullptr;
  const InProcessTarget* in_process = nullptr;
  const char* name() const { return http ? "http" : "in-process"; }
};

// JSON bodies {"inputs": "<text>"} for POST /embed.
std::vector<std::string> embed_bodies(const std::vector<std::string>& texts);

// Open loop: request i is text schedule[i].item sent at schedule[i].at after the start. Over HTTP a dispatcher hands
// each arrival to the next free worker of the pool (an arrival waits in the dispatcher's queue when none is free,
// which the latency includes: Record.sent_ns - scheduled_ns shows it); in-process the dispatcher calls submit()
// itself. Returns once every request is answered or `drain` after the last arrival (then the rest are lost).
std::vector<Record> run_open_loop(const Target& target, const std::vector<std::string>& texts,
                                  const std::vector<load::Arrival>& schedule,
                                  std::chrono::milliseconds drain = std::chrono::milliseconds(20000));

// Closed loop: `workers` threads, each sending texts round-robin, one request at a time, for `seconds`.
std::vector<Record> run_closed_loop(const Target& target, const std::vector<std::string>& texts, size_t workers,
                                    double seconds);

struct CellSummary {
  size_t offered = 0, ok = 0, ok_within_slo = 0, rejected_429 = 0, errors = 0, lost = 0;
  double seconds = 0;                         // first scheduled arrival (or start) to the last answer
  double throughput = 0;                      // 200s per second over `seconds`
  double p50_ms = 0, p99_ms = 0, max_ms = 0;  // 200s, from the scheduled arrival (open) or the send (closed)
  double rejected_p99_ms = 0;                 // 429s, the same
  double send_late_p99_ms = 0;                // send - scheduled: the generator's own fidelity
  std::vector<int> error_statuses;            // distinct statuses counted as errors
};
// slo_ms: the latency objective ok_within_slo counts against.
CellSummary summarize(const std::vector<Record>& records, int slo_ms);

// Writes one CSV line per request (scheduled_ns,sent_ns,done_ns,status); false when the file cannot be written.
bool write_records(const std::string& path, const std::vector<Record>& records);

// The status examples/http_server answers a brisk status with (its batching.h error_of_status).
int http_status_of(const absl::Status& s);

}  // namespace brisk::httpload
