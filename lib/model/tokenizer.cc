// WordPieceTokenizer: vocabulary tables, the normalise/split walk and greedy WordPiece. File loading lives in
// tokenizer_load.cc. The rules follow HF tokenizers' BertNormalizer, BertPreTokenizer and WordPiece model.
#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include <utf8proc.h>

#include "absl/strings/str_cat.h"
#include "brisk/core/utf8.h"
#include "brisk/model/tokenizer.h"
#include "tokenizer_unicode.h"

namespace brisk {

namespace {

// FNV-1a, fed one byte at a time so a hash of every prefix of a candidate piece comes for free.
constexpr uint32_t kFnvBasis = 2166136261u;
inline uint32_t fnv_step(uint32_t h, unsigned char c) { return (h ^ c) * 16777619u; }
inline uint32_t fnv(std::string_view s) {
  uint32_t h = kFnvBasis;
  for (unsigned char c : s) h = fnv_step(h, c);
  return h;
}
// Final avalanche so the low bits used for the slot index depend on every byte.
inline uint32_t mix(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

inline bool is_utf8_lead(unsigned char c) { return (c & 0xC0) != 0x80; }

// Character classes of the BERT rules. kOther is an ordinary word character.
enum class CharClass : uint8_t { kOther, kDrop, kSpace, kPunct };

using detail::is_white_space;

inline bool is_cjk(int32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

inline bool is_ascii_punct(int32_t c) {
  return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
}

inline bool is_punct(int32_t c) {
  if (c < 0x80) return is_ascii_punct(c);
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO: return true;
    default: return false;
  }
}

// clean_text's "control": categories Cc, Cf, Co, Cs except \t \n \r (unassigned Cn is kept, as HF does).
inline bool is_control(int32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CS: return true;
    default: return false;
  }
}

// Pre-tokenizer classes of ASCII characters (after normalisation): whitespace splits, punctuation isolates.
std::array<CharClass, 128> make_pre_ascii() {
  std::array<CharClass, 128> cls{};
  for (int c = 0; c < 128; ++c) {
    cls[c] = is_white_space(c) ? CharClass::kSpace : is_ascii_punct(c) ? CharClass::kPunct : CharClass::kOther;
  }
  return cls;
}
const std::array<CharClass, 128> kPreAscii = make_pre_ascii();

}  // namespace

// Open-addressing table from token text to id. Keys are views into Impl::arena (no per-token allocations).
struct VocabTable {
  struct Slot {
    uint32_t hash;
    int32_t id;
  };
  std::vector<Slot> slots;
  uint32_t mask = 0;
  size_t skip = 0;  // bytes of each stored token that are not part of its key (the "##" prefix)
};

struct WordPieceTokenizer::Impl {
  TokenizerOptions opts;
  bool strip_accents = true;
  std::string arena;              // all token texts back to back
  std::vector<uint32_t> offsets;  // token i is arena[offsets[i], offsets[i+1])
  VocabTable all;                 // every token, by its full text
  VocabTable cont;                // tokens with the continuation prefix, keyed without it
  size_t max_word_start_bytes = 0, max_cont_bytes = 0;
  int32_t unk = -1, cls = -1, sep = -1, pad = -1, mask = -1;
  std::vector<std::pair<std::string, int32_t>> specials;  // literal tokens, longest first
  std::array<bool, 256> special_first{};                  // first bytes of the specials
  std::array<CharClass, 128> ascii_in{};                  // ASCII input classes, clean_text applied

  std::string_view token(int32_t id) const {
    return std::string_view(arena).substr(offsets[id], offsets[id + 1] - offsets[id]);
  }
  // Finds the id of `key` whose (unmixed) FNV hash is `raw`; -1 when absent.
  int32_t find(const VocabTable& t, std::string_view key, uint32_t raw) const {
    const uint32_t h = mix(raw);
    for (uint32_t i = h & t.mask;; i = (i + 1) & t.mask) {
      const auto& s = t.slots[i];
      if (s.id < 0) return -1;
      if (s.hash == h) {
        const std::string_view tok = token(s.id);
        if (tok.size() == key.size() + t.skip && std::memcmp(tok.data() + t.skip, key.data(), key.size()) == 0)
          return s.id;
      }
    }
  }
  void insert(VocabTable& t, int32_t id) {
    const std::string_view key = token(id).substr(t.skip);
    const uint32_t h = mix(fnv(key));
    for (uint32_t i = h & t.mask;; i = (i + 1) & t.mask) {
      auto& s = t.slots[i];
      if (s.id < 0) {
        s = {h, id};
        return;
      }
      // A repeated token keeps the later id, like HF's vocab dict.
      if (s.hash == h && token(s.id).substr(t.skip) == key) {
        s.id = id;
        return;
      }
    }
  }
  static void size_table(VocabTable& t, size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap <<= 1;
    t.slots.assign(cap, VocabTable::Slot{0, -1});
    t.mask = static_cast<uint32_t>(cap - 1);
  }

  // Greedy longest-match-first WordPiece of one word; appends ids (or one [UNK]) to out.
  void word_piece(std::string_view word, int nchars, std::vector<int32_t>& out, std::vector<uint32_t>& hashes) const {
    if (nchars > opts.max_input_chars_per_word) {
      out.push_back(unk);
      return;
    }
    const size_t first = out.size();
    size_t start = 0;
    while (start < word.size()) {
      const size_t limit = std::min(word.size() - start, start == 0 ? max_word_start_bytes : max_cont_bytes);
      // hash[k] = FNV of word[start, start + k); on the stack unless the vocabulary has very long tokens.
      uint32_t stack[128];
      if (limit >= 128 && hashes.size() < limit + 1) hashes.resize(limit + 1);
      uint32_t* hash = limit < 128 ? stack : hashes.data();
      uint32_t h = kFnvBasis;
      hash[0] = h;
      for (size_t k = 0; k < limit; ++k) hash[k + 1] = h = fnv_step(h, static_cast<unsigned char>(word[start + k]));
      const VocabTable& table = start == 0 ? all : cont;
      int32_t id = -1;
      size_t len = limit;
      for (; len > 0; --len) {
        if (start + len < word.size() && !is_utf8_lead(static_cast<unsigned char>(word[start + len]))) continue;
        id = find(table, word.substr(start, len), hash[len]);
        if (id >= 0) break;
      }
      if (id < 0) {  // no piece matches here: the whole word is unknown
        out.resize(first);
        out.push_back(unk);
        return;
      }
      out.push_back(id);
      start += len;
    }
  }

  // Validates all of `text` (so errors do not depend on truncation) when invalid bytes are errors.
  Status validate(std::string_view text) const {
    if (opts.replace_invalid_utf8) return absl::OkStatus();
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    for (size_t i = 0; i < text.size();) {
      if (s[i] < 0x80) {  // skip ASCII eight bytes at a time
        uint64_t w;
        while (i + 8 <= text.size() && (std::memcpy(&w, s + i, 8), (w & 0x8080808080808080ull) == 0)) i += 8;
        while (i < text.size() && s[i] < 0x80) ++i;
        continue;
      }
      const Utf8Char c = decode_utf8(text, i);
      if (!c.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "invalid UTF-8 at byte offset ", i, " (byte 0x", absl::Hex(s[i], absl::kZeroPad2), ": ", c.error,
            "); expected well-formed UTF-8 text; pass valid UTF-8 or enable replace_invalid_utf8"));
      }
      i += static_cast<size_t>(c.length);
    }
    return absl::OkStatus();
  }

  // The normalise + split walk. Calls sink.word(utf8, nchars) per word and sink.special(id) per literal
  // special token; either returns false to stop early (truncation).
  template <typename Sink>
  void walk(std::string_view text, Sink& sink) const {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    std::string word;  // short words stay in the small-string buffer
    int nchars = 0;
    bool go = true;
    auto flush = [&] {
      if (!word.empty()) {
        go = sink.word(std::string_view(word), nchars);
        word.clear();
        nchars = 0;
      }
      return go;
    };
    // Adds one normalised character: whitespace ends the word, punctuation is a word of its own.
    auto put = [&](int32_t c) {
      if (c < 0x80) {
        const CharClass k = kPreAscii[c];
        if (k == CharClass::kSpace) {
          flush();
          return;
        }
        if (k == CharClass::kPunct) {
          if (!flush()) return;
          word.push_back(static_cast<char>(c));
          nchars = 1;
          flush();
          return;
        }
        word.push_back(static_cast<char>(c));
        ++nchars;
        return;
      }
      if (is_white_space(c)) {
        flush();
        return;
      }
      if (is_punct(c)) {
        if (!flush()) return;
        append_utf8(word, c);
        nchars = 1;
        flush();
        return;
      }
      append_utf8(word, c);
      ++nchars;
    };
    // Accent stripping (NFD, drop Mn) then lowercasing, in BertNormalizer's order.
    auto normalise = [&](int32_t c) {
      if (!strip_accents) {
        if (!opts.lowercase) {
          put(c);
          return;
        }
        if (c == 0x130) {
          put('i');
          put(0x307);
          return;
        }  // the one unconditional multi-char lowercase
        put(utf8proc_tolower(c));
        return;
      }
      utf8proc_int32_t buf[8];
      int last_boundclass = 0;
      utf8proc_ssize_t m = utf8proc_decompose_char(c, buf, 8, UTF8PROC_DECOMPOSE, &last_boundclass);
      if (m < 0 || m > 8) {
        buf[0] = c;
        m = 1;
      }  // cannot happen for canonical decompositions
      for (utf8proc_ssize_t k = 0; k < m && go; ++k) {
        const int32_t d = buf[k];
        if (utf8proc_category(d) == UTF8PROC_CATEGORY_MN) continue;
        put(opts.lowercase ? utf8proc_tolower(d) : d);
      }
    };

    for (size_t i = 0; i < n && go;) {
      const unsigned char b = s[i];
      if (opts.recognize_special_tokens && special_first[b]) {
        bool matched = false;
        for (const auto& [lit, id] : specials) {
          if (lit.size() <= n - i && std::memcmp(s + i, lit.data(), lit.size()) == 0) {
            if (!flush()) return;
            go = sink.special(id);
            i += lit.size();
            matched = true;
            break;
          }
        }
        if (matched) continue;
      }
      if (b < 0x80) {  // ASCII fast path
        ++i;
        const CharClass k = ascii_in[b];
        if (k == CharClass::kOther) {
          word.push_back(static_cast<char>(opts.lowercase && b >= 'A' && b <= 'Z' ? b + 32 : b));
          ++nchars;
        } else if (k != CharClass::kDrop) {
          put(b);
        }
        continue;
      }
      const Utf8Char decoded = decode_utf8(text, i);
      // validate() already rejected a bad sequence unless replacing: each maximal subpart becomes U+FFFD.
      const int32_t c = decoded.ok() ? decoded.code_point : 0xFFFD;
      i += decoded.ok() ? static_cast<size_t>(decoded.length) : utf8_maximal_subpart(text, i);
      if (const detail::HfCharOverride ov = detail::hf_char_override(c); ov != detail::kNoOverride) {
        if ((ov == detail::kMark && strip_accents) || (ov == detail::kControl && opts.clean_text)) continue;
        if (ov == detail::kPunct && !flush()) return;
        append_utf8(word, c);
        ++nchars;
        if (ov == detail::kPunct) flush();
        continue;
      }
      if (opts.clean_text) {
        if (c == 0xFFFD || is_control(c)) continue;
        if (is_white_space(c)) {
          flush();
          continue;
        }
      }
      if (opts.tokenize_chinese_chars && is_cjk(c)) {
        if (!flush()) return;
        normalise(c);
        flush();
        continue;
      }
      normalise(c);
    }
    if (go) flush();
  }
};

namespace {

struct IdSink {
  const WordPieceTokenizer::Impl& impl;
  std::vector<int32_t>& out;
  size_t limit;  // stop once this many ids are out
  std::vector<uint32_t> hashes;
  bool word(std::string_view w, int nchars) {
    impl.word_piece(w, nchars, out, hashes);
    if (out.size() >= limit) {
      out.resize(limit);
      return false;
    }
    return true;
  }
  bool special(int32_t id) {
    out.push_back(id);
    return out.size() < limit;
  }
};

struct WordSink {
  const WordPieceTokenizer::Impl& impl;
  std::vector<std::string>& out;
  bool word(std::string_view w, int) {
    out.emplace_back(w);
    return true;
  }
  bool special(int32_t id) {
    out.emplace_back(impl.token(id));
    return true;
  }
};

}  // namespace

StatusOr<WordPieceTokenizer> WordPieceTokenizer::from_tokens(std::vector<std::string> tokens, TokenizerOptions opts,
                                                             std::string_view source_view) {
  const std::string source(source_view);  // absl::StrCat here takes absl::string_view, not std's
  if (tokens.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": the vocabulary is empty; expected one token per id (e.g. vocab.txt lines)"));
  }
  if (tokens.size() > 0x7FFFFFFFu / 2) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", tokens.size(), " tokens; expected fewer than 2^30"));
  }
  if (opts.max_input_chars_per_word < 1) {
    return absl::InvalidArgumentError(absl::StrCat("TokenizerOptions::max_input_chars_per_word is ",
                                                   opts.max_input_chars_per_word, "; expected >= 1"));
  }
  if (opts.continuing_subword_prefix.empty()) {
    return absl::InvalidArgumentError("TokenizerOptions::continuing_subword_prefix is empty; expected e.g. \"##\"");
  }
  auto impl = std::make_shared<Impl>();
  impl->opts = std::move(opts);
  const TokenizerOptions& o = impl->opts;
  impl->strip_accents = o.strip_accents.value_or(o.lowercase);
  // clean_text drops Cc controls (\x0B and \x0C too, before the whitespace mapping), keeping \t \n \r.
  impl->ascii_in = kPreAscii;
  if (o.clean_text) {
    for (int c = 0; c < 128; ++c) {
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) impl->ascii_in[c] = CharClass::kDrop;
    }
  }

  size_t total = 0;
  for (const auto& t : tokens) total += t.size();
  if (total > 0xFFFFFFF0u) return absl::InvalidArgumentError(absl::StrCat(source, ": vocabulary text over 4 GiB"));
  impl->arena.reserve(total);
  impl->offsets.reserve(tokens.size() + 1);
  impl->offsets.push_back(0);
  size_t ncont = 0;
  const std::string& prefix = o.continuing_subword_prefix;
  for (const auto& t : tokens) {
    impl->arena += t;
    impl->offsets.push_back(static_cast<uint32_t>(impl->arena.size()));
    if (t.size() > prefix.size() && t.compare(0, prefix.size(), prefix) == 0) ++ncont;
  }
  tokens.clear();
  tokens.shrink_to_fit();

  Impl::size_table(impl->all, impl->offsets.size() - 1);
  Impl::size_table(impl->cont, ncont);
  impl->cont.skip = prefix.size();
  for (int32_t id = 0; id + 1 < static_cast<int32_t>(impl->offsets.size()); ++id) {
    const std::string_view t = impl->token(id);
    impl->insert(impl->all, id);
    impl->max_word_start_bytes = std::max(impl->max_word_start_bytes, t.size());
    if (t.size() > prefix.size() && t.substr(0, prefix.size()) == prefix) {
      impl->insert(impl->cont, id);
      impl->max_cont_bytes = std::max(impl->max_cont_bytes, t.size() - prefix.size());
    }
  }

  auto lookup = [&](const std::string& tok) { return impl->find(impl->all, tok, fnv(tok)); };
  struct Required {
    const char* field;
    const std::string* tok;
    int32_t* id;
  };
  const Required required[] = {{"unk_token", &o.unk_token, &impl->unk},
                               {"cls_token", &o.cls_token, &impl->cls},
                               {"sep_token", &o.sep_token, &impl->sep},
                               {"pad_token", &o.pad_token, &impl->pad}};
  for (const auto& r : required) {
    *r.id = lookup(*r.tok);
    if (*r.id < 0) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": the vocabulary has no ", r.field, " \"", *r.tok,
                                                     "\"; expected it as one of the ", impl->offsets.size() - 1,
                                                     " tokens (or set TokenizerOptions::", r.field, ")"));
    }
  }
  impl->mask = o.mask_token.empty() ? -1 : lookup(o.mask_token);

  std::vector<std::string> literals = {o.unk_token, o.cls_token, o.sep_token, o.pad_token};
  if (impl->mask >= 0) literals.push_back(o.mask_token);
  for (const auto& t : o.added_tokens) literals.push_back(t);
  for (const auto& lit : literals) {
    if (lit.empty()) continue;
    const int32_t id = lookup(lit);
    if (id < 0) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": added token \"", lit,
                                                     "\" is not in the vocabulary; expected every added token to "
                                                     "have an id"));
    }
    bool dup = false;
    for (const auto& sp : impl->specials) dup |= sp.first == lit;
    if (!dup) impl->specials.emplace_back(lit, id);
  }
  std::stable_sort(impl->specials.begin(), impl->specials.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (const auto& sp : impl->specials) impl->special_first[static_cast<unsigned char>(sp.first[0])] = true;
  return WordPieceTokenizer(std::move(impl));
}

StatusOr<std::vector<std::string>> WordPieceTokenizer::pre_tokenize(std::string_view text) const {
  BRISK_RETURN_IF_ERROR(impl_->validate(text));
  std::vector<std::string> out;
  WordSink sink{*impl_, out};
  impl_->walk(text, sink);
  return out;
}

StatusOr<std::vector<std::string>> WordPieceTokenizer::tokenize(std::string_view text) const {
  BRISK_RETURN_IF_ERROR(impl_->validate(text));
  std::vector<int32_t> ids;
  IdSink sink{*impl_, ids, SIZE_MAX, {}};
  impl_->walk(text, sink);
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (int32_t id : ids) out.emplace_back(impl_->token(id));
  return out;
}

Status WordPieceTokenizer::encode_into(std::string_view text, int max_seq_len, std::vector<int32_t>& ids) const {
  ids.clear();
  if (max_seq_len < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_seq_len is ", max_seq_len, "; expected >= 2 (room for [CLS] and [SEP])"));
  }
  BRISK_RETURN_IF_ERROR(impl_->validate(text));
  ids.push_back(impl_->cls);
  IdSink sink{*impl_, ids, static_cast<size_t>(max_seq_len) - 1, {}};
  if (max_seq_len > 2) impl_->walk(text, sink);
  ids.push_back(impl_->sep);
  return absl::OkStatus();
}

StatusOr<std::vector<int32_t>> WordPieceTokenizer::encode(std::string_view text, int max_seq_len) const {
  std::vector<int32_t> ids;
  BRISK_RETURN_IF_ERROR(encode_into(text, max_seq_len, ids));
  return ids;
}

namespace {

template <typename Text>
StatusOr<BatchEncoding> encode_batch_impl(const WordPieceTokenizer& tok, std::span<const Text> texts, int max_seq_len) {
  if (texts.empty()) {
    return absl::InvalidArgumentError("encode_batch: texts is empty; expected at least one text");
  }
  // Rows go back to back into one buffer first, so a batch costs two allocations, not one per row.
  std::vector<int32_t> flat, row;
  std::vector<int32_t> lengths(texts.size());
  size_t longest = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    Status st = tok.encode_into(texts[i], max_seq_len, row);
    if (!st.ok()) return Status(st.code(), absl::StrCat("encode_batch: text ", i, ": ", st.message()));
    flat.insert(flat.end(), row.begin(), row.end());
    lengths[i] = static_cast<int32_t>(row.size());
    longest = std::max(longest, row.size());
  }
  BatchEncoding b;
  b.batch = static_cast<int64_t>(texts.size());
  b.seq_len = static_cast<int64_t>(longest);
  b.input_ids.assign(texts.size() * longest, tok.pad_id());
  b.token_type_ids.assign(texts.size() * longest, 0);
  b.attention_mask.assign(texts.size() * longest, 0);
  size_t at = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto n = static_cast<size_t>(lengths[i]);
    std::copy_n(flat.begin() + static_cast<ptrdiff_t>(at), n,
                b.input_ids.begin() + static_cast<ptrdiff_t>(i * longest));
    std::fill_n(b.attention_mask.begin() + static_cast<ptrdiff_t>(i * longest), n, 1);
    at += n;
  }
  b.lengths = std::move(lengths);
  return b;
}

}  // namespace

StatusOr<BatchEncoding> WordPieceTokenizer::encode_batch(std::span<const std::string_view> texts,
                                                         int max_seq_len) const {
  return encode_batch_impl(*this, texts, max_seq_len);
}

StatusOr<BatchEncoding> WordPieceTokenizer::encode_batch(std::span<const std::string> texts, int max_seq_len) const {
  return encode_batch_impl(*this, texts, max_seq_len);
}

int32_t WordPieceTokenizer::token_to_id(std::string_view token) const {
  const int32_t id = impl_->find(impl_->all, token, fnv(token));
  return id >= 0 ? id : impl_->unk;
}

std::string_view WordPieceTokenizer::id_to_token(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return impl_->token(id);
}

int WordPieceTokenizer::vocab_size() const { return static_cast<int>(impl_->offsets.size() - 1); }
int32_t WordPieceTokenizer::cls_id() const { return impl_->cls; }
int32_t WordPieceTokenizer::sep_id() const { return impl_->sep; }
int32_t WordPieceTokenizer::pad_id() const { return impl_->pad; }
int32_t WordPieceTokenizer::unk_id() const { return impl_->unk; }
int32_t WordPieceTokenizer::mask_id() const { return impl_->mask; }
const TokenizerOptions& WordPieceTokenizer::options() const { return impl_->opts; }

}  // namespace brisk
