// http_server: brisk behind HTTP, compatible with Hugging Face TEI clients (/embed, /predict, /rerank, /info, /health,
// /metrics) and OpenAI's embeddings API (/v1/embeddings). A thin layer over brisk::Runtime (service.h).
//
//   http_server --model ~/.cache/brisk/models/all-MiniLM-L6-v2 --port 8080
//   BRISK_HTTP_API_KEY=secret http_server --port 0 --timeout-ms 2000 --max-queue 512   # port 0: a free one, printed
//   curl -s localhost:8080/embed -H 'Content-Type: application/json' -d '{"inputs": "lost my card"}'
//
//   http_server --fallback minilm-int8.brisk --stale-ttl-ms 3600000   # degradation: X-Brisk-Answer-Path names the path
//   http_server --semantic-verifier verifier.safetensors   # POST /v1/answers and /v1/answers/lookup (service.h)
// It prints "listening on http://HOST:PORT" once ready. SIGTERM or SIGINT: it stops accepting connections, lets the
// requests in flight finish, and exits 0.
#include <httplib.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <thread>

#include "brisk/runtime/answer_cache.h"
#include "brisk/runtime/runtime.h"
#include "brisk/runtime/tracing.h"
#include "brisk/core/internal/bounded_input.h"
#include "service.h"
#include "transport.h"

namespace {

struct Flags {
  std::string model_dir = brisk::default_model_dir();
  std::string head;  // a `brisk fit-intents` classification head
  std::string host = "127.0.0.1";
  int port = 8080;
  int threads = 0;
  int http_threads = 16;
  std::string api_key_file;
  int timeout_ms = 30000;
  size_t max_body_bytes = size_t{2} << 20;
  size_t max_batch_inputs = 256;
  size_t max_batch_size = 32;
  size_t max_queue = 4096;
  bool no_cache = false;
  bool reject_late = true;  // BatchPolicy::reject_predicted_late
  bool fail_late = true;    // BatchPolicy::fail_late_results
  int max_seq_len = 0;
  int read_timeout_s = 5;
  int write_timeout_s = 5;
  int keep_alive_s = 5;
  std::string fallback;  // RuntimeOptions::fallback: a lighter model for overload
  int fallback_threads = 0;
  int stale_ttl_ms = 0;           // RuntimeOptions::cache.stale_ttl, for requests with Cache-Control: stale-if-error
  std::string policy;             // RuntimeOptions::policy_path: a `brisk tune` policy file
  std::string otlp_traces;        // OTLP/JSON lines of the spans of requests that carry a sampled traceparent
  bool answer_cache = false;      // /v1/answers: a semantic answer cache (cosine and guards)
  std::string semantic_verifier;  // /v1/answers with this `brisk fit-verifier` file deciding (implies answer_cache)
  size_t answer_cache_entries = 10000;  // per tenant
  size_t answer_cache_tenants = 1024;
};

// The API key from --api-key-file (its first line) or BRISK_HTTP_API_KEY; empty for none; nullopt after an error.
std::optional<std::string> api_key(const std::string& file) {
  const char* env = std::getenv("BRISK_HTTP_API_KEY");
  if (file.empty()) return std::string(env != nullptr ? env : "");
  if (env != nullptr) {
    std::fprintf(stderr, "http_server: --api-key-file and BRISK_HTTP_API_KEY are both set; expected one of them\n");
    return std::nullopt;
  }
  auto text = brisk::read_text_file_bounded(file, 4096, "API key file");
  if (!text.ok()) {
    std::fprintf(stderr, "http_server: --api-key-file: %s\n", std::string(text.status().message()).c_str());
    return std::nullopt;
  }
  std::string key = text->substr(0, text->find_first_of("\r\n"));
  if (key.empty()) {
    std::fprintf(stderr, "http_server: --api-key-file %s has an empty first line; expected the key\n", file.c_str());
    return std::nullopt;
  }
  return key;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"brisk HTTP server: TEI- and OpenAI-compatible embeddings, classification and reranking"};
  app.add_option("--model", f.model_dir, "model directory or `brisk quantize` file");
  app.add_option("--head", f.head, "classification head from `brisk fit-intents` (classify with --model)");
  app.add_option("--host", f.host, "address to listen on")->capture_default_str();
  app.add_option("--port", f.port, "port; 0 picks a free one (printed)")->capture_default_str();
  app.add_option("--threads", f.threads, "compute threads; 0: the CPUs this process may use");
  app.add_option("--http-threads", f.http_threads,
                 "HTTP worker threads: requests read and served at once (idle keep-alive connections hold none)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--api-key-file", f.api_key_file,
                 "require Authorization: Bearer KEY (all but /health), KEY being this file's first line; or set "
                 "BRISK_HTTP_API_KEY (a key is never taken from the command line, which every local user can read)");
  app.add_option("--timeout-ms", f.timeout_ms, "deadline of a request without the X-Request-Timeout-Ms header")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600000));
  app.add_option("--max-body-bytes", f.max_body_bytes, "larger bodies get 413")->capture_default_str();
  app.add_option("--max-batch-inputs", f.max_batch_inputs, "more inputs in one request get 413")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--max-batch-size", f.max_batch_size, "texts per forward pass")->capture_default_str();
  app.add_option("--max-queue", f.max_queue, "queued texts; past it requests get 429 (a request of more texts: 413)")
      ->capture_default_str();
  app.add_flag("--no-cache", f.no_cache, "no result or token cache");
  app.add_flag("--reject-late,!--no-reject-late", f.reject_late,
               "refuse (429) a request whose deadline the queue ahead cannot meet, instead of letting it expire (504)")
      ->capture_default_str();
  app.add_flag("--fail-late,!--no-fail-late", f.fail_late,
               "answer 504 for a request whose batch finished past its deadline, instead of a late 200")
      ->capture_default_str();
  app.add_option("--max-seq-len", f.max_seq_len, "tokens per text; 0: the model's");
  app.add_option("--fallback", f.fallback,
                 "a lighter model (brisk quantize's file, a pruned directory) answering what the queue refuses for "
                 "overload");
  app.add_option("--fallback-threads", f.fallback_threads, "the fallback's compute threads; 0: --threads");
  app.add_option("--policy", f.policy, "a serving policy file written by `brisk tune` (batching and threads)");
  app.add_option("--otlp-traces", f.otlp_traces,
                 "append the spans of requests with a sampled traceparent header to this file (OTLP/JSON lines)");
  app.add_flag("--answer-cache", f.answer_cache,
               "serve POST /v1/answers and /v1/answers/lookup: answers stored by question, served to a similar one");
  app.add_option("--semantic-verifier", f.semantic_verifier,
                 "a verifier file from brisk fit-verifier for this model: the answer cache serves a stored answer "
                 "only when it accepts the pair (implies --answer-cache)");
  app.add_option("--answer-cache-entries", f.answer_cache_entries, "answers kept per tenant (least recently used go)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000000));
  app.add_option("--answer-cache-tenants", f.answer_cache_tenants,
                 "tenants the answer cache holds while the server runs; an answer for one more is refused with 507")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20))
      ->capture_default_str();
  app.add_option("--stale-ttl-ms", f.stale_ttl_ms,
                 "keep results this long past their TTL, for requests sending Cache-Control: stale-if-error")
      ->capture_default_str();
  app.add_option("--read-timeout-s", f.read_timeout_s, "a request head must arrive within it (body: twice it)")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  app.add_option("--write-timeout-s", f.write_timeout_s, "per send() of a response")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  app.add_option("--keep-alive-s", f.keep_alive_s, "idle keep-alive connections are closed after it")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  CLI11_PARSE(app, argc, argv);

  // Before any thread starts, so that every thread inherits the mask: signals are taken by sigwait() below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGUSR1);  // from main itself, to end the signal thread
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client gone mid-response: send() fails instead of killing the process

  brisk::RuntimeOptions opts;
  opts.model_dir = f.model_dir;
  opts.classification_head = f.head;
  opts.num_threads = f.threads;
  // TEI's normalize is per request, so the service normalizes embeddings itself. A head (brisk fit-intents) was
  // fitted on the model's own embeddings, normalised as the model says: with one, the model's rule stays, so that
  // the head sees what it was fitted on (and its model id matches).
  if (f.head.empty()) opts.normalize = false;
  opts.batching.max_batch_size = f.max_batch_size;
  opts.batching.max_queue_size = f.max_queue;
  opts.batching.reject_predicted_late = f.reject_late;
  opts.batching.fail_late_results = f.fail_late;
  opts.max_seq_len = f.max_seq_len;
  if (f.no_cache) {
    opts.cache.result_cache_bytes = 0;
    opts.cache.token_cache_entries = 0;
  }
  if (!f.fallback.empty())
    opts.fallback =
        brisk::FallbackOptions{.model_dir = f.fallback, .classification_head = {}, .num_threads = f.fallback_threads};
  opts.cache.stale_ttl = std::chrono::milliseconds(f.stale_ttl_ms);
  opts.policy_path = f.policy;
  if (!f.otlp_traces.empty()) {
    brisk::OtlpJsonOptions otlp;
    otlp.service_name = "brisk-http";
    auto sink = brisk::OtlpJsonLinesSink::open(f.otlp_traces, otlp);
    if (!sink.ok()) {
      std::fprintf(stderr, "http_server: --otlp-traces: %s\n", std::string(sink.status().message()).c_str());
      return 1;
    }
    opts.span_sink = std::shared_ptr<brisk::SpanSink>(std::move(*sink));
  }
  auto runtime = brisk::Runtime::create(opts);
  if (!runtime.ok()) {
    std::fprintf(stderr, "http_server: %s\n", std::string(runtime.status().message()).c_str());
    return 1;
  }

  brisk_http::Transport server({.threads = static_cast<size_t>(f.http_threads),
                                .max_body_bytes = f.max_body_bytes,
                                .read_timeout = std::chrono::seconds(f.read_timeout_s),
                                .write_timeout = std::chrono::seconds(f.write_timeout_s),
                                .keep_alive = std::chrono::seconds(f.keep_alive_s)});
  const int port = server.bind_and_listen(f.host, f.port);
  if (port < 0) {
    std::fprintf(stderr, "http_server: cannot listen on %s:%d (in use, or not an address of this machine)\n",
                 f.host.c_str(), f.port);
    return 1;
  }
  brisk_http::ServiceOptions service_opts;
  service_opts.model_id = std::filesystem::path(f.model_dir).filename().string();
  if (service_opts.model_id.empty()) service_opts.model_id = f.model_dir;
  auto key = api_key(f.api_key_file);
  if (!key) return 1;
  service_opts.api_key = *key;
  service_opts.default_timeout = std::chrono::milliseconds(f.timeout_ms);
  service_opts.max_inputs = f.max_batch_inputs;
  // Each input is one queued request: a request of more inputs than the queue holds could never be queued, however
  // often it is retried (inputs past the queue go to the fallback, when there is one, so its queue counts too).
  service_opts.max_queued_inputs = f.max_queue;
  if (opts.fallback) {
    service_opts.max_queued_inputs += opts.fallback->batching.max_queue_size;
    service_opts.max_queued_inputs_what = "the queues' capacity (--max-queue " + std::to_string(f.max_queue) +
                                          " plus the fallback's " +
                                          std::to_string(opts.fallback->batching.max_queue_size) + ")";
  }
  service_opts.max_body_bytes = f.max_body_bytes;
  service_opts.connections = {.head_timeout = std::chrono::seconds(f.read_timeout_s),
                              .body_timeout = std::chrono::seconds(2 * f.read_timeout_s),
                              .keep_alive = std::chrono::seconds(f.keep_alive_s),
                              .scan_interval = std::chrono::milliseconds(250),
                              .listen_port = port};
  std::unique_ptr<brisk::AnswerCache> answers;
  if (f.answer_cache || !f.semantic_verifier.empty()) {
    brisk::AnswerCacheOptions ao;
    ao.semantic.max_entries = f.answer_cache_entries;
    ao.semantic.max_tenants = f.answer_cache_tenants;
    ao.verifier_path = f.semantic_verifier;
    auto created = brisk::AnswerCache::create(**runtime, std::move(ao));
    if (!created.ok()) {
      std::fprintf(stderr, "http_server: %s%s\n",
                   f.semantic_verifier.empty() ? "--answer-cache: " : "--semantic-verifier: ",
                   std::string(created.status().message()).c_str());
      return 1;
    }
    answers = std::move(*created);
    service_opts.answers = answers.get();
  }
  brisk_http::HttpService service(**runtime, service_opts);
  service.install(server);

  std::atomic<bool> listen_returned{false};
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (sig != SIGUSR1) std::fprintf(stderr, "http_server: signal %d: draining requests in flight\n", sig);
    // stop() does nothing before the server runs: a signal that arrives during start-up waits for it.
    while (!server.is_running() && !listen_returned) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    server.stop();
  });
  std::printf("listening on http://%s:%d\n", f.host.c_str(), port);
  std::fflush(stdout);
  const bool listened = server.listen_after_bind();  // returns once stopped and every worker has finished
  listen_returned = true;
  pthread_kill(signal_thread.native_handle(), SIGUSR1);
  signal_thread.join();
  std::fprintf(stderr, "http_server: stopped\n");
  return listened ? 0 : 1;
}
