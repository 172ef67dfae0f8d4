// HfTokenizer: the tokenizer.json pipeline of Hugging Face tokenizers beyond WordPiece (hf_tokenizer.h). Loading
// here; the pipeline in hf_tokenizer_encode.cc, its stages in precompiled_charsmap.cc, byte_level.cc,
// unigram_model.cc and bpe_model.cc.
#include "brisk/model/hf_tokenizer.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "brisk/core/internal/bounded_input.h"
#include "brisk/core/utf8.h"
#include "brisk/model/config.h"
#include "hf_tokenizer_impl.h"
#include "token_id.h"

namespace brisk {

using detail::NormalizerStep;
using detail::TemplateItem;
using nlohmann::json;

namespace {

std::string type_of(const json& j) {
  if (j.is_object()) {
    if (auto it = j.find("type"); it != j.end() && it->is_string()) return it->get<std::string>();
  }
  return "";
}

Status bad(std::string_view source, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(source), ": ", std::string(what)));
}

// A Replace regex of the one shape tokenizer.json files use: one ASCII character repeated, "c{m,}", "c{m,n}",
// "c{m}" or "c+" (XLM-R's " {2,}"); a plain run of ASCII letters, digits and spaces is a literal. Matched by hand
// (replace_runs in hf_tokenizer_encode.cc), leftmost and greedy as Oniguruma matches it, in linear time.
bool parse_char_run(const std::string& r, NormalizerStep& step) {
  if (r.size() >= 2 && static_cast<unsigned char>(r[0]) < 0x80 && std::isprint(static_cast<unsigned char>(r[0])) != 0 &&
      std::string_view("\\.[](){}|^$*+?").find(r[0]) == std::string_view::npos) {
    const std::string_view count = std::string_view(r).substr(1);
    auto number = [](std::string_view digits, int64_t& out) {
      if (digits.empty() || digits.size() > 4) return false;
      out = 0;
      for (const char d : digits) {
        if (d < '0' || d > '9') return false;
        out = out * 10 + (d - '0');
      }
      return true;
    };
    int64_t lo = 0, hi = 0;
    bool ok = false;
    if (count == "+") {
      lo = 1, hi = -1, ok = true;
    } else if (count.size() >= 3 && count.front() == '{' && count.back() == '}') {
      const std::string_view inner = count.substr(1, count.size() - 2);
      const size_t comma = inner.find(',');
      if (comma == std::string_view::npos) {
        ok = number(inner, lo), hi = lo;
      } else {
        ok = number(inner.substr(0, comma), lo);
        hi = -1;
        if (ok && comma + 1 < inner.size()) ok = number(inner.substr(comma + 1), hi) && hi >= lo;
      }
    }
    if (ok && lo >= 1) {
      step.run_char = r[0];
      step.run_min = lo;
      step.run_max = hi;
      return true;
    }
  }
  if (r.empty()) return false;
  for (const char c : r) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != ' ') return false;
  }
  step.literal = r;
  return true;
}

StatusOr<NormalizerStep> parse_normalizer_step(const json& j, std::string_view source) {
  const std::string type = type_of(j);
  NormalizerStep step{};
  if (type == "Precompiled") {
    auto it = j.find("precompiled_charsmap");
    if (it == j.end() || !it->is_string()) {
      return bad(source, "the Precompiled normalizer has no precompiled_charsmap string; expected base64 text");
    }
    std::string blob;
    if (!absl::Base64Unescape(it->get<std::string>(), &blob)) {
      return bad(source, "the Precompiled normalizer's precompiled_charsmap is not base64; expected base64 text");
    }
    BRISK_ASSIGN_OR_RETURN(detail::PrecompiledCharsmap map, detail::PrecompiledCharsmap::parse(blob, source));
    step.kind = NormalizerStep::kPrecompiled;
    step.charsmap = std::make_shared<const detail::PrecompiledCharsmap>(std::move(map));
    return step;
  }
  if (type == "Replace") {
    auto pattern = j.find("pattern");
    auto content = j.find("content");
    if (pattern == j.end() || !pattern->is_object() || content == j.end() || !content->is_string() ||
        !is_valid_utf8(content->get<std::string>())) {
      return bad(source, "the Replace normalizer needs a pattern object and a UTF-8 content string");
    }
    step.kind = NormalizerStep::kReplace;
    step.content = content->get<std::string>();
    if (auto s = pattern->find("String"); s != pattern->end() && s->is_string()) {
      step.literal = s->get<std::string>();
      if (step.literal.empty() || !is_valid_utf8(step.literal)) {
        return bad(source, "the Replace normalizer's String pattern is empty or not UTF-8; expected text");
      }
      return step;
    }
    if (auto r = pattern->find("Regex"); r != pattern->end() && r->is_string()) {
      const std::string regex = r->get<std::string>();
      if (!parse_char_run(regex, step)) {
        return bad(source, absl::StrCat("the Replace normalizer's Regex \"", regex,
                                        "\" is not supported; expected one character with a count (\" {2,}\", \"a+\") "
                                        "or ASCII letters, digits and spaces"));
      }
      return step;
    }
    return bad(source, "the Replace normalizer's pattern is neither {\"String\": ...} nor {\"Regex\": ...}");
  }
  if (type == "Strip") {
    step.kind = NormalizerStep::kStrip;
    step.strip_left = j.value("strip_left", false);
    step.strip_right = j.value("strip_right", false);
    return step;
  }
  if (type == "NFKC" || type == "NFC") {
    step.kind = type == "NFKC" ? NormalizerStep::kNfkc : NormalizerStep::kNfc;
    return step;
  }
  return bad(source, absl::StrCat("normalizer \"", type.empty() ? j.dump().substr(0, 60) : type,
                                  "\" is not supported; expected Sequence, Precompiled, Replace, Strip, NFKC or NFC"));
}

Status parse_normalizer(const json& j, std::string_view source, std::vector<NormalizerStep>& out) {
  if (j.is_null()) return absl::OkStatus();
  if (type_of(j) == "Sequence") {
    auto it = j.find("normalizers");
    if (it == j.end() || !it->is_array()) return bad(source, "the Sequence normalizer has no normalizers array");
    for (const json& step : *it) {
      if (type_of(step) == "Sequence") {
        BRISK_RETURN_IF_ERROR(parse_normalizer(step, source, out));
        continue;
      }
      BRISK_ASSIGN_OR_RETURN(NormalizerStep s, parse_normalizer_step(step, source));
      out.push_back(std::move(s));
    }
    return absl::OkStatus();
  }
  BRISK_ASSIGN_OR_RETURN(NormalizerStep s, parse_normalizer_step(j, source));
  out.push_back(std::move(s));
  return absl::OkStatus();
}

Status parse_metaspace(const json& m, std::string_view source, detail::PreTokenizerStep& step) {
  using Prepend = detail::PreTokenizerStep::Prepend;
  if (auto r = m.find("replacement"); r != m.end()) {
    if (!r->is_string() || r->get<std::string>().empty() || !is_valid_utf8(r->get<std::string>()) ||
        decode_utf8(r->get<std::string>(), 0).length != static_cast<int>(r->get<std::string>().size())) {
      return bad(source, "the Metaspace replacement is not one character; expected \"\u2581\"");
    }
    step.replacement = r->get<std::string>();
  }
  if (auto p = m.find("prepend_scheme"); p != m.end()) {
    const std::string scheme = p->is_string() ? p->get<std::string>() : "";
    if (scheme == "always") {
      step.prepend = Prepend::kAlways;
    } else if (scheme == "first") {
      step.prepend = Prepend::kFirst;
    } else if (scheme == "never") {
      step.prepend = Prepend::kNever;
    } else {
      return bad(source,
                 absl::StrCat("the Metaspace prepend_scheme is ", p->dump(), "; expected always, first or never"));
    }
  } else if (auto a = m.find("add_prefix_space"); a != m.end() && a->is_boolean()) {
    step.prepend = a->get<bool>() ? Prepend::kAlways : Prepend::kNever;
  }
  if (auto sp = m.find("split"); sp != m.end()) {
    if (!sp->is_boolean()) return bad(source, "the Metaspace split is not a boolean");
    step.split = sp->get<bool>();
  }
  return absl::OkStatus();
}

Status parse_pre_tokenizer(const json& j, std::string_view source, std::vector<detail::PreTokenizerStep>& out) {
  if (j.is_null()) return absl::OkStatus();
  const std::string type = type_of(j);
  if (type == "Sequence") {
    auto it = j.find("pretokenizers");
    if (it == j.end() || !it->is_array()) return bad(source, "the Sequence pre-tokenizer has no pretokenizers array");
    for (const json& step : *it) BRISK_RETURN_IF_ERROR(parse_pre_tokenizer(step, source, out));
    return absl::OkStatus();
  }
  detail::PreTokenizerStep step;
  if (type == "Metaspace") {
    step.kind = detail::PreTokenizerStep::kMetaspace;
    BRISK_RETURN_IF_ERROR(parse_metaspace(j, source, step));
  } else if (type == "Split") {
    step.kind = detail::PreTokenizerStep::kSplit;
    const json& pattern = j.contains("pattern") ? j["pattern"] : json();
    const std::string regex = pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()
                                  ? pattern["Regex"].get<std::string>()
                                  : "";
    const std::optional<detail::SplitPattern> known = detail::split_pattern_of(regex);
    if (!known) {
      return bad(source, absl::StrCat("the Split pre-tokenizer's pattern ", pattern.dump().substr(0, 80),
                                      " is not supported; expected the Regex of GPT-2, Qwen2 or Llama 3"));
    }
    step.pattern = *known;
    if (j.value("behavior", "") != "Isolated" || j.value("invert", false)) {
      return bad(source,
                 absl::StrCat("the Split pre-tokenizer has behavior ", j.value("behavior", "(none)"),
                              j.value("invert", false) ? " inverted" : "", "; expected Isolated, not inverted"));
    }
  } else if (type == "ByteLevel") {
    step.kind = detail::PreTokenizerStep::kByteLevel;
    step.add_prefix_space = j.value("add_prefix_space", true);
    step.use_regex = j.value("use_regex", true);
  } else {
    return bad(source, absl::StrCat("pre-tokenizer \"", type.empty() ? j.dump().substr(0, 60) : type,
                                    "\" is not supported; expected Metaspace, Split, ByteLevel or a Sequence of them"));
  }
  out.push_back(std::move(step));
  return absl::OkStatus();
}

Status parse_bpe(const json& j, std::string_view source, HfTokenizer::Impl& t) {
  auto is_unset = [&](const char* key) {
    auto it = j.find(key);
    return it == j.end() || it->is_null() || (it->is_string() && it->get<std::string>().empty()) ||
           (it->is_number() && it->get<double>() == 0.0) || (it->is_boolean() && !it->get<bool>());
  };
  for (const char* key : {"dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "byte_fallback"}) {
    if (!is_unset(key)) {
      return bad(source, absl::StrCat("the BPE model sets ", key, " to ", j[key].dump().substr(0, 40),
                                      ", which is not supported; expected the byte-level BPE of GPT-2, Qwen or Llama 3 "
                                      "(null)"));
    }
  }
  auto vocab = j.find("vocab");
  auto merges = j.find("merges");
  if (vocab == j.end() || !vocab->is_object()) return bad(source, "the BPE model has no vocab object");
  if (merges == j.end() || !merges->is_array()) return bad(source, "the BPE model has no merges array");
  std::vector<std::pair<std::string, int32_t>> tokens;
  tokens.reserve(vocab->size());
  for (const auto& [token, id] : vocab->items()) {
    if (!id.is_number_integer()) return bad(source, absl::StrCat("BPE vocab entry \"", token, "\" has no integer id"));
    const int64_t v = id.get<int64_t>();
    tokens.emplace_back(token, detail::is_token_id(v) ? static_cast<int32_t>(v) : -1);
  }
  std::vector<std::pair<std::string, std::string>> pairs;
  pairs.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const json& m = (*merges)[i];
    if (m.is_string()) {  // tokenizers 0.19: "left right"
      const std::string line = m.get<std::string>();
      const size_t space = line.find(' ');
      if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
        return bad(source, absl::StrCat("BPE merge ", i, " is \"", line, "\"; expected \"left right\""));
      }
      pairs.emplace_back(line.substr(0, space), line.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {  // 0.20: [left, right]
      pairs.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      return bad(source, absl::StrCat("BPE merge ", i, " is ", m.dump().substr(0, 40), "; expected \"left right\""));
    }
  }
  BRISK_ASSIGN_OR_RETURN(t.bpe,
                         detail::BpeModel::create(std::move(tokens), pairs, j.value("ignore_merges", false), source));
  t.model_kind = HfTokenizer::Impl::Model::kBpe;
  return absl::OkStatus();
}

Status parse_model(const json& j, std::string_view source, HfTokenizer::Impl& t) {
  const std::string type = type_of(j);
  if (type == "BPE") return parse_bpe(j, source, t);
  if (type != "Unigram") {
    return bad(source, absl::StrCat("model \"", type.empty() ? "(no type)" : type,
                                    "\" is not supported by HfTokenizer; expected Unigram or BPE (WordPiece models "
                                    "load with WordPieceTokenizer)"));
  }
  if (auto b = j.find("byte_fallback"); b != j.end() && b->is_boolean() && b->get<bool>()) {
    return bad(source, "the Unigram model has byte_fallback true, which is not supported; expected false");
  }
  auto vocab = j.find("vocab");
  if (vocab == j.end() || !vocab->is_array()) return bad(source, "the Unigram model has no vocab array");
  std::vector<std::pair<std::string, double>> pieces;
  pieces.reserve(vocab->size());
  for (size_t i = 0; i < vocab->size(); ++i) {
    const json& e = (*vocab)[i];
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number()) {
      return bad(source,
                 absl::StrCat("Unigram vocab entry ", i, " is ", e.dump().substr(0, 60), "; expected [piece, score]"));
    }
    pieces.emplace_back(e[0].get<std::string>(), e[1].get<double>());
  }
  if (pieces.empty()) return bad(source, "the Unigram vocab is empty; expected pieces");
  auto unk = j.find("unk_id");
  if (unk == j.end() || !unk->is_number_integer()) {
    return bad(source, "the Unigram model has no integer unk_id; expected the unknown piece's id");
  }
  const int64_t unk_id = unk->get<int64_t>();
  if (unk_id < 0 || unk_id >= static_cast<int64_t>(pieces.size())) {
    return bad(source, absl::StrCat("the Unigram unk_id is ", unk_id, "; expected an id in [0, ", pieces.size(), ")"));
  }
  BRISK_ASSIGN_OR_RETURN(t.unigram,
                         detail::UnigramModel::create(std::move(pieces), static_cast<int32_t>(unk_id), source));
  t.model_kind = HfTokenizer::Impl::Model::kUnigram;
  return absl::OkStatus();
}

// After parse_normalizer: a normalized token is matched by its content run through the normalizer, as tokenizers
// builds its trie.
Status parse_added_tokens(const json& j, std::string_view source, HfTokenizer::Impl& t) {
  BRISK_ASSIGN_OR_RETURN(const std::vector<detail::AddedTokenEntry> entries, detail::parse_added_tokens(j, source));
  for (const detail::AddedTokenEntry& e : entries) {
    const AddedToken& a = e.token;
    detail::AddedPattern pattern{a.normalized ? t.normalize(a.content) : a.content, e.id, a.lstrip, a.rstrip};
    if (pattern.text.empty()) {
      return bad(source, absl::StrCat("added token \"", a.content,
                                      "\" is empty after the normalizer; expected a token that matches some text"));
    }
    (a.normalized ? t.normalized_added : t.raw_added).push_back(std::move(pattern));
    t.added_by_id[e.id] = a.content;
  }
  detail::sort_longest_first(t.raw_added);
  detail::sort_longest_first(t.normalized_added);
  return absl::OkStatus();
}

Status parse_post_processor(const json& j, std::string_view source, HfTokenizer::Impl& t) {
  const std::string type = type_of(j);
  if (j.is_null() || type == "ByteLevel") {  // ByteLevel post-processing changes offsets only
    t.single = {TemplateItem{}};
    t.pair = {TemplateItem{}, TemplateItem{{}, true}};
    return absl::OkStatus();
  }
  if (type == "RobertaProcessing") {
    auto cls = j.find("cls");
    auto sep = j.find("sep");
    if (cls == j.end() || sep == j.end() || !cls->is_array() || !sep->is_array() || cls->size() != 2 ||
        sep->size() != 2 || !(*cls)[1].is_number_integer() || !(*sep)[1].is_number_integer()) {
      return bad(source, "RobertaProcessing needs cls and sep as [token, id]");
    }
    // In range before the cast to int32 (4294967296 would become 0); from_parsed then checks them against the
    // vocabulary, as it does TemplateProcessing's.
    for (const auto& [name, id] : {std::pair<const char*, const json*>{"cls", &(*cls)[1]}, {"sep", &(*sep)[1]}}) {
      if (!detail::is_token_id(id->get<int64_t>())) {
        return bad(source,
                   absl::StrCat("RobertaProcessing ", name, " id is ", id->dump(), "; expected an id in [0, 2^30)"));
      }
    }
    const auto c = static_cast<int32_t>((*cls)[1].get<int64_t>());
    const auto s = static_cast<int32_t>((*sep)[1].get<int64_t>());
    t.single = {TemplateItem{{c}}, TemplateItem{}, TemplateItem{{s}}};
    t.pair = {TemplateItem{{c}}, TemplateItem{},         TemplateItem{{s}},
              TemplateItem{{s}}, TemplateItem{{}, true}, TemplateItem{{s}}};
    return absl::OkStatus();
  }
  if (type != "TemplateProcessing") {
    return bad(source,
               absl::StrCat("post-processor \"", type.empty() ? j.dump().substr(0, 60) : type,
                            "\" is not supported; expected TemplateProcessing, RobertaProcessing or ByteLevel"));
  }
  std::map<std::string, std::vector<int32_t>> specials;
  if (auto st = j.find("special_tokens"); st != j.end() && st->is_object()) {
    for (const auto& [name, value] : st->items()) {
      auto ids = value.find("ids");
      if (!value.is_object() || ids == value.end() || !ids->is_array()) {
        return bad(source, absl::StrCat("TemplateProcessing special token \"", name, "\" has no ids array"));
      }
      std::vector<int32_t> v;
      for (const json& id : *ids) {
        if (!id.is_number_integer() || !detail::is_token_id(id.get<int64_t>())) {
          return bad(source, absl::StrCat("TemplateProcessing special token \"", name, "\" has an id out of range"));
        }
        v.push_back(static_cast<int32_t>(id.get<int64_t>()));
      }
      specials[name] = std::move(v);
    }
  }
  auto read = [&](const char* key, std::vector<TemplateItem>& out) -> Status {
    auto it = j.find(key);
    if (it == j.end() || !it->is_array()) return bad(source, absl::StrCat("TemplateProcessing has no ", key, " array"));
    for (const json& item : *it) {
      if (auto seq = item.find("Sequence"); item.is_object() && seq != item.end()) {
        const std::string which = seq->is_object() ? seq->value("id", "") : "";
        if (which != "A" && which != "B") {
          return bad(source, absl::StrCat("TemplateProcessing ", key, " has the sequence ", seq->dump().substr(0, 40),
                                          "; expected id A or B"));
        }
        out.push_back(TemplateItem{{}, which == "B"});
      } else if (auto sp = item.find("SpecialToken"); item.is_object() && sp != item.end()) {
        const std::string name = sp->is_object() ? sp->value("id", "") : "";
        auto found = specials.find(name);
        if (found == specials.end() || found->second.empty()) {
          return bad(source, absl::StrCat("TemplateProcessing ", key, " names the special token \"", name,
                                          "\", which special_tokens does not define"));
        }
        out.push_back(TemplateItem{found->second});
      } else {
        return bad(source, absl::StrCat("TemplateProcessing ", key, " has the item ", item.dump().substr(0, 40),
                                        "; expected Sequence or SpecialToken"));
      }
    }
    return absl::OkStatus();
  };
  BRISK_RETURN_IF_ERROR(read("single", t.single));
  BRISK_RETURN_IF_ERROR(read("pair", t.pair));
  return absl::OkStatus();
}

}  // namespace

StatusOr<HfTokenizer> HfTokenizer::from_json(std::string_view text, std::string_view source) {
  BRISK_ASSIGN_OR_RETURN(const json j, parse_json_bounded(text, source));
  return from_parsed(j, source);
}

StatusOr<HfTokenizer> HfTokenizer::from_parsed(const json& j, std::string_view source) {
  if (!j.is_object()) return bad(source, "tokenizer.json is not a JSON object; expected one");
  auto t = std::make_shared<Impl>();
  auto field = [&](const char* key) -> const json& {
    static const json null_value;
    auto it = j.find(key);
    return it == j.end() ? null_value : *it;
  };
  if (field("model").is_null())
    return bad(source, "tokenizer.json has no model; expected {\"type\": \"Unigram\", ...}");
  BRISK_RETURN_IF_ERROR(parse_model(field("model"), source, *t));
  BRISK_RETURN_IF_ERROR(parse_normalizer(field("normalizer"), source, t->normalizer));
  BRISK_RETURN_IF_ERROR(parse_pre_tokenizer(field("pre_tokenizer"), source, t->pre_tokenizer));
  BRISK_RETURN_IF_ERROR(parse_added_tokens(field("added_tokens"), source, *t));
  BRISK_RETURN_IF_ERROR(parse_post_processor(field("post_processor"), source, *t));
  t->vocab_size = t->model_kind == Impl::Model::kBpe ? t->bpe.max_id() + 1 : t->unigram.size();
  for (const auto& [id, content] : t->added_by_id) t->vocab_size = std::max(t->vocab_size, id + 1);
  for (const auto* tmpl : {&t->single, &t->pair}) {
    for (const TemplateItem& item : *tmpl) {
      for (const int32_t id : item.special) {
        if (id >= t->vocab_size) {
          return bad(source, absl::StrCat("the post-processor's token id ", id, " is past the vocabulary (",
                                          t->vocab_size, " ids)"));
        }
      }
    }
  }
  return HfTokenizer(std::move(t));
}

StatusOr<HfTokenizer> HfTokenizer::from_file(const std::string& path) {
  BRISK_ASSIGN_OR_RETURN(const std::string text, read_text_file(path));
  return from_json(text, absl::StrCat("\"", path, "\""));
}

}  // namespace brisk
