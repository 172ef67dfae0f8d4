// brisk_http_load's open- and closed-loop drivers over HTTP and in-process (http_load.h).
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "http/http_load.h"

namespace brisk::httpload {
namespace {

int64_t since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
}

std::unique_ptr<httplib::Client> connect(const HttpTarget& t, std::chrono::milliseconds read_timeout) {
  auto client = std::make_unique<httplib::Client>(t.host, t.port);
  client->set_keep_alive(true);
  client->set_tcp_nodelay(true);  // a request goes out in two writes (head, body): no Nagle delay between them
  client->set_connection_timeout(std::chrono::seconds(2));
  client->set_read_timeout(read_timeout);
  client->set_write_timeout(std::chrono::seconds(5));
  client->Get("/health");  // opens the connection now, outside the measured cell
  return client;
}

httplib::Headers headers_of(const HttpTarget& t) {
  httplib::Headers h;
  if (t.timeout_ms > 0) h.emplace("X-Request-Timeout-Ms", std::to_string(t.timeout_ms));
  return h;
}

// Sends one request; its status, or kTransportError (no connection, or the write failed), or 0 (sent but never
// answered within the read timeout: lost). A 200 must carry an embedding array.
int post_embed(httplib::Client& client, const httplib::Headers& headers, const std::string& body) {
  httplib::Result r = client.Post("/embed", headers, body, "application/json");
  if (!r) return r.error() == httplib::Error::Read ? 0 : kTransportError;
  if (r->status == 200 && r->body.rfind("[[", 0) != 0) return kTransportError;
  return r->status;
}

// Submits one text; `done` gets the status the service would answer with, exactly once.
template <typename Done>
void submit_one(const InProcessTarget& t, const std::string& text, Done done) {
  EmbedRequestOptions opts;
  if (t.timeout_ms > 0) opts.timeout = std::chrono::milliseconds(t.timeout_ms);
  auto shared = std::make_shared<Done>(std::move(done));
  EmbeddingCallback cb = [shared](uint64_t, StatusOr<std::vector<float>> e) {
    (*shared)(e.ok() ? (e->empty() ? kTransportError : 200) : http_status_of(e.status()));
  };
  StatusOr<uint64_t> id = t.runtime->submit(text, opts, std::move(cb));
  if (!id.ok()) (*shared)(http_status_of(id.status()));
}

int64_t percentile_ns(std::vector<int64_t>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(q / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

}  // namespace

int http_status_of(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kOk: return 200;
    case absl::StatusCode::kResourceExhausted: return 429;
    case absl::StatusCode::kDeadlineExceeded: return 504;
    case absl::StatusCode::kInvalidArgument: return 400;
    case absl::StatusCode::kFailedPrecondition: return 424;
    case absl::StatusCode::kUnavailable: return 503;
    case absl::StatusCode::kCancelled: return 499;
    default: return 500;
  }
}

std::vector<std::string> embed_bodies(const std::vector<std::string>& texts) {
  std::vector<std::string> bodies;
  bodies.reserve(texts.size());
  for (const std::string& t : texts) bodies.push_back(nlohmann::json{{"inputs", t}}.dump());
  return bodies;
}

std::vector<Record> run_open_loop(const Target& target, const std::vector<std::string>& texts,
                                  const std::vector<load::Arrival>& schedule, std::chrono::milliseconds drain) {
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<Record> records;
    size_t answered = 0;
    std::deque<uint32_t> queue;  // HTTP: arrivals waiting for a worker
    bool closing = false;
  };
  auto st = std::make_shared<State>();  // shared with in-process callbacks that might outlive a drain timeout
  st->records.resize(schedule.size());
  for (size_t i = 0; i < schedule.size(); ++i) {
    st->records[i].scheduled_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(schedule[i].at).count();
  }
  std::vector<std::string> bodies;
  std::vector<std::thread> workers;
  Clock::time_point start;
  if (target.http) {
    bodies = embed_bodies(texts);
    std::vector<std::unique_ptr<httplib::Client>> clients;
    for (size_t w = 0; w < target.http->pool; ++w) clients.push_back(connect(*target.http, drain));
    for (size_t w = 0; w < target.http->pool; ++w) {
      workers.emplace_back([&, st, client = std::move(clients[w])] {
        const httplib::Headers headers = headers_of(*target.http);
        std::unique_lock<std::mutex> lock(st->mu);
        while (true) {
          st->cv.wait(lock, [&] { return !st->queue.empty() || st->closing; });
          if (st->queue.empty()) return;
          const uint32_t i = st->queue.front();
          st->queue.pop_front();
          lock.unlock();
          const int64_t sent = since(start);
          const int status = post_embed(*client, headers, bodies[schedule[i].item]);
          const int64_t done = since(start);
          lock.lock();
          st->records[i].sent_ns = sent;
          st->records[i].done_ns = done;
          st->records[i].status = status;
          ++st->answered;
        }
      });
    }
  }
  start = Clock::now() + std::chrono::milliseconds(50);
  for (size_t i = 0; i < schedule.size(); ++i) {
    std::this_thread::sleep_until(start + schedule[i].at);
    if (target.http) {
      std::lock_guard<std::mutex> lock(st->mu);
      st->queue.push_back(static_cast<uint32_t>(i));
      st->cv.notify_one();  // one worker: waking the whole pool per arrival would cost the shared cores dearly
      continue;
    }
    const int64_t sent = since(start);
    submit_one(*target.in_process, texts[schedule[i].item], [st, i, start, sent](int status) {
      const int64_t done = since(start);
      std::lock_guard<std::mutex> lock(st->mu);
      st->records[i].sent_ns = sent;
      st->records[i].done_ns = done;
      st->records[i].status = status;
      if (++st->answered == st->records.size()) st->cv.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(st->mu);
  if (target.http) {
    st->closing = true;  // workers finish the queue; each request is bounded by the client's read timeout
    st->cv.notify_all();
    lock.unlock();
    for (std::thread& w : workers) w.join();
    lock.lock();
  } else {
    st->cv.wait_until(lock, Clock::now() + drain, [&] { return st->answered == st->records.size(); });
  }
  return st->records;  // a record still at status 0 was never answered: lost
}

std::vector<Record> run_closed_loop(const Target& target, const std::vector<std::string>& texts, size_t workers,
                                    double seconds) {
  std::vector<std::vector<Record>> per_worker(workers);
  std::atomic<size_t> next{0};
  const Clock::time_point start = Clock::now();
  const Clock::time_point end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      std::unique_ptr<httplib::Client> client;
      httplib::Headers headers;
      if (target.http) {
        client = connect(*target.http, std::chrono::seconds(30));
        headers = headers_of(*target.http);
      }
      while (Clock::now() < end) {
        const std::string& text = texts[next.fetch_add(1) % texts.size()];
        Record r;
        r.scheduled_ns = r.sent_ns = since(start);
        if (target.http) {
          r.status = post_embed(*client, headers, nlohmann::json{{"inputs", text}}.dump());
        } else {
          std::promise<int> answered;
          std::future<int> status = answered.get_future();
          submit_one(*target.in_process, text, [&answered](int s) { answered.set_value(s); });
          r.status = status.get();
        }
        r.done_ns = since(start);
        per_worker[w].push_back(r);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<Record> all;
  for (auto& v : per_worker) all.insert(all.end(), v.begin(), v.end());
  return all;
}

CellSummary summarize(const std::vector<Record>& records, int slo_ms) {
  CellSummary s;
  s.offered = records.size();
  std::vector<int64_t> ok, rejected, late;
  int64_t first = INT64_MAX, last = 0;
  for (const Record& r : records) {
    first = std::min(first, r.scheduled_ns);
    if (r.status == 0) {
      ++s.lost;
      continue;
    }
    last = std::max(last, r.done_ns);
    late.push_back(r.sent_ns - r.scheduled_ns);
    const int64_t latency = r.done_ns - r.scheduled_ns;
    if (r.status == 200) {
      ++s.ok;
      if (latency <= int64_t{slo_ms} * 1000000) ++s.ok_within_slo;
      ok.push_back(latency);
    } else if (r.status == 429) {
      ++s.rejected_429;
      rejected.push_back(latency);
    } else {
      ++s.errors;
      if (std::find(s.error_statuses.begin(), s.error_statuses.end(), r.status) == s.error_statuses.end()) {
        s.error_statuses.push_back(r.status);
      }
    }
  }
  s.seconds = last > first ? (last - first) / 1e9 : 0;
  s.throughput = s.seconds > 0 ? s.ok / s.seconds : 0;
  s.p50_ms = percentile_ns(ok, 50) / 1e6;
  s.p99_ms = percentile_ns(ok, 99) / 1e6;
  s.max_ms = ok.empty() ? 0 : ok.back() / 1e6;
  s.rejected_p99_ms = percentile_ns(rejected, 99) / 1e6;
  s.send_late_p99_ms = percentile_ns(late, 99) / 1e6;
  return s;
}

bool write_records(const std::string& path, const std::vector<Record>& records) {
  std::ofstream out(path);
  out << "scheduled_ns,sent_ns,done_ns,status\n";
  for (const Record& r : records)
    out << r.scheduled_ns << ',' << r.sent_ns << ',' << r.done_ns << ',' << r.status << '\n';
  return out.good();
}

}  // namespace brisk::httpload
