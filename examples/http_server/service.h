// HttpService: the HTTP example's endpoints over one brisk::Runtime: TEI's /embed, /predict, /rerank, /info,
// /health and /metrics, OpenAI's /v1/embeddings, and, with a brisk::AnswerCache (--answer-cache or
// --semantic-verifier), brisk's semantic answer cache: POST /v1/answers/lookup {"question", "tenant"?} answers
// {"hit", "answer", "similarity", "cached_question", "reason", "verified", "verifier_score"}, and POST /v1/answers
// {"question", "answer", "tenant"?, "ttl_s"?} stores an answer. A thin layer: each input of /embed and /v1/embeddings
// is one Runtime::submit(), of /predict one submit_classify() (raw_scores included), each passage of /rerank one
// submit_rerank(), all with the request's deadline and cancelled when the client leaves (batching.h); the service
// parses, checks limits (a request of more inputs than the queue holds is a 413, not a 429), maps statuses to HTTP
// codes and counts.
//
//   brisk_http::HttpService service(*runtime, options);
//   brisk_http::Transport server(transport_options);
//   service.install(server);                    // routes, auth, error replies, metrics, timeouts
//   server.listen("127.0.0.1", 8080);
//
// Status mapping: RESOURCE_EXHAUSTED 429 (Retry-After), DEADLINE_EXCEEDED 504, INVALID_ARGUMENT 400, a model
// without the endpoint's task 424, UNAVAILABLE 503, CANCELLED 499 (the client left; nobody reads it).
// Deadline: the X-Request-Timeout-Ms header (1 to 3600000), else ServiceOptions::default_timeout.
//
// Thread safety: install() once; the handlers then run on httplib's worker threads concurrently.
#pragma once

#include <httplib.h>

#include <chrono>
#include <memory>
#include <string>

#include "brisk/runtime/answer_cache.h"
#include "brisk/runtime/runtime.h"
#include "connections.h"
#include "http_metrics.h"
#include "json_io.h"
#include "transport.h"

namespace brisk_http {

inline constexpr char kTimeoutHeader[] = "X-Request-Timeout-Ms";
// Names the path that answered each input, in order: model, cache, fallback or stale (brisk::AnswerPath).
inline constexpr char kAnswerPathHeader[] = "X-Brisk-Answer-Path";

struct ServiceOptions {
  std::string model_id;  // /info's model_id and OpenAI's default model name
  std::string api_key;   // non-empty: every endpoint but /health needs "Authorization: Bearer <api_key>"
  std::chrono::milliseconds default_timeout{30000};
  size_t max_inputs = 256;
  // Inputs the runtime's queue (and a fallback's) holds at most: a request of more is refused with 413 (RequestLimits).
  // 0: no such limit.
  size_t max_queued_inputs = 0;
  std::string max_queued_inputs_what = "the queue's capacity (--max-queue)";
  size_t max_body_bytes = size_t{2} << 20;
  ConnectionGuardOptions connections;
  // The semantic answer cache of /v1/answers (over the same runtime); null: those endpoints answer 404.
  const brisk::AnswerCache* answers = nullptr;
};

class HttpService {
 public:
  HttpService(const brisk::Runtime& runtime, ServiceOptions options);
  void install(Transport& server);
  const HttpMetrics& metrics() const { return metrics_; }

 private:
  using Handler = void (HttpService::*)(const httplib::Request&, httplib::Response&);
  httplib::Server::Handler route(Handler h);
  // A POST endpoint: its body is read here, after refusal_before_body() passed, up to max_body_bytes.
  httplib::Server::HandlerWithContentReader route_with_body(Handler h);
  void serve(Handler h, const httplib::Request& req, httplib::Response& res);
  // What must refuse a request from its head alone, before its body is read: ambiguous framing (conflicting or
  // malformed Content-Length, Transfer-Encoding with it), a missing length, the API key, a length over the cap.
  std::optional<HttpError> refusal_before_body(const httplib::Request& req) const;

  void embed_tei(const httplib::Request& req, httplib::Response& res);
  void embed_openai(const httplib::Request& req, httplib::Response& res);
  void predict(const httplib::Request& req, httplib::Response& res);
  void rerank(const httplib::Request& req, httplib::Response& res);
  void answers_lookup(const httplib::Request& req, httplib::Response& res);
  void answers_insert(const httplib::Request& req, httplib::Response& res);
  void info(const httplib::Request& req, httplib::Response& res);
  void health(const httplib::Request& req, httplib::Response& res);
  void prometheus(const httplib::Request& req, httplib::Response& res);

  // Each text through Runtime::submit(), waiting for all; nullopt and *err on failure. Sets kAnswerPathHeader.
  // The inputs' submits carry the request's traceparent; the response's `traceparent` names brisk's request span of
  // the first input (set_trace_response).
  std::optional<std::vector<std::vector<float>>> embed_all(const httplib::Request& req,
                                                           const std::vector<std::string>& texts,
                                                           httplib::Response& res, HttpError* err);
  // Refuses a text over max_input_length unless truncate; adds the (truncated) token counts to *tokens.
  bool check_lengths(const std::vector<std::string>& texts, const char* field, bool truncate, size_t* tokens,
                     HttpError* err);
  // Refuses a (query, passage) pair over max_input_length: /rerank without truncate.
  bool check_pair_lengths(const std::string& query, const std::vector<std::string>& passages, HttpError* err);
  std::optional<std::chrono::milliseconds> timeout_of(const httplib::Request& req, HttpError* err) const;
  // The per-request options from the headers: the deadline (kTimeoutHeader), "Cache-Control: stale-if-error"
  // (RFC 5861), which lets a stale cached result answer when the model cannot, and a W3C `traceparent` (one that does
  // not parse is ignored, as the Trace Context spec asks of a receiver).
  std::optional<brisk::ClassifyRequestOptions> request_options(const httplib::Request& req, HttpError* err) const;
  void reply_error(httplib::Response& res, const HttpError& err) const;
  RequestLimits limits() const {
    return {options_.max_inputs, options_.max_queued_inputs, options_.max_queued_inputs_what};
  }

  const brisk::Runtime& rt_;
  ServiceOptions options_;
  HttpMetrics metrics_;
  std::unique_ptr<ConnectionGuard> guard_;
  const Transport* transport_ = nullptr;  // install()'s
};

}  // namespace brisk_http
