// HfTokenizer's pipeline (hf_tokenizer.h): added tokens, normalizer, pre-tokenizers, the model and the template.
#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "brisk/core/utf8.h"
#include "hf_tokenizer_impl.h"

namespace brisk {
namespace {

Status check_utf8(std::string_view text, std::string_view what) {
  if (const size_t bad = first_invalid_utf8(text); bad != text.size()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), " is not UTF-8 at byte ", bad, " (",
                                                   decode_utf8(text, bad).error, "); expected UTF-8 text"));
  }
  return absl::OkStatus();
}

std::string utf8proc_form(std::string_view text, utf8proc_option_t options) {
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                          static_cast<utf8proc_ssize_t>(text.size()), &out, options);
  if (n < 0) return std::string(text);  // valid UTF-8 in: not reached
  std::string result(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
  std::free(out);
  return result;
}

// NFC or NFKC as HF tokenizers computes it, with Unicode 9.0's tables: a code point assigned since is a starter
// with no decomposition and no composition there, so it splits the text into pieces that normalise on their own
// (nothing reorders or composes across a starter that composes with nothing) and stays as it is.
std::string normalization_form_unicode9(std::string_view text, utf8proc_option_t options) {
  std::string out;
  size_t piece = 0;
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Char c = decode_utf8(text, pos);
    const size_t next = pos + static_cast<size_t>(std::max(c.length, 1));
    if (detail::newer_than_unicode9(c.code_point)) {
      out += utf8proc_form(text.substr(piece, pos - piece), options);
      out.append(text.substr(pos, next - pos));
      piece = next;
    }
    pos = next;
  }
  if (piece == 0) return utf8proc_form(text, options);
  out += utf8proc_form(text.substr(piece), options);
  return out;
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = text.find(from, pos)) != std::string_view::npos; pos = hit + from.size()) {
    out.append(text.substr(pos, hit - pos)).append(to);
  }
  out.append(text.substr(pos));
  return out;
}

// Every leftmost, greedy match of c{lo,hi} (hi -1: unbounded) replaced by `to`, as a regex engine replaces them:
// a run of c shorter than lo stays; a longer one is taken hi at a time while lo remain.
std::string replace_runs(std::string_view text, char c, int64_t lo, int64_t hi, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    if (text[pos] != c) {
      out.push_back(text[pos++]);
      continue;
    }
    size_t end = pos;
    while (end < text.size() && text[end] == c) ++end;
    auto run = static_cast<int64_t>(end - pos);
    while (run >= lo) {
      const int64_t take = hi < 0 ? run : std::min(run, hi);
      out.append(to);
      run -= take;
    }
    out.append(static_cast<size_t>(run), c);
    pos = end;
  }
  return out;
}

}  // namespace

std::string HfTokenizer::Impl::normalize(std::string_view text) const {
  std::string s(text);
  for (const detail::NormalizerStep& step : normalizer) {
    switch (step.kind) {
      case detail::NormalizerStep::kPrecompiled: s = step.charsmap->normalize(s); break;
      case detail::NormalizerStep::kReplace:
        s = step.run_char != 0 ? replace_runs(s, step.run_char, step.run_min, step.run_max, step.content)
                               : replace_all(s, step.literal, step.content);
        break;
      case detail::NormalizerStep::kStrip: {
        const size_t begin = step.strip_left ? detail::white_space_after(s, 0) : 0;
        const size_t end = step.strip_right ? detail::white_space_before(s, s.size(), begin) : s.size();
        s = s.substr(begin, end - begin);
        break;
      }
      case detail::NormalizerStep::kNfkc:
        s = normalization_form_unicode9(
            s, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT));
        break;
      case detail::NormalizerStep::kNfc:
        s = normalization_form_unicode9(s, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
        break;
    }
  }
  return s;
}

void HfTokenizer::Impl::pre_tokenize(const detail::PreTokenizerStep& step, std::string_view word, bool at_start,
                                     std::vector<std::pair<std::string, bool>>& out) {
  using Step = detail::PreTokenizerStep;
  if (word.empty()) return;
  switch (step.kind) {
    case Step::kMetaspace: {
      // Spaces become the replacement, prepended per the scheme; a piece starts at each replacement character.
      std::string s = replace_all(word, " ", step.replacement);
      if ((step.prepend == Step::Prepend::kAlways || (step.prepend == Step::Prepend::kFirst && at_start)) &&
          s.compare(0, step.replacement.size(), step.replacement) != 0) {
        s.insert(0, step.replacement);
      }
      const std::string_view all(s);
      size_t start = 0;
      if (step.split) {
        for (size_t hit = all.find(step.replacement, 1); hit != std::string_view::npos;
             hit = all.find(step.replacement, hit + 1)) {
          out.emplace_back(std::string(all.substr(start, hit - start)), at_start && start == 0);
          start = hit;
        }
      }
      out.emplace_back(std::string(all.substr(start)), at_start && start == 0);
      return;
    }
    case Step::kSplit: {
      std::vector<std::string_view> parts;
      detail::split_words(step.pattern, word, parts);
      for (size_t i = 0; i < parts.size(); ++i) out.emplace_back(std::string(parts[i]), at_start && i == 0);
      return;
    }
    case Step::kByteLevel: {
      // A space before the piece unless it has one, the GPT-2 split when use_regex, then each byte as a character.
      std::string spaced;
      if (step.add_prefix_space && word.front() != ' ') spaced.push_back(' ');
      spaced.append(word);
      std::vector<std::string_view> parts;
      if (step.use_regex) {
        detail::split_words(detail::SplitPattern::kGpt2, spaced, parts);
      } else {
        parts.push_back(spaced);
      }
      for (size_t i = 0; i < parts.size(); ++i)
        out.emplace_back(detail::byte_level_encode(parts[i]), at_start && i == 0);
      return;
    }
  }
}

void HfTokenizer::Impl::encode_text(std::string_view text, std::vector<int32_t>& ids,
                                    std::vector<std::string>* pieces) const {
  // An added token's piece is the text it matched, the whitespace that lstrip / rstrip took included.
  auto emit_added = [&](int32_t id, std::string_view matched) {
    ids.push_back(id);
    if (pieces != nullptr) pieces->emplace_back(matched);
  };
  // 3. The pre-tokenizers, each over the pieces of the one before (at_start: the piece begins the text), then 4.
  //    the model on each piece.
  auto emit_text = [&](std::string_view normalized, bool at_start) {
    thread_local std::vector<std::pair<std::string, bool>> words, next;
    words.assign(1, {std::string(normalized), at_start});
    for (const detail::PreTokenizerStep& step : pre_tokenizer) {
      next.clear();
      for (auto& [word, first] : words) pre_tokenize(step, word, first, next);
      std::swap(words, next);
    }
    for (const auto& [word, first] : words) {
      if (word.empty()) continue;
      if (model_kind == Model::kBpe) {
        bpe.encode(word, ids, pieces);
      } else {
        unigram.encode(word, ids);
        if (pieces != nullptr) unigram.tokenize(word, *pieces);
      }
    }
  };
  // 1. The added tokens matched in the raw text; 2. the rest through the normalizer, then the added tokens matched
  //    in its output.
  for (const detail::AddedSegment& raw : detail::split_added(text, raw_added)) {
    if (raw.added_id >= 0) {
      emit_added(raw.added_id, text.substr(raw.begin, raw.end - raw.begin));
      continue;
    }
    const std::string normalized = normalize(text.substr(raw.begin, raw.end - raw.begin));
    for (const detail::AddedSegment& seg : detail::split_added(normalized, normalized_added)) {
      const std::string_view part = std::string_view(normalized).substr(seg.begin, seg.end - seg.begin);
      if (seg.added_id >= 0) {
        emit_added(seg.added_id, part);
      } else {
        emit_text(part, raw.begin == 0 && seg.begin == 0);
      }
    }
  }
}

StatusOr<std::string> HfTokenizer::normalize(std::string_view text) const {
  BRISK_RETURN_IF_ERROR(check_utf8(text, "the text"));
  return impl_->normalize(text);
}

StatusOr<std::vector<std::string>> HfTokenizer::tokenize(std::string_view text) const {
  BRISK_RETURN_IF_ERROR(check_utf8(text, "the text"));
  std::vector<int32_t> ids;
  std::vector<std::string> pieces;
  impl_->encode_text(text, ids, &pieces);
  return pieces;
}

StatusOr<std::vector<int32_t>> HfTokenizer::encode(std::string_view text, int max_seq_len) const {
  BRISK_RETURN_IF_ERROR(check_utf8(text, "the text"));
  const size_t specials = impl_->special_count(impl_->single);
  if (max_seq_len < 0 || static_cast<size_t>(max_seq_len) <= specials) {
    return absl::InvalidArgumentError(absl::StrCat("max_seq_len is ", max_seq_len, "; expected more than the ",
                                                   specials, " special tokens of the template"));
  }
  std::vector<int32_t> own;
  impl_->encode_text(text, own, nullptr);
  own.resize(std::min(own.size(), static_cast<size_t>(max_seq_len) - specials));
  std::vector<int32_t> ids;
  ids.reserve(own.size() + specials);
  impl_->apply(impl_->single, own, {}, ids, nullptr);
  return ids;
}

StatusOr<EncodedPair> HfTokenizer::encode_pair(std::string_view first, std::string_view second, int max_seq_len) const {
  BRISK_RETURN_IF_ERROR(check_utf8(first, "encode_pair: the first text"));
  BRISK_RETURN_IF_ERROR(check_utf8(second, "encode_pair: the second text"));
  const size_t specials = impl_->special_count(impl_->pair);
  if (max_seq_len < 0 || static_cast<size_t>(max_seq_len) <= specials) {
    return absl::InvalidArgumentError(absl::StrCat("max_seq_len is ", max_seq_len, "; expected more than the ",
                                                   specials, " special tokens of the pair template"));
  }
  std::vector<int32_t> a, b;
  impl_->encode_text(first, a, nullptr);
  impl_->encode_text(second, b, nullptr);
  const PairLengths keep = longest_first_lengths(a.size(), b.size(), static_cast<size_t>(max_seq_len) - specials);
  a.resize(keep.first);
  b.resize(keep.second);
  EncodedPair out;
  out.second_start = -1;
  impl_->apply(impl_->pair, a, b, out.ids, &out.second_start);
  return out;
}

int32_t HfTokenizer::token_to_id(std::string_view token) const {
  if (const int32_t added = added_token_id(token); added >= 0) return added;
  const int32_t id =
      impl_->model_kind == Impl::Model::kBpe ? impl_->bpe.token_to_id(token) : impl_->unigram.piece_to_id(token);
  return id < 0 ? unk_id() : id;
}

std::string_view HfTokenizer::id_to_token(int32_t id) const {
  if (auto it = impl_->added_by_id.find(id); it != impl_->added_by_id.end()) return it->second;
  if (impl_->model_kind == Impl::Model::kBpe) return impl_->bpe.id_to_token(id);
  if (id < 0 || id >= impl_->unigram.size()) return "";
  return impl_->unigram.piece(id);
}

int HfTokenizer::vocab_size() const { return impl_->vocab_size; }
int32_t HfTokenizer::unk_id() const { return impl_->model_kind == Impl::Model::kBpe ? -1 : impl_->unigram.unk_id(); }
int32_t HfTokenizer::added_token_id(std::string_view content) const {
  for (const auto& [id, added] : impl_->added_by_id) {
    if (added == content) return id;
  }
  return -1;
}
std::string_view HfTokenizer::model_type() const { return impl_->model_kind == Impl::Model::kBpe ? "BPE" : "Unigram"; }

}  // namespace brisk
