// Tokenizers read from a Hugging Face tokenizer.json beyond WordPiece, equal to the `tokenizers` library (0.19)
// id for id: the SentencePiece Unigram pipeline of XLM-RoBERTa and its family (multilingual-e5,
// paraphrase-multilingual-*, bge-m3) and the byte-level BPE of Qwen2/Qwen3 (Qwen3-Embedding, gte-Qwen2), GPT-2 /
// RoBERTa and Llama 3. WordPiece models keep WordPieceTokenizer (tokenizer.h).
//
//   BRISK_ASSIGN_OR_RETURN(brisk::HfTokenizer tok, brisk::HfTokenizer::from_file("/models/xlmr/tokenizer.json"));
//   BRISK_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tok.encode("Wie setze ich meine PIN zurück?", 128));
//   // <s> pieces </s>: [0, ..., 2] for XLM-R; pieces <|endoftext|> for Qwen3-Embedding
//
// The pipeline, each stage as tokenizers runs it:
//   1. added tokens (tokenizer.json "added_tokens"): those with normalized false matched in the raw text,
//      leftmost-longest, lstrip / rstrip taking the whitespace beside them; the others in the normalizer's output;
//   2. the rest through the normalizer: Sequence, Precompiled (SentencePiece's charsmap, e.g. nmt_nfkc), Strip,
//      Replace (a string, or a regex of one character with a count, such as " {2,}", matched by hand), NFKC, NFC;
//   3. the pre-tokenizers, in order: Metaspace (spaces become U+2581, prepended per prepend_scheme always / first /
//      never, split before each U+2581); Split with behavior Isolated on the pattern of GPT-2, Qwen2 or Llama 3
//      (hand-written, byte_level.h: another regex is refused); ByteLevel (prefix space, GPT-2's split when
//      use_regex, each byte as one printable character);
//   4. the model: Unigram (Viterbi over the pieces' scores; unknown characters fuse into one unknown token) or BPE
//      (merges by rank; "left right" strings or [left, right] pairs; ignore_merges);
//   5. the post-processor: TemplateProcessing, RobertaProcessing (<s> A </s></s> B </s>) or ByteLevel (nothing).
// Anything else that tokenizer.json names (another normalizer, pre-tokenizer, model or post-processor; a Unigram
// with byte_fallback; a BPE with dropout, unk_token, a subword prefix or suffix; a single_word added token) is
// refused at load with an error naming it: never a silent difference.
//
// Thread safety: an HfTokenizer is immutable after construction; every const method may run concurrently. Copies
// are cheap (they share the tables).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/model/tokenizer.h"

namespace brisk {

class BRISK_API HfTokenizer {
 public:
  // tokenizer.json's text; `source` names it in errors. Invalid JSON, a missing or mistyped field, or an
  // unsupported stage is an InvalidArgument error saying what was found and what is expected.
  static StatusOr<HfTokenizer> from_json(std::string_view tokenizer_json, std::string_view source = "tokenizer.json");
  static StatusOr<HfTokenizer> from_file(const std::string& path);

  // The normalizer alone (tokenizers' normalizer.normalize_str); text must be UTF-8 (else an error naming the
  // byte offset), as for every call below.
  StatusOr<std::string> normalize(std::string_view text) const;
  // The pieces of text (added tokens included), without the post-processor's special tokens.
  StatusOr<std::vector<std::string>> tokenize(std::string_view text) const;
  // The ids with the post-processor's special tokens (<s> ... </s>), the text's own ids cut on the right so that
  // the total is at most max_seq_len (at least the special tokens' count plus 1).
  StatusOr<std::vector<int32_t>> encode(std::string_view text, int max_seq_len) const;
  // The pair template (<s> A </s></s> B </s>), both texts cut as tokenizers' truncation="longest_first" does
  // (longest_first_lengths in tokenizer.h).
  StatusOr<EncodedPair> encode_pair(std::string_view first, std::string_view second, int max_seq_len) const;

  int32_t token_to_id(std::string_view token) const;  // the unknown token's id when absent (-1 for a BPE)
  std::string_view id_to_token(int32_t id) const;     // "" when out of range
  int vocab_size() const;                             // ids are in [0, vocab_size())
  int32_t unk_id() const;                             // -1 for a BPE (byte-level: every byte has a token)
  // The id of an added token ("<pad>", "<mask>", "<s>", "</s>"), or -1.
  int32_t added_token_id(std::string_view content) const;
  std::string_view model_type() const;  // "Unigram" or "BPE"

  struct Impl;

 private:
  friend class TextTokenizer;  // parses tokenizer.json once to see whose it is, then builds from the parsed value
  explicit HfTokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  static StatusOr<HfTokenizer> from_parsed(const nlohmann::json& tokenizer_json, std::string_view source);
  std::shared_ptr<const Impl> impl_;
};

}  // namespace brisk
