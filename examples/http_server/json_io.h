// json_io: the HTTP example's request bodies parsed into plain structs, and its response bodies built, for the TEI
// (/embed, /predict, /rerank) and OpenAI (/v1/embeddings) schemas. Parsing only: no model is called here.
//
//   brisk_http::HttpError err;
//   std::optional<brisk_http::EmbedRequest> req = brisk_http::parse_tei_embed(body, limits, &err);
//   if (!req) return reply_error(err);          // err.status 400 or 413, err.message names the field (and limit)
//   std::string out = brisk_http::embeddings_tei_json(rows, dim);
//
// Errors name the field: "inputs[3] is not valid UTF-8 (byte 5 of it); expected UTF-8 text". A body that is not
// valid UTF-8 is still parsed (each bad byte marked) so that the message can name the input holding it.
//
// Thread safety: free functions on their arguments; any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace brisk_http {

// An error reply: the HTTP status and TEI's error body {"error": message, "error_type": type}.
struct HttpError {
  int status = 400;
  std::string message;
  std::string type = "validation";
};

struct RequestLimits {
  size_t max_inputs = 256;  // texts per request; more is 413
  // Texts the runtime's queue holds (one queued input each): a request of more could never be queued whole, so it is
  // a 413, never the 429 (retry later) of a queue full of other requests. 0: no such limit. `max_queued_inputs_what`
  // names it in the message ("the queue's capacity (--max-queue)").
  size_t max_queued_inputs = 0;
  std::string max_queued_inputs_what = "the queue's capacity (--max-queue)";
};

// TEI POST /embed and OpenAI POST /v1/embeddings.
struct EmbedRequest {
  std::vector<std::string> inputs;
  bool single = false;                  // `inputs` was one string (TEI then still answers a list of one)
  bool normalize = true;                // TEI's normalize; OpenAI always normalizes
  bool truncate = false;                // TEI's truncate: false refuses a text over max_input_length
  std::string model;                    // OpenAI's model, echoed back
  bool base64 = false;                  // OpenAI's encoding_format "base64"
  std::optional<long long> dimensions;  // OpenAI's dimensions
  std::string prompt_name;              // TEI's prompt_name ("query": the model's query prompt goes in front)
};

// TEI POST /predict.
struct PredictRequest {
  std::vector<std::string> inputs;
  bool single = false;  // one string: the reply is one list of labels instead of a list of lists
  bool raw_scores = false;
  bool truncate = false;
};

// TEI POST /rerank.
struct RerankRequest {
  std::string query;
  std::vector<std::string> texts;
  bool raw_scores = false;
  bool return_text = false;
  bool truncate = false;  // TEI's truncate: false refuses a (query, text) pair over max_input_length
};

// brisk's semantic answer cache (brisk::AnswerCache): POST /v1/answers/lookup {"question", "tenant"?} and
// POST /v1/answers {"question", "answer", "tenant"?, "ttl_s"?}.
inline constexpr char kDefaultTenant[] = "default";
inline constexpr long long kMaxAnswerTtlSeconds = 366LL * 24 * 3600;  // brisk::kMaxCacheTtl
struct AnswerRequest {
  std::string question;
  std::string tenant = kDefaultTenant;
  std::string answer;   // POST /v1/answers only
  long long ttl_s = 0;  // POST /v1/answers only; 0: the cache's default TTL
};

std::optional<EmbedRequest> parse_tei_embed(std::string_view body, const RequestLimits& limits, HttpError* err);
std::optional<EmbedRequest> parse_openai_embeddings(std::string_view body, const RequestLimits& limits, HttpError* err);
std::optional<PredictRequest> parse_tei_predict(std::string_view body, const RequestLimits& limits, HttpError* err);
std::optional<RerankRequest> parse_tei_rerank(std::string_view body, const RequestLimits& limits, HttpError* err);
// with_answer: POST /v1/answers (answer required, ttl_s allowed); else the lookup (neither allowed).
std::optional<AnswerRequest> parse_answer_request(std::string_view body, bool with_answer, HttpError* err);

// {"error": ..., "error_type": ...}
std::string error_json(const HttpError& err);
// TEI's /embed reply: [[floats], ...] for rows of dim floats.
std::string embeddings_tei_json(const std::vector<std::vector<float>>& rows);
// OpenAI's /v1/embeddings reply; base64 writes each row's float32 bytes little-endian, as OpenAI does.
std::string embeddings_openai_json(const std::vector<std::vector<float>>& rows, const std::string& model, bool base64,
                                   size_t prompt_tokens);
// Standard base64 (RFC 4648, with padding) of bytes.
std::string base64_encode(std::string_view bytes);

}  // namespace brisk_http
