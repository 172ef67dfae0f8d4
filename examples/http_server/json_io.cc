// Request parsing and reply building for the HTTP example (json_io.h).
#include "json_io.h"
#include "brisk/core/internal/bounded_input.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>

namespace brisk_http {
namespace {

using nlohmann::json;

// U+10FFFF (a noncharacter) stands in for each invalid byte, so that the parsed strings show where they were.
constexpr std::string_view kBadByteMark = "\xF4\x8F\xBF\xBF";

// Length of the valid UTF-8 sequence at s[i], or 0 (overlong forms, surrogates and code points past U+10FFFF are
// invalid, as in RFC 3629).
size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint32_t cp = 0;
  if ((c & 0xE0) == 0xC0)
    n = 2, cp = c & 0x1F;
  else if ((c & 0xF0) == 0xE0)
    n = 3, cp = c & 0x0F;
  else if ((c & 0xF8) == 0xF0)
    n = 4, cp = c & 0x07;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

// The body with each invalid byte replaced by kBadByteMark; nullopt when it is valid UTF-8.
std::optional<std::string> mark_invalid_utf8(std::string_view body) {
  std::optional<std::string> out;
  for (size_t i = 0; i < body.size();) {
    const size_t n = utf8_sequence_length(body, i);
    if (n == 0) {
      if (!out) out = std::string(body.substr(0, i));
      out->append(kBadByteMark);
      ++i;
      continue;
    }
    if (out) out->append(body.substr(i, n));
    i += n;
  }
  return out;
}

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a number";
    default: return "an integer";
  }
}

class Parser {
 public:
  Parser(std::string_view body, HttpError* err) : err_(err) {
    std::optional<std::string> marked = mark_invalid_utf8(body);
    had_invalid_utf8_ = marked.has_value();
    // A syntax error, a number out of range (1e999), or arrays nested past brisk::kMaxJsonDepth.
    brisk::StatusOr<json> parsed = brisk::parse_json_bounded(marked ? std::string_view(*marked) : body, "the body");
    if (!parsed.ok()) {
      fail(400, std::string(parsed.status().message()), "validation");
      return;
    }
    root_ = std::move(*parsed);
    if (!root_.is_object()) fail(400, std::string("the body is ") + type_name(root_) + "; expected a JSON object");
  }
  bool ok() const { return ok_; }
  const json& root() const { return root_; }

  bool fail(int status, std::string message, std::string type = "validation") {
    if (ok_) *err_ = HttpError{status, std::move(message), std::move(type)};
    ok_ = false;
    return false;
  }

  // A UTF-8 text field (value v named `name`) into *out.
  bool text(const json& v, const std::string& name, std::string* out) {
    if (!v.is_string()) return fail(400, name + " is " + type_name(v) + "; expected a string");
    const std::string& s = v.get_ref<const std::string&>();
    if (had_invalid_utf8_) {
      const size_t at = s.find(kBadByteMark);
      if (at != std::string::npos) {
        return fail(400, name + " is not valid UTF-8 (byte " + std::to_string(at) + " of it); expected UTF-8 text");
      }
    }
    *out = s;
    return true;
  }

  // An optional boolean field of the root.
  bool flag(const char* name, bool* out) {
    auto it = root_.find(name);
    if (it == root_.end() || it->is_null()) return true;
    if (!it->is_boolean()) return fail(400, std::string(name) + " is " + type_name(*it) + "; expected true or false");
    *out = it->get<bool>();
    return true;
  }

  // A required field that is a string or an array of strings (TEI's inputs, OpenAI's input).
  bool texts(const char* name, const RequestLimits& limits, std::vector<std::string>* out, bool* single) {
    auto it = root_.find(name);
    if (it == root_.end())
      return fail(400, std::string(name) + " is missing; expected a string or an array of strings");
    if (it->is_string()) {
      *single = true;
      out->resize(1);
      return text(*it, name, &(*out)[0]);
    }
    if (!it->is_array()) {
      return fail(400, std::string(name) + " is " + type_name(*it) + "; expected a string or an array of strings");
    }
    if (it->empty()) return fail(400, std::string(name) + " is an empty array; expected at least one string", "empty");
    if (it->size() > limits.max_inputs) {
      return fail(413, std::string(name) + " has " + std::to_string(it->size()) + " entries; expected at most " +
                           std::to_string(limits.max_inputs) + " (--max-batch-inputs)");
    }
    if (limits.max_queued_inputs != 0 && it->size() > limits.max_queued_inputs) {
      return fail(413, std::string(name) + " has " + std::to_string(it->size()) + " entries; expected at most " +
                           std::to_string(limits.max_queued_inputs) + ", " + limits.max_queued_inputs_what +
                           ": a request of more inputs could never be queued whole, so split it");
    }
    out->resize(it->size());
    for (size_t i = 0; i < it->size(); ++i) {
      const json& v = (*it)[i];
      const std::string field = std::string(name) + "[" + std::to_string(i) + "]";
      if (v.is_array() || v.is_number_integer()) {
        return fail(400, field + " is " + type_name(v) + " (token ids); expected a string: this server takes text");
      }
      if (!text(v, field, &(*out)[i])) return false;
    }
    return true;
  }

 private:
  HttpError* err_;
  json root_;
  bool had_invalid_utf8_ = false;
  bool ok_ = true;
};

}  // namespace

std::optional<EmbedRequest> parse_tei_embed(std::string_view body, const RequestLimits& limits, HttpError* err) {
  Parser p(body, err);
  EmbedRequest r;
  if (!p.ok() || !p.texts("inputs", limits, &r.inputs, &r.single) || !p.flag("normalize", &r.normalize) ||
      !p.flag("truncate", &r.truncate)) {
    return std::nullopt;
  }
  const json& root = p.root();
  if (auto it = root.find("prompt_name");
      it != root.end() && !it->is_null() && !p.text(*it, "prompt_name", &r.prompt_name)) {
    return std::nullopt;
  }
  return r;
}

std::optional<EmbedRequest> parse_openai_embeddings(std::string_view body, const RequestLimits& limits,
                                                    HttpError* err) {
  Parser p(body, err);
  EmbedRequest r;
  r.truncate = true;  // OpenAI's API has no truncate field; brisk truncates to max_input_length as TEI's does
  if (!p.ok() || !p.texts("input", limits, &r.inputs, &r.single)) return std::nullopt;
  const json& root = p.root();
  if (auto it = root.find("model"); it != root.end() && !it->is_null() && !p.text(*it, "model", &r.model)) {
    return std::nullopt;
  }
  if (auto it = root.find("encoding_format"); it != root.end() && !it->is_null()) {
    std::string format;
    if (!p.text(*it, "encoding_format", &format)) return std::nullopt;
    if (format != "float" && format != "base64") {
      p.fail(400, "encoding_format is \"" + format + "\"; expected \"float\" or \"base64\"");
      return std::nullopt;
    }
    r.base64 = format == "base64";
  }
  if (auto it = root.find("dimensions"); it != root.end() && !it->is_null()) {
    // nlohmann keeps integers past INT64_MAX as unsigned: 18446744073709551615 must not come back as -1.
    if (!it->is_number_integer() || (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t{INT32_MAX})) {
      p.fail(400, std::string("dimensions is ") + brisk::shown_json(*it) + "; expected an integer from 1 to " +
                      std::to_string(INT32_MAX));
      return std::nullopt;
    }
    r.dimensions = it->get<long long>();
  }
  return r;
}

std::optional<PredictRequest> parse_tei_predict(std::string_view body, const RequestLimits& limits, HttpError* err) {
  Parser p(body, err);
  PredictRequest r;
  if (!p.ok() || !p.texts("inputs", limits, &r.inputs, &r.single) || !p.flag("raw_scores", &r.raw_scores) ||
      !p.flag("truncate", &r.truncate)) {
    return std::nullopt;
  }
  return r;
}

std::optional<RerankRequest> parse_tei_rerank(std::string_view body, const RequestLimits& limits, HttpError* err) {
  Parser p(body, err);
  RerankRequest r;
  if (!p.ok()) return std::nullopt;
  auto q = p.root().find("query");
  if (q == p.root().end()) {
    p.fail(400, "query is missing; expected a string");
    return std::nullopt;
  }
  bool single = false;
  if (!p.text(*q, "query", &r.query) || !p.texts("texts", limits, &r.texts, &single) ||
      !p.flag("raw_scores", &r.raw_scores) || !p.flag("return_text", &r.return_text) ||
      !p.flag("truncate", &r.truncate)) {
    return std::nullopt;
  }
  return r;
}

std::optional<AnswerRequest> parse_answer_request(std::string_view body, bool with_answer, HttpError* err) {
  Parser p(body, err);
  AnswerRequest r;
  if (!p.ok()) return std::nullopt;
  const auto required_text = [&](const char* name, std::string* out) {
    auto it = p.root().find(name);
    if (it == p.root().end()) return p.fail(400, std::string(name) + " is missing; expected a string");
    if (!p.text(*it, name, out)) return false;
    if (out->empty()) return p.fail(400, std::string(name) + " is empty; expected a non-empty string", "empty");
    return true;
  };
  if (!required_text("question", &r.question)) return std::nullopt;
  if (auto t = p.root().find("tenant"); t != p.root().end() && !t->is_null()) {
    if (!p.text(*t, "tenant", &r.tenant)) return std::nullopt;
    if (r.tenant.empty()) {
      p.fail(400, "tenant is empty; expected a non-empty string, or no tenant (\"default\")", "empty");
      return std::nullopt;
    }
  }
  for (const char* field : {"answer", "ttl_s"}) {
    if (!with_answer && p.root().contains(field)) {
      p.fail(400, std::string(field) + " is given to a lookup; expected it only in POST /v1/answers");
      return std::nullopt;
    }
  }
  if (!with_answer) return r;
  if (!required_text("answer", &r.answer)) return std::nullopt;
  if (auto t = p.root().find("ttl_s"); t != p.root().end() && !t->is_null()) {
    if (!t->is_number_integer() || t->get<long long>() < 0 || t->get<long long>() > kMaxAnswerTtlSeconds) {
      p.fail(400, "ttl_s is " + t->dump() + "; expected an integer in [0, " + std::to_string(kMaxAnswerTtlSeconds) +
                      "] (0: the cache's default)");
      return std::nullopt;
    }
    r.ttl_s = t->get<long long>();
  }
  return r;
}

std::string error_json(const HttpError& err) {
  return json{{"error", err.message}, {"error_type", err.type}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string embeddings_tei_json(const std::vector<std::vector<float>>& rows) { return json(rows).dump(); }

std::string base64_encode(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  const auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(bytes[k])); };
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (b(i) << 16) | (b(i + 1) << 8) | b(i + 2);
    for (int s = 18; s >= 0; s -= 6) out.push_back(kAlphabet[(v >> s) & 63]);
  }
  if (const size_t rest = bytes.size() - i; rest > 0) {
    const uint32_t v = (b(i) << 16) | (rest == 2 ? b(i + 1) << 8 : 0);
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::string embeddings_openai_json(const std::vector<std::vector<float>>& rows, const std::string& model, bool base64,
                                   size_t prompt_tokens) {
  static_assert(std::endian::native == std::endian::little, "base64 embeddings are little-endian float32");
  json data = json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    json item = {{"object", "embedding"}, {"index", i}};
    if (base64) {
      item["embedding"] = base64_encode(
          std::string_view(reinterpret_cast<const char*>(rows[i].data()), rows[i].size() * sizeof(float)));
    } else {
      item["embedding"] = rows[i];
    }
    data.push_back(std::move(item));
  }
  return json{{"object", "list"},
              {"data", std::move(data)},
              {"model", model},
              {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace brisk_http
