// WordPiece tokenizer compatible with Hugging Face BertTokenizerFast (the `tokenizers` BertNormalizer +
// BertPreTokenizer + WordPiece model + [CLS]/[SEP] template) and, for ordinary text, the slow BertTokenizer.
// It turns text into the input ids, token type ids and attention mask that a BERT-family encoder consumes.
//
//   BRISK_ASSIGN_OR_RETURN(brisk::WordPieceTokenizer tok,
//                          brisk::WordPieceTokenizer::from_model_dir("/models/all-MiniLM-L6-v2"));
//   BRISK_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tok.encode("How do I reset my PIN?", 128));
//   std::string_view texts[] = {"hello", "where is my parcel?"};
//   BRISK_ASSIGN_OR_RETURN(brisk::BatchEncoding batch, tok.encode_batch(texts, 128));
//
// Pipeline per text: split out special tokens written literally in the text ("[MASK]"), then per segment:
// drop NUL, U+FFFD and control characters; split on whitespace; pad CJK ideographs with spaces; strip accents
// (NFD, drop Mn) and lowercase; split on punctuation; greedy longest-match-first WordPiece with "##" pieces.
//
// Thread safety: a WordPieceTokenizer is immutable after construction. Every const method may run
// concurrently from any number of threads on one object. Copies are cheap (they share the vocabulary).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"

namespace brisk {

struct TokenizerOptions {
  bool lowercase = true;              // do_lower_case
  std::optional<bool> strip_accents;  // nullopt: follows lowercase (HF semantics)
  bool tokenize_chinese_chars = true;
  bool clean_text = true;              // drop NUL / U+FFFD / control characters, map whitespace to ' '
  int max_input_chars_per_word = 100;  // longer words (in code points) become [UNK]
  // false: invalid UTF-8 is an InvalidArgument error naming the byte offset; true: each bad byte becomes
  // U+FFFD (which clean_text then drops, as HF does with text decoded using errors="replace").
  bool replace_invalid_utf8 = false;
  // Special tokens written literally in the text ("[SEP]", "[MASK]") map to their ids, as HF does by default
  // (split_special_tokens=False). Set false to tokenize them like ordinary text.
  bool recognize_special_tokens = true;
  std::string continuing_subword_prefix = "##";
  std::string unk_token = "[UNK]";
  std::string cls_token = "[CLS]";
  std::string sep_token = "[SEP]";
  std::string pad_token = "[PAD]";
  std::string mask_token = "[MASK]";      // optional: may be absent from the vocabulary
  std::vector<std::string> added_tokens;  // more literal tokens to recognise (tokenizer.json added_tokens)
};

// Row-major [batch, seq_len], padded with [PAD] to the longest sequence in the batch.
struct BatchEncoding {
  int64_t batch = 0, seq_len = 0;
  std::vector<int32_t> input_ids, token_type_ids, attention_mask;
  std::vector<int32_t> lengths;  // real tokens per row ([CLS] and [SEP] included)
};

class BRISK_API WordPieceTokenizer {
 public:
  // vocab.txt: one token per line, the line number (from 0) is the id. Needs the unk/cls/sep/pad tokens.
  static StatusOr<WordPieceTokenizer> from_vocab_file(const std::string& vocab_txt, TokenizerOptions opts = {});
  // Reads tokenizer.json (model.vocab, normalizer settings, added tokens) when present, else vocab.txt plus
  // tokenizer_config.json (do_lower_case, strip_accents, tokenize_chinese_chars, special token names).
  // `replace_invalid_utf8` sets TokenizerOptions::replace_invalid_utf8, which no model file carries.
  static StatusOr<WordPieceTokenizer> from_model_dir(const std::string& dir, bool replace_invalid_utf8 = false);
  // The same over files already in memory, by path relative to the model directory ("tokenizer.json",
  // "vocab.txt", "tokenizer_config.json"; a quantized model file carries them). Messages name a file
  // "<source>:<path>".
  static StatusOr<WordPieceTokenizer> from_model_files(const std::map<std::string, std::string>& files,
                                                       bool replace_invalid_utf8, std::string_view source);
  // Tokens given in id order; the building block of the two loaders above (and of tests).
  static StatusOr<WordPieceTokenizer> from_tokens(std::vector<std::string> tokens, TokenizerOptions opts = {},
                                                  std::string_view source = "token list");

  // Words after normalisation and splitting, before WordPiece (HF's BasicTokenizer output).
  StatusOr<std::vector<std::string>> pre_tokenize(std::string_view text) const;
  // Word pieces, without [CLS]/[SEP].
  StatusOr<std::vector<std::string>> tokenize(std::string_view text) const;
  // [CLS] pieces [SEP], the pieces truncated on the right so the total is <= max_seq_len (>= 2).
  StatusOr<std::vector<int32_t>> encode(std::string_view text, int max_seq_len) const;
  // Like encode() into a caller-owned vector (cleared first), which keeps its capacity across calls.
  Status encode_into(std::string_view text, int max_seq_len, std::vector<int32_t>& ids) const;
  // Each text encoded as above, padded with [PAD] to the longest row. Needs at least one text.
  StatusOr<BatchEncoding> encode_batch(std::span<const std::string_view> texts, int max_seq_len) const;
  StatusOr<BatchEncoding> encode_batch(std::span<const std::string> texts, int max_seq_len) const;

  int32_t token_to_id(std::string_view token) const;  // unk id when absent
  std::string_view id_to_token(int32_t id) const;     // "" when out of range
  int vocab_size() const;
  int32_t cls_id() const;
  int32_t sep_id() const;
  int32_t pad_id() const;
  int32_t unk_id() const;
  int32_t mask_id() const;  // -1 when the vocabulary has no mask token
  const TokenizerOptions& options() const;

  struct Impl;  // defined in lib/model/tokenizer.cc

 private:
  explicit WordPieceTokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace brisk
