// The HTTP example's endpoints (service.h).
#include "service.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <strings.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>

#include "batching.h"
#include "brisk/core/internal/bounded_input.h"
#include "brisk/runtime/tracing.h"

namespace brisk_http {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

thread_local Clock::time_point request_start;  // set in pre-routing, read by the logger, on the same worker thread

HttpError task_error(const brisk::Runtime& rt, const char* endpoint, const char* needs) {
  return {424,
          std::string(endpoint) + " needs " + needs + "; this server's model is a " + rt.info().task + " model (" +
              std::to_string(rt.info().labels.size()) + " labels)",
          "backend"};
}

// In double throughout: finite floats cannot overflow the sum, and 1 / norm of a row near FLT_MAX is no float.
void l2_normalize(std::vector<float>& v) {
  double sum = 0;
  for (float x : v) sum += double{x} * x;
  if (!(sum > 0) || !std::isfinite(sum)) return;
  const double norm = std::sqrt(sum);
  for (float& x : v) x = static_cast<float>(x / norm);
}

// Compares the SHA-256 digests of the two, in constant time: the time taken depends on neither the key's length nor
// where a guess first differs (a length check, or memcmp of the raw strings, leaks the key's length).
bool same_key_digest(const std::string& given, const std::string& expected) {
  unsigned char a[SHA256_DIGEST_LENGTH], b[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(given.data()), given.size(), a);
  SHA256(reinterpret_cast<const unsigned char*>(expected.data()), expected.size(), b);
  return CRYPTO_memcmp(a, b, sizeof a) == 0;
}

}  // namespace

HttpService::HttpService(const brisk::Runtime& runtime, ServiceOptions options)
    : rt_(runtime), options_(std::move(options)), guard_(std::make_unique<ConnectionGuard>(options_.connections)) {}

void HttpService::reply_error(httplib::Response& res, const HttpError& err) const {
  res.status = err.status;
  if (err.status == 429) res.set_header("Retry-After", "1");
  if (err.status == 401) res.set_header("WWW-Authenticate", "Bearer");
  res.set_content(error_json(err), "application/json");
}

namespace {

// 1 to max_len decimal digits (so that std::stoull cannot overflow for max_len <= 19).
bool all_digits(const std::string& v, size_t max_len) {
  return !v.empty() && v.size() <= max_len &&
         std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The request carries a body (which, if it is refused, is left unread).
bool has_body(const httplib::Request& req) {
  return req.has_header("Transfer-Encoding") ||
         (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
}

}  // namespace

std::optional<HttpError> HttpService::refusal_before_body(const httplib::Request& req) const {
  // Framing first: a request whose body length is ambiguous is refused whatever else it says (request smuggling).
  const size_t lengths = req.get_header_value_count("Content-Length");
  for (size_t i = 0; i < lengths; ++i) {
    const std::string v = req.get_header_value("Content-Length", i);
    if (!all_digits(v, 19))
      return HttpError{400, "Content-Length is \"" + brisk::shown_text(v) + "\"; expected a byte count"};
    if (v != req.get_header_value("Content-Length", 0)) {
      return HttpError{400, "Content-Length is given twice, as " + req.get_header_value("Content-Length", 0) + " and " +
                                v + "; expected one length"};
    }
  }
  if (req.has_header("Transfer-Encoding")) {
    const std::string te = req.get_header_value("Transfer-Encoding");
    if (req.get_header_value_count("Transfer-Encoding") > 1 || strcasecmp(te.c_str(), "chunked") != 0) {
      return HttpError{501, "Transfer-Encoding is \"" + brisk::shown_text(te) + "\"; expected chunked"};
    }
    if (lengths > 0) return HttpError{400, "Transfer-Encoding and Content-Length are both given; expected one of them"};
  }
  const bool post = req.method == "POST";
  if (post && lengths == 0 && !req.has_header("Transfer-Encoding")) {
    return HttpError{411, "Content-Length is missing; expected it, or Transfer-Encoding: chunked"};
  }
  if (!post && has_body(req))
    return HttpError{400, req.method + " " + brisk::shown_text(req.path) + " has a body; expected none"};
  // Then the key, before a byte of the body is read.
  if (!options_.api_key.empty() && req.path != "/health") {
    const std::string given = req.get_header_value("Authorization");
    if (given.empty() || !same_key_digest(given, "Bearer " + options_.api_key)) {
      return HttpError{401,
                       given.empty() ? "Authorization is missing; expected \"Bearer <api key>\""
                                     : "Authorization is not the server's API key; expected \"Bearer <api key>\"",
                       "unauthorized"};
    }
  }
  if (lengths > 0 && std::stoull(req.get_header_value("Content-Length")) > options_.max_body_bytes) {
    return HttpError{413, "the request body is " + req.get_header_value("Content-Length") +
                              " bytes; expected at most " + std::to_string(options_.max_body_bytes) +
                              " (--max-body-bytes)"};
  }
  return std::nullopt;
}

void HttpService::serve(Handler h, const httplib::Request& req, httplib::Response& res) {
  guard_->handler_started(connection_key(req));
  metrics_.in_flight.add(1);
  (this->*h)(req, res);
  metrics_.in_flight.add(-1);
}

httplib::Server::Handler HttpService::route(Handler h) {
  return [this, h](const httplib::Request& req, httplib::Response& res) { serve(h, req, res); };
}

httplib::Server::HandlerWithContentReader HttpService::route_with_body(Handler h) {
  return [this, h](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& read) {
    // The key and the length were checked before this (refusal_before_body): only now is the body read, up to the
    // cap whatever its framing, chunked included.
    httplib::Request with_body = req;
    bool over = false;
    const bool read_whole = read([&](const char* data, size_t n) {
      if (with_body.body.size() + n > options_.max_body_bytes) {
        over = true;
        return false;
      }
      with_body.body.append(data, n);
      return true;
    });
    if (!read_whole) {
      Transport::close_after_response(res);
      if (over || Transport::over_limit() != Transport::OverLimit::kNone) {
        return reply_error(res, {413, "the request body is over " + std::to_string(options_.max_body_bytes) +
                                          " bytes; expected at most that (--max-body-bytes)"});
      }
      return reply_error(res, {400,
                               "the request body could not be read: it ended early, timed out or its chunked "
                               "framing is malformed; expected Content-Length bytes or well-formed chunks"});
    }
    serve(h, with_body, res);
  };
}

void HttpService::install(Transport& server) {
  transport_ = &server;
  server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    request_start = Clock::now();
    guard_->head_received(connection_key(req));
    if (auto err = refusal_before_body(req)) {
      reply_error(res, *err);
      // Its body stays unread, or where the body ends is unclear: what follows on the connection is no request.
      if (has_body(req) || err->status != 401) Transport::close_after_response(res);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // "Expect: 100-continue": the client waits to send its body; a refusal is sent instead of 100.
  server.set_expect_100_continue_handler([this](const httplib::Request& req, httplib::Response& res) {
    request_start = Clock::now();
    auto err = refusal_before_body(req);
    if (!err) return 100;
    reply_error(res, *err);
    Transport::close_after_response(res);
    return err->status;
  });
  server.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    metrics_.record(req.path, res.status, static_cast<uint64_t>((Clock::now() - request_start).count()));
    guard_->response_sent(connection_key(req));
  });
  // httplib's own refusals (a malformed request line or headers, a head over its cap, an unknown endpoint).
  server.set_error_handler(httplib::Server::HandlerWithResponse([this, &server](const httplib::Request& req,
                                                                                httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    HttpError err{res.status, "", "validation"};
    const Transport::OverLimit over = Transport::over_limit();
    if (over == Transport::OverLimit::kHead) {
      err = {431, "the request head is over " + std::to_string(server.options().max_head_bytes) +
                      " bytes; expected at most that"};
    } else if (over == Transport::OverLimit::kBody || res.status == 413) {
      err = {413, "the request body is over " + std::to_string(options_.max_body_bytes) +
                      " bytes; expected at most that (--max-body-bytes)"};
    } else if (res.status == 404) {
      err.message = "no endpoint " + req.method + " " + brisk::shown_text(req.path) +
                    "; expected POST /embed, /v1/embeddings, /predict, /rerank, /v1/answers, /v1/answers/lookup or GET "
                    "/health, /info, /metrics";
      err.type = "not_found";
    } else {
      err.message = "the request could not be read (HTTP " + std::to_string(res.status) +
                    "): expected an HTTP/1.1 request line and headers";
    }
    // Whatever follows a request httplib could not read is not a request.
    if (res.status != 404) Transport::close_after_response(res);
    reply_error(res, err);
    return httplib::Server::HandlerResponse::Handled;
  }));
  server.set_exception_handler([this](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    reply_error(res, {500, "internal error: " + what, "backend"});
  });
  server.Post("/embed", route_with_body(&HttpService::embed_tei));
  server.Post("/v1/embeddings", route_with_body(&HttpService::embed_openai));
  server.Post("/embeddings", route_with_body(&HttpService::embed_openai));
  server.Post("/predict", route_with_body(&HttpService::predict));
  server.Post("/rerank", route_with_body(&HttpService::rerank));
  server.Post("/v1/answers/lookup", route_with_body(&HttpService::answers_lookup));
  server.Post("/v1/answers", route_with_body(&HttpService::answers_insert));
  server.Get("/info", route(&HttpService::info));
  server.Get("/metrics", route(&HttpService::prometheus));
  server.Get("/health", route(&HttpService::health));
}

std::optional<std::chrono::milliseconds> HttpService::timeout_of(const httplib::Request& req, HttpError* err) const {
  if (!req.has_header(kTimeoutHeader)) return options_.default_timeout;
  const std::string v = req.get_header_value(kTimeoutHeader);
  long long ms = 0;
  const bool digits = all_digits(v, 7);
  if (digits) ms = std::stoll(v);
  if (!digits || ms < 1 || ms > 3600000) {
    *err = {400, std::string(kTimeoutHeader) + " is \"" + v + "\"; expected milliseconds from 1 to 3600000"};
    return std::nullopt;
  }
  return std::chrono::milliseconds(ms);
}

std::optional<brisk::ClassifyRequestOptions> HttpService::request_options(const httplib::Request& req,
                                                                          HttpError* err) const {
  const auto timeout = timeout_of(req, err);
  if (!timeout) return std::nullopt;
  brisk::ClassifyRequestOptions o;
  o.timeout = *timeout;
  o.allow_stale = req.get_header_value("Cache-Control").find("stale-if-error") != std::string::npos;
  const std::string traceparent = req.get_header_value("traceparent");
  if (!traceparent.empty() && brisk::parse_traceparent(traceparent).ok()) o.trace_parent = traceparent;
  return o;
}

namespace {

// The context to propagate downstream: brisk's request span of the first input (when spans are recorded), else the
// request's own traceparent.
void set_trace_response(httplib::Response& res, const brisk::TraceContext& first_input) {
  if (first_input.trace_id != brisk::TraceId{}) res.set_header("traceparent", brisk::format_traceparent(first_input));
}

void set_answer_paths(httplib::Response& res, const std::vector<brisk::AnswerPath>& paths) {
  std::string v;
  for (brisk::AnswerPath p : paths) {
    if (!v.empty()) v += ",";
    v += brisk::answer_path_name(p);
  }
  res.set_header(kAnswerPathHeader, v);
}

// Each of n inputs through submit_one(i, first_trace, done) (run_batch); on success, the answer paths and the first
// input's traceparent go on the response. first_trace is non-null for input 0 only: submit_one makes it its options'
// trace_context_out (the runtime writes it only when the request carries a traceparent).
template <typename Result, typename SubmitOne>
std::optional<std::vector<Result>> submit_each(const brisk::Runtime& rt, HttpMetrics& metrics,
                                               const httplib::Request& req, httplib::Response& res, size_t n,
                                               SubmitOne submit_one, HttpError* err,
                                               const std::string& field = "inputs") {
  std::vector<brisk::AnswerPath> paths;
  brisk::TraceContext trace;
  auto out = run_batch<Result>(
      rt, req, n, [&](size_t i, auto done) { return submit_one(i, i == 0 ? &trace : nullptr, std::move(done)); },
      metrics, &paths, err, field);
  if (out) {
    set_answer_paths(res, paths);
    set_trace_response(res, trace);
  }
  return out;
}

}  // namespace

bool HttpService::check_lengths(const std::vector<std::string>& texts, const char* field, bool truncate, size_t* tokens,
                                HttpError* err) {
  const size_t max_len = static_cast<size_t>(rt_.info().max_seq_len);
  for (size_t i = 0; i < texts.size(); ++i) {
    brisk::StatusOr<size_t> n = rt_.count_tokens(texts[i]);
    const std::string name = std::string(field) + "[" + std::to_string(i) + "]";
    if (!n.ok()) {
      *err = {400, name + ": " + std::string(n.status().message()), "tokenizer"};
      return false;
    }
    if (!truncate && *n > max_len) {
      *err = {413, name + " has " + std::to_string(*n) + " tokens; expected at most " + std::to_string(max_len) +
                       " (max_input_length), or \"truncate\": true"};
      return false;
    }
    if (tokens) *tokens += std::min(*n, max_len);
  }
  return true;
}

bool HttpService::check_pair_lengths(const std::string& query, const std::vector<std::string>& passages,
                                     HttpError* err) {
  const size_t max_len = static_cast<size_t>(rt_.info().max_seq_len);
  for (size_t i = 0; i < passages.size(); ++i) {
    brisk::StatusOr<size_t> n = rt_.count_tokens(query, passages[i]);
    const std::string name = "texts[" + std::to_string(i) + "]";
    if (!n.ok()) {
      *err = {400, name + ": " + std::string(n.status().message()), "tokenizer"};
      return false;
    }
    if (*n > max_len) {
      *err = {413, "query and " + name + " have " + std::to_string(*n) + " tokens together; expected at most " +
                       std::to_string(max_len) + " (max_input_length), or \"truncate\": true"};
      return false;
    }
  }
  return true;
}

std::optional<std::vector<std::vector<float>>> HttpService::embed_all(const httplib::Request& req,
                                                                      const std::vector<std::string>& texts,
                                                                      httplib::Response& res, HttpError* err) {
  const auto opts = request_options(req, err);
  if (!opts) return std::nullopt;
  return submit_each<std::vector<float>>(
      rt_, metrics_, req, res, texts.size(),
      [&](size_t i, brisk::TraceContext* first_trace, auto done) {
        brisk::EmbedRequestOptions o = *opts;
        o.trace_context_out = first_trace;
        return rt_.submit(texts[i], o, std::move(done));
      },
      err);
}

void HttpService::embed_tei(const httplib::Request& req, httplib::Response& res) {
  HttpError err;
  if (rt_.embedding_dim() == 0) return reply_error(res, task_error(rt_, "/embed", "an embedding model"));
  auto r = parse_tei_embed(req.body, limits(), &err);
  if (!r) return reply_error(res, err);
  if (!r->prompt_name.empty()) {  // TEI's prompt_name: sentence-transformers' prompt in front of each input
    auto prompt = brisk::prompt_for(rt_.info(), r->prompt_name);
    if (!prompt.ok()) return reply_error(res, {400, std::string(prompt.status().message())});
    for (std::string& text : r->inputs) text.insert(0, *prompt);
  }
  if (!check_lengths(r->inputs, "inputs", r->truncate, nullptr, &err)) return reply_error(res, err);
  auto rows = embed_all(req, r->inputs, res, &err);
  if (!rows) return reply_error(res, err);
  if (r->normalize) std::for_each(rows->begin(), rows->end(), l2_normalize);
  res.set_content(embeddings_tei_json(*rows), "application/json");
}

void HttpService::embed_openai(const httplib::Request& req, httplib::Response& res) {
  HttpError err;
  if (rt_.embedding_dim() == 0) return reply_error(res, task_error(rt_, "/v1/embeddings", "an embedding model"));
  auto r = parse_openai_embeddings(req.body, limits(), &err);
  if (!r) return reply_error(res, err);
  if (r->dimensions && *r->dimensions != rt_.embedding_dim()) {
    return reply_error(res, {400, "dimensions is " + std::to_string(*r->dimensions) + "; this model gives " +
                                      std::to_string(rt_.embedding_dim()) + " (leave it out, or pass that)"});
  }
  size_t tokens = 0;
  if (!check_lengths(r->inputs, "input", /*truncate=*/true, &tokens, &err)) return reply_error(res, err);
  auto rows = embed_all(req, r->inputs, res, &err);
  if (!rows) return reply_error(res, err);
  std::for_each(rows->begin(), rows->end(), l2_normalize);
  res.set_content(embeddings_openai_json(*rows, r->model.empty() ? options_.model_id : r->model, r->base64, tokens),
                  "application/json");
}

void HttpService::predict(const httplib::Request& req, httplib::Response& res) {
  HttpError err;
  if (rt_.info().task != "classification") {
    return reply_error(res, task_error(rt_, "/predict", "a sequence-classification model"));
  }
  auto r = parse_tei_predict(req.body, limits(), &err);
  if (!r || !check_lengths(r->inputs, "inputs", r->truncate, nullptr, &err)) return reply_error(res, err);
  auto opts = request_options(req, &err);
  if (!opts) return reply_error(res, err);
  opts->top_k = static_cast<int>(rt_.info().labels.size());
  opts->raw_scores = r->raw_scores;  // each label's logit instead of its probability
  auto results = submit_each<std::vector<brisk::LabelScore>>(
      rt_, metrics_, req, res, r->inputs.size(),
      [&](size_t i, brisk::TraceContext* first_trace, auto done) {
        brisk::ClassifyRequestOptions o = *opts;
        o.trace_context_out = first_trace;
        return rt_.submit_classify(r->inputs[i], o, std::move(done));
      },
      &err);
  if (!results) return reply_error(res, err);
  json body = json::array();
  for (const auto& row : *results) {
    json item = json::array();
    for (const auto& l : row) item.push_back({{"label", l.label}, {"score", l.score}});
    body.push_back(std::move(item));
  }
  res.set_content((r->single ? body[0] : body).dump(), "application/json");
}

void HttpService::rerank(const httplib::Request& req, httplib::Response& res) {
  HttpError err;
  if (rt_.info().task != "classification" || rt_.info().labels.size() != 1) {
    return reply_error(res, task_error(rt_, "/rerank", "a cross-encoder (a classification model with one label)"));
  }
  auto r = parse_tei_rerank(req.body, limits(), &err);
  if (!r) return reply_error(res, err);
  if (!r->truncate && !check_pair_lengths(r->query, r->texts, &err)) return reply_error(res, err);
  const auto opts = request_options(req, &err);
  if (!opts) return reply_error(res, err);
  auto scores = submit_each<float>(
      rt_, metrics_, req, res, r->texts.size(),
      [&](size_t i, brisk::TraceContext* first_trace, auto done) {
        brisk::RerankRequestOptions o{*opts, r->raw_scores};
        o.trace_context_out = first_trace;
        return rt_.submit_rerank(r->query, r->texts[i], o, std::move(done));
      },
      &err, "texts");
  if (!scores) return reply_error(res, err);
  // Best first, as Runtime::rerank() sorts (the model's scores are finite: a non-finite one is an error).
  std::vector<brisk::RerankResult> ranked(scores->size());
  for (size_t i = 0; i < ranked.size(); ++i) ranked[i] = {i, (*scores)[i]};
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.score > b.score; });
  json body = json::array();
  for (const auto& x : ranked) {
    json item = {{"index", x.index}, {"score", x.score}};
    if (r->return_text) item["text"] = r->texts[x.index];
    body.push_back(std::move(item));
  }
  res.set_content(body.dump(), "application/json");
}

namespace {

HttpError no_answer_cache() {
  return {404, "this server has no answer cache; expected http_server --answer-cache or --semantic-verifier FILE",
          "not_found"};
}

}  // namespace

void HttpService::answers_lookup(const httplib::Request& req, httplib::Response& res) {
  if (options_.answers == nullptr) return reply_error(res, no_answer_cache());
  HttpError err;
  auto r = parse_answer_request(req.body, /*with_answer=*/false, &err);
  if (!r) return reply_error(res, err);
  brisk::StatusOr<brisk::cache::SemanticLookup> found = options_.answers->lookup(r->tenant, r->question);
  if (!found.ok()) return reply_error(res, error_of_status(found.status(), "question"));
  std::string reason(brisk::cache::to_string(found->reason));  // "rejected by verifier" -> "rejected_by_verifier"
  std::replace(reason.begin(), reason.end(), ' ', '_');
  json body = {{"hit", found->hit},
               {"answer", found->hit ? json(found->answer) : json(nullptr)},
               {"similarity", found->similarity},
               {"cached_question", found->cached_question},
               {"reason", reason},
               {"verified", found->verified},
               {"verifier_score", found->verified ? json(found->verifier_score) : json(nullptr)}};
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void HttpService::answers_insert(const httplib::Request& req, httplib::Response& res) {
  if (options_.answers == nullptr) return reply_error(res, no_answer_cache());
  HttpError err;
  auto r = parse_answer_request(req.body, /*with_answer=*/true, &err);
  if (!r) return reply_error(res, err);
  brisk::cache::PutOptions put;
  put.ttl = std::chrono::seconds(r->ttl_s);
  if (brisk::Status st = options_.answers->insert(r->tenant, r->question, std::move(r->answer), put); !st.ok()) {
    // A tenant past the limit stays refused while the server runs: 507, not a 429 to retry. RESOURCE_EXHAUSTED is
    // also a full queue (429), so the tenant is asked again: AnswerCache::insert refuses it before the embedding,
    // or the cache at the insert when another request took the last tenant in between.
    if (st.code() == absl::StatusCode::kResourceExhausted) {
      if (brisk::Status tenant = options_.answers->semantic_cache().admit_tenant(r->tenant); !tenant.ok()) {
        return reply_error(res, {507, "tenant: " + std::string(tenant.message()), "insufficient_storage"});
      }
    }
    return reply_error(res, error_of_status(st, "question"));
  }
  res.set_content(R"({"stored":true})", "application/json");
}

void HttpService::info(const httplib::Request&, httplib::Response& res) {
  const brisk::ModelInfo& m = rt_.info();
  json model_type;
  if (m.task == "embedding") {
    model_type = {{"embedding", {{"pooling", std::string(brisk::pooling_name(m.pooling))}}}};
  } else {
    json id2label = json::object(), label2id = json::object();
    for (size_t i = 0; i < m.labels.size(); ++i) {
      id2label[std::to_string(i)] = m.labels[i];
      label2id[m.labels[i]] = i;
    }
    model_type = {{m.labels.size() == 1 ? "reranker" : "classifier", {{"id2label", id2label}, {"label2id", label2id}}}};
  }
  const json body = {{"model_id", options_.model_id},
                     {"model_dtype", brisk::dtype_name(m.activation_dtype)},
                     {"model_type", model_type},
                     {"task", m.task},
                     {"labels", m.labels},
                     {"embedding_dim", rt_.embedding_dim()},
                     {"max_input_length", m.max_seq_len},
                     {"max_client_batch_size", options_.max_queued_inputs != 0
                                                   ? std::min(options_.max_inputs, options_.max_queued_inputs)
                                                   : options_.max_inputs},
                     {"max_batch_requests", rt_.batch_stats().batch_limit},
                     {"backend", m.backend},
                     {"quantization", m.quantization},
                     {"version", BRISK_HTTP_VERSION}};
  res.set_content(body.dump(), "application/json");
}

void HttpService::health(const httplib::Request&, httplib::Response& res) {
  res.set_content(R"({"status":"ok"})", "application/json");
}

void HttpService::prometheus(const httplib::Request&, httplib::Response& res) {
  const HttpMetrics::Connections connections{.closed_slow = guard_->closed_slow(),
                                             .idle = transport_ != nullptr ? transport_->parked() : 0,
                                             .closed_idle = transport_ != nullptr ? transport_->closed_idle() : 0};
  const std::string answers = options_.answers != nullptr ? options_.answers->metrics_prometheus() : "";
  res.set_content(rt_.metrics_prometheus() + metrics_.prometheus(connections) + answers, "text/plain; version=0.0.4");
}

}  // namespace brisk_http
