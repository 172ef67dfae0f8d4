// libFuzzer target: examples/http_server's request bodies (json_io.h), which come from any HTTP client. Each parser
// must refuse bad input with a status and a message, and what it accepts must be valid UTF-8 within the input limit;
// the reply builders must take any rows.
#include <cstdint>
#include <string>
#include <string_view>

#include "../../examples/http_server/json_io.h"
#include "fuzz_util.h"

namespace {

bool valid_utf8(std::string_view s) {
  std::string marked;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

void check_error(const brisk_http::HttpError& err) {
  if (err.message.empty() || (err.status != 400 && err.status != 413)) {
    brisk_fuzz::invariant_failed("a refused body without a message or with a status other than 400/413");
  }
}

void check_texts(const std::vector<std::string>& texts, size_t max_inputs) {
  if (texts.empty() || texts.size() > max_inputs) brisk_fuzz::invariant_failed("inputs outside 1..max_inputs");
  for (const auto& t : texts) {
    if (!valid_utf8(t)) brisk_fuzz::invariant_failed("an accepted input is not valid UTF-8");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const brisk_http::RequestLimits limits{.max_inputs = 8};
  brisk_http::HttpError err;
  if (auto r = brisk_http::parse_tei_embed(body, limits, &err))
    check_texts(r->inputs, limits.max_inputs);
  else
    check_error(err);
  if (auto r = brisk_http::parse_openai_embeddings(body, limits, &err)) {
    check_texts(r->inputs, limits.max_inputs);
    (void)brisk_http::embeddings_openai_json({{1.0f, -2.5f}}, r->model, r->base64, r->inputs.size());
  } else {
    check_error(err);
  }
  if (auto r = brisk_http::parse_tei_predict(body, limits, &err))
    check_texts(r->inputs, limits.max_inputs);
  else
    check_error(err);
  if (auto r = brisk_http::parse_tei_rerank(body, limits, &err))
    check_texts(r->texts, limits.max_inputs);
  else
    check_error(err);
  for (bool with_answer : {false, true}) {
    if (auto r = brisk_http::parse_answer_request(body, with_answer, &err)) {
      check_texts({r->question, r->tenant, with_answer ? r->answer : std::string("-")}, 3);
      if (r->question.empty() || r->tenant.empty() || (with_answer && r->answer.empty()) || r->ttl_s < 0 ||
          r->ttl_s > brisk_http::kMaxAnswerTtlSeconds) {
        brisk_fuzz::invariant_failed("an accepted answer request has an empty field or a ttl out of range");
      }
    } else {
      check_error(err);
    }
  }
  (void)brisk_http::error_json(err);
  (void)brisk_http::base64_encode(body);
  return 0;
}
