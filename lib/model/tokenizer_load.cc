// Loading a WordPieceTokenizer from vocab.txt, tokenizer.json or tokenizer_config.json, in a model directory or
// in memory (ModelFileSource).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "brisk/core/internal/bounded_input.h"
#include "brisk/model/tokenizer.h"
#include "added_tokens.h"
#include "json_describe.h"
#include "model_file_source.h"

namespace brisk {

namespace {

// j[key], or null when absent, by reference: a `cond ? j[key] : json()` would deep-copy (recursively) the member.
const nlohmann::json& member_or_null(const nlohmann::json& j, const char* key) {
  static const nlohmann::json null_value;
  auto it = j.find(key);
  return it == j.end() ? null_value : *it;
}

namespace fs = std::filesystem;
using nlohmann::json;

StatusOr<std::string> read_file(const std::string& path, const char* what) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    return absl::NotFoundError(absl::StrCat(what, " \"", path, "\" does not exist; expected a readable file"));
  }
  if (fs::is_directory(path, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(what, " \"", path, "\" is a directory; expected a file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::PermissionDeniedError(absl::StrCat(what, " \"", path, "\" cannot be opened for reading"));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat(what, " \"", path, "\": read error"));
  return std::move(ss).str();
}

// A model file's text: a directory source reads it with read_file (whose messages say `what` the file is).
StatusOr<std::string> read_source(const ModelFileSource& src, const std::string& rel, const char* what) {
  if (src.in_memory()) return src.read(rel);
  return read_file(src.path(rel), what);
}

StatusOr<json> parse_json(const std::string& text, const std::string& path) {
  BRISK_ASSIGN_OR_RETURN(json j, parse_json_bounded(text, absl::StrCat("\"", path, "\"")));
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", path, "\" is a JSON ", j.type_name(), "; expected a JSON object"));
  }
  return j;
}

// A special token in tokenizer_config.json is either "[CLS]" or {"content": "[CLS]", ...}.
void read_token_name(const json& cfg, const char* key, std::string& out) {
  auto it = cfg.find(key);
  if (it == cfg.end()) return;
  if (it->is_string())
    out = it->get<std::string>();
  else if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    out = (*it)["content"].get<std::string>();
}

void read_bool(const json& cfg, const char* key, bool& out) {
  auto it = cfg.find(key);
  if (it != cfg.end() && it->is_boolean()) out = it->get<bool>();
}

void apply_tokenizer_config(const json& cfg, TokenizerOptions& o) {
  read_bool(cfg, "do_lower_case", o.lowercase);
  read_bool(cfg, "tokenize_chinese_chars", o.tokenize_chinese_chars);
  if (auto it = cfg.find("strip_accents"); it != cfg.end() && it->is_boolean()) o.strip_accents = it->get<bool>();
  read_token_name(cfg, "unk_token", o.unk_token);
  read_token_name(cfg, "cls_token", o.cls_token);
  read_token_name(cfg, "sep_token", o.sep_token);
  read_token_name(cfg, "pad_token", o.pad_token);
  read_token_name(cfg, "mask_token", o.mask_token);
}

// tokenizer.json (HF tokenizers): WordPiece model, BertNormalizer, BertPreTokenizer, [CLS]/[SEP] template.
StatusOr<WordPieceTokenizer> from_tokenizer_json(const std::string& text, const std::string& path, TokenizerOptions o) {
  BRISK_ASSIGN_OR_RETURN(json j, parse_json(text, path));
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("\"", path, "\": ", what));
  };
  try {
    const json* model = j.contains("model") ? &j["model"] : nullptr;
    if (model == nullptr || !model->is_object()) return bad("no \"model\" object; expected a WordPiece model");
    if (model->contains("type") && (*model)["type"] != "WordPiece") {
      return bad(absl::StrCat("model.type is ", describe_json((*model)["type"]), "; expected \"WordPiece\""));
    }
    if (!model->contains("vocab") || !(*model)["vocab"].is_object() || (*model)["vocab"].empty()) {
      return bad("model.vocab is missing or empty; expected an object mapping token to id");
    }
    const json& vocab = (*model)["vocab"];
    std::vector<std::string> tokens(vocab.size());
    std::vector<bool> seen(vocab.size(), false);
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
      if (!it.value().is_number_integer()) {
        return bad(absl::StrCat("model.vocab[\"", it.key(), "\"] is not an integer id"));
      }
      const int64_t id = it.value().get<int64_t>();
      if (id < 0 || id >= static_cast<int64_t>(tokens.size()) || seen[id]) {
        return bad(
            absl::StrCat("model.vocab[\"", it.key(), "\"] = ", id, "; expected unique ids 0..", tokens.size() - 1));
      }
      seen[id] = true;
      tokens[id] = it.key();
    }
    if (auto it = model->find("unk_token"); it != model->end() && it->is_string()) o.unk_token = *it;
    if (auto it = model->find("continuing_subword_prefix"); it != model->end() && it->is_string())
      o.continuing_subword_prefix = *it;
    if (auto it = model->find("max_input_chars_per_word"); it != model->end() && it->is_number_integer())
      o.max_input_chars_per_word = static_cast<int>(std::clamp<int64_t>(*it, 1, 1 << 30));

    const json& norm = member_or_null(j, "normalizer");
    if (norm.is_null()) {
      o.lowercase = false;
      o.strip_accents = false;
      o.clean_text = false;
      o.tokenize_chinese_chars = false;
    } else if (norm.is_object() && norm.value("type", "") == "BertNormalizer") {
      read_bool(norm, "clean_text", o.clean_text);
      read_bool(norm, "handle_chinese_chars", o.tokenize_chinese_chars);
      read_bool(norm, "lowercase", o.lowercase);
      o.strip_accents.reset();
      if (auto it = norm.find("strip_accents"); it != norm.end() && it->is_boolean()) o.strip_accents = it->get<bool>();
    } else {
      return bad(absl::StrCat("normalizer ", describe_json(norm),
                              " is not supported; expected null or "
                              "{\"type\": \"BertNormalizer\"}"));
    }
    const json& pre = member_or_null(j, "pre_tokenizer");
    if (!pre.is_object() || pre.value("type", "") != "BertPreTokenizer") {
      return bad(absl::StrCat("pre_tokenizer ", describe_json(pre),
                              " is not supported; expected {\"type\": \"BertPreTokenizer\"}"));
    }
    // [CLS]/[SEP] come from the post-processor: TemplateProcessing's "single" or BertProcessing.
    const json& post = member_or_null(j, "post_processor");
    if (post.is_object() && post.value("type", "") == "TemplateProcessing" && post.contains("single") &&
        post["single"].is_array()) {
      bool seen_seq = false;
      for (const auto& piece : post["single"]) {
        if (piece.contains("Sequence")) seen_seq = true;
        if (piece.contains("SpecialToken") && piece["SpecialToken"].contains("id")) {
          (seen_seq ? o.sep_token : o.cls_token) = piece["SpecialToken"]["id"].get<std::string>();
        }
      }
    } else if (post.is_object() && post.value("type", "") == "BertProcessing") {
      if (post.contains("cls") && post["cls"].is_array() && !post["cls"].empty()) o.cls_token = post["cls"][0];
      if (post.contains("sep") && post["sep"].is_array() && !post["sep"].empty()) o.sep_token = post["sep"][0];
    }
    if (j.contains("padding") && j["padding"].is_object() && j["padding"].contains("pad_token") &&
        j["padding"]["pad_token"].is_string()) {
      o.pad_token = j["padding"]["pad_token"];
    }
    // Added tokens, with their flags (added_tokens.h); ids past the vocabulary extend it, as added tokens only:
    // WordPiece keeps to model.vocab, as in HF tokenizers.
    o.model_vocab_size = static_cast<int>(tokens.size());
    BRISK_ASSIGN_OR_RETURN(
        const std::vector<detail::AddedTokenEntry> added,
        detail::parse_added_tokens(member_or_null(j, "added_tokens"), absl::StrCat("\"", path, "\"")));
    for (const detail::AddedTokenEntry& e : added) {
      const std::string& content = e.token.content;
      if (e.id == static_cast<int64_t>(tokens.size())) {
        tokens.push_back(content);
      } else if (e.id > static_cast<int64_t>(tokens.size()) || tokens[e.id] != content) {
        return bad(absl::StrCat("added token \"", content, "\" has id ", e.id,
                                "; expected the id of that token in model.vocab or the next free id ", tokens.size()));
      }
      o.added_tokens.push_back(e.token);
    }
    return WordPieceTokenizer::from_tokens(std::move(tokens), std::move(o), path);
  } catch (const json::exception& e) {
    return bad(absl::StrCat("unexpected structure (", e.what(), "); expected HF tokenizers' tokenizer.json"));
  }
}

// vocab.txt's text: one token per line.
StatusOr<WordPieceTokenizer> from_vocab_text(const std::string& text, const std::string& vocab_txt,
                                             TokenizerOptions opts) {
  std::string_view rest(text);
  if (rest.substr(0, 3) == "\xEF\xBB\xBF") rest.remove_prefix(3);  // UTF-8 byte order mark
  std::vector<std::string> tokens;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    tokens.emplace_back(line);
    if (nl == std::string_view::npos) break;
    rest.remove_prefix(nl + 1);
  }
  return WordPieceTokenizer::from_tokens(std::move(tokens), std::move(opts),
                                         absl::StrCat("vocab file \"", vocab_txt, "\""));
}

// tokenizer_config.json (optional), then tokenizer.json, else vocab.txt.
StatusOr<WordPieceTokenizer> from_source(const ModelFileSource& src, bool replace_invalid_utf8) {
  TokenizerOptions opts;
  opts.replace_invalid_utf8 = replace_invalid_utf8;
  if (src.exists("tokenizer_config.json")) {
    const std::string config = src.path("tokenizer_config.json");
    BRISK_ASSIGN_OR_RETURN(std::string text, read_source(src, "tokenizer_config.json", "JSON file"));
    BRISK_ASSIGN_OR_RETURN(json cfg, parse_json(text, config));
    apply_tokenizer_config(cfg, opts);
  }
  if (src.exists("tokenizer.json")) {
    BRISK_ASSIGN_OR_RETURN(std::string text, read_source(src, "tokenizer.json", "JSON file"));
    return from_tokenizer_json(text, src.path("tokenizer.json"), std::move(opts));
  }
  if (src.exists("vocab.txt")) {
    BRISK_ASSIGN_OR_RETURN(std::string text, read_source(src, "vocab.txt", "vocab file"));
    return from_vocab_text(text, src.path("vocab.txt"), std::move(opts));
  }
  return absl::NotFoundError(
      absl::StrCat(src.description(), " has neither tokenizer.json nor vocab.txt; expected one of them"));
}

}  // namespace

StatusOr<WordPieceTokenizer> WordPieceTokenizer::from_vocab_file(const std::string& vocab_txt, TokenizerOptions opts) {
  BRISK_ASSIGN_OR_RETURN(std::string text, read_file(vocab_txt, "vocab file"));
  return from_vocab_text(text, vocab_txt, std::move(opts));
}

StatusOr<WordPieceTokenizer> WordPieceTokenizer::from_model_dir(const std::string& dir, bool replace_invalid_utf8) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("model directory \"", dir, "\" is a file; expected a folder with tokenizer.json or vocab.txt"));
  }
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat("model directory \"", dir,
                                            "\" does not exist; expected a folder with tokenizer.json or vocab.txt"));
  }
  return from_source(ModelFileSource::directory(dir), replace_invalid_utf8);
}

StatusOr<WordPieceTokenizer> WordPieceTokenizer::from_model_files(const std::map<std::string, std::string>& files,
                                                                  bool replace_invalid_utf8, std::string_view source) {
  return from_source(ModelFileSource::memory(files, source), replace_invalid_utf8);
}

}  // namespace brisk
