// WordPieceTokenizer: vocabulary tables, the normalise/split walk and greedy WordPiece. File loading lives in
// tokenizer_load.cc. The rules follow HF tokenizers' BertNormalizer, BertPreTokenizer and WordPiece model.
#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include <utf8proc.h>

#include "absl/strings/str_cat.h"
#include "added_tokens.h"
#include "bert_pre_tokenizer.h"
#include "brisk/core/utf8.h"
#include "brisk/model/tokenizer.h"
#include "tokenizer_unicode.h"

namespace brisk {

using detail::CharClass;
using detail::is_cjk;
using detail::is_control;
using detail::is_white_space;
using detail::kPreAscii;
using detail::NormalisedText;
using detail::WordSplitter;

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
  VocabTable all;   // every token, by its full text (token_to_id, the special and added tokens, word-start pieces)
  VocabTable cont;  // WordPiece's tokens with the continuation prefix, keyed without it
  // Ids [0, model_tokens) are WordPiece's own vocabulary (TokenizerOptions::model_vocab_size); the rest are added
  // tokens only, never a piece.
  int32_t model_tokens = 0;
  size_t max_word_start_bytes = 0, max_cont_bytes = 0;
  int32_t unk = -1, cls = -1, sep = -1, pad = -1, mask = -1;
  // The added tokens (TokenizerOptions::added_tokens and the special tokens) matched in the raw text, and those
  // matched in the normalised text by their normalised content; each longest first. Their lstrip and rstrip only
  // take whitespace, which the pre-tokenizer drops anyway, so the raw pass (inline in normalise) does without them.
  std::vector<detail::AddedPattern> raw_added, normalized_added;
  std::array<bool, 256> raw_added_first{};  // first bytes of raw_added
  std::array<CharClass, 128> ascii_in{};    // ASCII input classes, clean_text applied

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
        const int32_t found = find(table, word.substr(start, len), hash[len]);
        if (found >= 0 && found < model_tokens) {
          id = found;
          break;
        }
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

  // BertNormalizer over text into `out` (a consumer of bert_pre_tokenizer.h), splitting out the raw_added tokens first
  // when match_raw_added.
  template <typename Out>
  void normalise(std::string_view text, Out& out, bool match_raw_added) const {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    // Accent stripping (NFD, drop Mn) then lowercasing, in BertNormalizer's order.
    auto fold = [&](int32_t c) {
      if (!strip_accents) {
        if (!opts.lowercase) {
          out.put(c);
          return;
        }
        if (c == 0x130) {
          out.put('i');
          out.put(0x307);
          return;
        }  // the one unconditional multi-char lowercase
        out.put(utf8proc_tolower(c));
        return;
      }
      utf8proc_int32_t buf[8];
      int last_boundclass = 0;
      utf8proc_ssize_t m = utf8proc_decompose_char(c, buf, 8, UTF8PROC_DECOMPOSE, &last_boundclass);
      if (m < 0 || m > 8) {
        buf[0] = c;
        m = 1;
      }  // cannot happen for canonical decompositions
      for (utf8proc_ssize_t k = 0; k < m && out.going(); ++k) {
        const int32_t d = buf[k];
        if (utf8proc_category(d) == UTF8PROC_CATEGORY_MN) continue;
        out.put(opts.lowercase ? utf8proc_tolower(d) : d);
      }
    };

    for (size_t i = 0; i < n && out.going();) {
      const unsigned char b = s[i];
      if (match_raw_added && raw_added_first[b]) {
        const detail::AddedPattern* match = nullptr;
        for (const detail::AddedPattern& p : raw_added) {
          if (p.text.size() <= n - i && std::memcmp(s + i, p.text.data(), p.text.size()) == 0) {
            match = &p;
            break;
          }
        }
        if (match != nullptr) {
          out.added(match->id);
          i += match->text.size();
          continue;
        }
      }
      if (b < 0x80) {  // ASCII fast path
        ++i;
        const CharClass k = ascii_in[b];
        if (k == CharClass::kOther) {
          out.ascii_letter(static_cast<char>(opts.lowercase && b >= 'A' && b <= 'Z' ? b + 32 : b));
        } else if (k == CharClass::kSpace && opts.clean_text) {
          out.space();
        } else if (k != CharClass::kDrop) {
          out.put(b);
        }
        continue;
      }
      const Utf8Char decoded = decode_utf8(text, i);
      // validate() already rejected a bad sequence unless replacing: each maximal subpart becomes U+FFFD.
      const int32_t c = decoded.ok() ? decoded.code_point : 0xFFFD;
      i += decoded.ok() ? static_cast<size_t>(decoded.length) : utf8_maximal_subpart(text, i);
      if (const detail::HfCharOverride ov = detail::hf_char_override(c); ov != detail::kNoOverride) {
        if ((ov == detail::kMark && strip_accents) || (ov == detail::kControl && opts.clean_text)) continue;
        if (ov == detail::kPunct) {
          out.punct(c);
        } else {
          out.letter(c);
        }
        continue;
      }
      if (opts.clean_text) {
        if (c == 0xFFFD || is_control(c)) continue;
        if (is_white_space(c)) {
          out.space();
          continue;
        }
      }
      if (opts.tokenize_chinese_chars && is_cjk(c)) {
        out.space();
        if (!out.going()) return;
        fold(c);
        out.space();
        continue;
      }
      fold(c);
    }
  }

  // Feeds text (normalised) to the word splitter, the normalized_added tokens split out first.
  template <typename Sink>
  void split_normalised(std::string_view text, WordSplitter<Sink>& words) const {
    for (const detail::AddedSegment& seg : detail::split_added(text, normalized_added)) {
      if (!words.going()) return;
      if (seg.added_id >= 0) {
        words.added(seg.added_id);
        continue;
      }
      for (size_t i = seg.begin; i < seg.end && words.going();) {
        const Utf8Char c = decode_utf8(text, i);
        words.put_normalised(c.code_point);
        i += static_cast<size_t>(c.length);
      }
    }
  }

  // The whole pipeline up to WordPiece: sink.word(utf8, nchars) per word, sink.special(id) per added token; either
  // returns false to stop early (truncation). Without normalized added tokens the normaliser feeds the word
  // splitter directly; with them, each stretch between two raw matches is normalised into a buffer first, where
  // they are matched.
  template <typename Sink>
  void walk(std::string_view text, Sink& sink) const {
    WordSplitter<Sink> words(sink);
    if (normalized_added.empty()) {
      normalise(text, words, true);
      words.finish();
      return;
    }
    struct Buffered {
      const Impl& impl;
      WordSplitter<Sink>& words;
      NormalisedText pending;
      bool going() const { return words.going(); }
      void drain() {
        impl.split_normalised(pending.text, words);
        pending.text.clear();
      }
      void space() { pending.space(); }
      void ascii_letter(char c) { pending.ascii_letter(c); }
      void letter(int32_t c) { pending.letter(c); }
      void punct(int32_t c) { pending.punct(c); }
      void put(int32_t c) { pending.put(c); }
      void added(int32_t id) {
        drain();
        if (words.going()) words.added(id);
      }
    } buffered{*this, words, {}};
    normalise(text, buffered, true);
    if (words.going()) buffered.drain();
    words.finish();
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
  if (o.model_vocab_size < 0 || static_cast<size_t>(o.model_vocab_size) > tokens.size()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": TokenizerOptions::model_vocab_size is ",
                                                   o.model_vocab_size, "; expected 0 (every token) or at most ",
                                                   tokens.size(), ", the number of tokens"));
  }
  // Tokens [0, model_tokens) are WordPiece's vocabulary; the rest are added tokens only.
  const size_t model_tokens = o.model_vocab_size == 0 ? tokens.size() : static_cast<size_t>(o.model_vocab_size);
  size_t ncont = 0;
  const std::string& prefix = o.continuing_subword_prefix;
  for (size_t id = 0; id < tokens.size(); ++id) {
    const std::string& t = tokens[id];
    impl->arena += t;
    impl->offsets.push_back(static_cast<uint32_t>(impl->arena.size()));
    if (id < model_tokens && t.size() > prefix.size() && t.compare(0, prefix.size(), prefix) == 0) ++ncont;
  }
  tokens.clear();
  tokens.shrink_to_fit();

  const size_t ntokens = impl->offsets.size() - 1;
  Impl::size_table(impl->all, ntokens);
  impl->model_tokens = static_cast<int32_t>(model_tokens);
  Impl::size_table(impl->cont, ncont);
  impl->cont.skip = prefix.size();
  for (int32_t id = 0; id + 1 < static_cast<int32_t>(impl->offsets.size()); ++id) {
    const std::string_view t = impl->token(id);
    impl->insert(impl->all, id);
    if (static_cast<size_t>(id) >= model_tokens) continue;  // an added token only: never a WordPiece piece
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

  // The added tokens, then the special tokens that they do not list (matched in the raw text).
  std::vector<AddedToken> added = o.added_tokens;
  for (const std::string* name : {&o.unk_token, &o.cls_token, &o.sep_token, &o.pad_token, &o.mask_token}) {
    if (name->empty() || (name == &o.mask_token && impl->mask < 0)) continue;
    auto listed = [&](const AddedToken& a) { return a.content == *name; };
    if (std::none_of(added.begin(), added.end(), listed)) added.push_back(AddedToken{*name, /*special=*/true});
  }
  for (const AddedToken& a : added) {
    if (a.content.empty()) continue;
    const int32_t id = lookup(a.content);
    if (id < 0) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": added token \"", a.content,
                                                     "\" is not in the vocabulary; expected every added token to "
                                                     "have an id"));
    }
    if (a.special && !o.recognize_special_tokens) continue;
    if (!a.normalized) {
      auto same = [&](const detail::AddedPattern& p) { return p.text == a.content; };
      if (std::none_of(impl->raw_added.begin(), impl->raw_added.end(), same)) {
        impl->raw_added.push_back({a.content, id, a.lstrip, a.rstrip});
      }
      continue;
    }
    NormalisedText normalised;
    impl->normalise(a.content, normalised, /*match_raw_added=*/false);
    if (normalised.text.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": added token \"", a.content,
                                                     "\" is empty once normalised; expected a token that some text "
                                                     "matches (or normalized false)"));
    }
    impl->normalized_added.push_back({std::move(normalised.text), id, a.lstrip, a.rstrip});
  }
  detail::sort_longest_first(impl->raw_added);
  detail::sort_longest_first(impl->normalized_added);
  for (const auto& p : impl->raw_added) impl->raw_added_first[static_cast<unsigned char>(p.text[0])] = true;
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
