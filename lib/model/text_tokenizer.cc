// TextTokenizer: a WordPieceTokenizer or an HfTokenizer, chosen by the model's files (text_tokenizer.h).
#include "brisk/model/text_tokenizer.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "brisk/core/internal/bounded_input.h"
#include "brisk/core/utf8.h"
#include "brisk/model/config.h"

namespace brisk {
namespace {

// text with each maximal subpart that is not UTF-8 as one U+FFFD (utf8.h), as Python's
// bytes.decode("utf-8", "replace") gives it.
std::string sanitized(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Char c = decode_utf8(text, pos);
    if (c.ok()) {
      out.append(text.substr(pos, static_cast<size_t>(c.length)));
      pos += static_cast<size_t>(c.length);
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD
      pos += utf8_maximal_subpart(text, pos);
    }
  }
  return out;
}

}  // namespace

StatusOr<std::optional<HfTokenizer>> TextTokenizer::hf_tokenizer_of(std::string_view tokenizer_json,
                                                                    std::string_view source) {
  auto j = parse_json_bounded(tokenizer_json, source);
  if (!j.ok() || !j->is_object()) return std::optional<HfTokenizer>();
  auto model = j->find("model");
  if (model == j->end() || !model->is_object()) return std::optional<HfTokenizer>();
  const std::string type = model->value("type", "");
  if (type != "Unigram" && type != "BPE") return std::optional<HfTokenizer>();
  BRISK_ASSIGN_OR_RETURN(HfTokenizer tok, HfTokenizer::from_parsed(*j, source));
  return std::optional<HfTokenizer>(std::move(tok));
}

TextTokenizer::TextTokenizer(WordPieceTokenizer tokenizer) : impl_(std::move(tokenizer)) {}

TextTokenizer::TextTokenizer(HfTokenizer tokenizer, bool replace_invalid_utf8)
    : impl_(std::move(tokenizer)), replace_invalid_utf8_(replace_invalid_utf8) {}

StatusOr<TextTokenizer> TextTokenizer::from_model_dir(const std::string& dir, bool replace_invalid_utf8) {
  const std::string path = dir + "/tokenizer.json";
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    BRISK_ASSIGN_OR_RETURN(const std::string text, read_text_file(path));
    BRISK_ASSIGN_OR_RETURN(std::optional<HfTokenizer> hf, hf_tokenizer_of(text, absl::StrCat("\"", path, "\"")));
    if (hf) return TextTokenizer(std::move(*hf), replace_invalid_utf8);
  }
  BRISK_ASSIGN_OR_RETURN(WordPieceTokenizer tok, WordPieceTokenizer::from_model_dir(dir, replace_invalid_utf8));
  return TextTokenizer(std::move(tok));
}

StatusOr<TextTokenizer> TextTokenizer::from_model_files(const std::map<std::string, std::string>& files,
                                                        bool replace_invalid_utf8, std::string_view source) {
  if (auto it = files.find("tokenizer.json"); it != files.end()) {
    BRISK_ASSIGN_OR_RETURN(std::optional<HfTokenizer> hf,
                           hf_tokenizer_of(it->second, absl::StrCat(std::string(source), ":tokenizer.json")));
    if (hf) return TextTokenizer(std::move(*hf), replace_invalid_utf8);
  }
  BRISK_ASSIGN_OR_RETURN(WordPieceTokenizer tok,
                         WordPieceTokenizer::from_model_files(files, replace_invalid_utf8, source));
  return TextTokenizer(std::move(tok));
}

StatusOr<std::vector<int32_t>> TextTokenizer::encode(std::string_view text, int max_seq_len) const {
  if (const auto* w = wordpiece()) return w->encode(text, max_seq_len);
  if (replace_invalid_utf8_ && !is_valid_utf8(text)) return hf()->encode(sanitized(text), max_seq_len);
  return hf()->encode(text, max_seq_len);
}

Status TextTokenizer::encode_into(std::string_view text, int max_seq_len, std::vector<int32_t>& ids) const {
  if (const auto* w = wordpiece()) return w->encode_into(text, max_seq_len, ids);
  BRISK_ASSIGN_OR_RETURN(ids, encode(text, max_seq_len));
  return absl::OkStatus();
}

StatusOr<EncodedPair> TextTokenizer::encode_pair(std::string_view first, std::string_view second,
                                                 int max_seq_len) const {
  if (const auto* w = wordpiece()) return w->encode_pair(first, second, max_seq_len);
  if (replace_invalid_utf8_ && (!is_valid_utf8(first) || !is_valid_utf8(second))) {
    return hf()->encode_pair(sanitized(first), sanitized(second), max_seq_len);
  }
  return hf()->encode_pair(first, second, max_seq_len);
}

StatusOr<std::vector<std::string>> TextTokenizer::tokenize(std::string_view text) const {
  if (const auto* w = wordpiece()) return w->tokenize(text);
  if (replace_invalid_utf8_ && !is_valid_utf8(text)) return hf()->tokenize(sanitized(text));
  return hf()->tokenize(text);
}

int TextTokenizer::vocab_size() const {
  if (const auto* w = wordpiece()) return w->vocab_size();
  return hf()->vocab_size();
}

int32_t TextTokenizer::pad_id() const {
  if (const auto* w = wordpiece()) return w->pad_id();
  for (const char* pad : {"<pad>", "<|endoftext|>"}) {
    if (const int32_t id = hf()->added_token_id(pad); id >= 0) return id;
  }
  return 0;
}

std::string_view TextTokenizer::kind() const {
  if (wordpiece() != nullptr) return "WordPiece";
  return hf()->model_type();
}

}  // namespace brisk
