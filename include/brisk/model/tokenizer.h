// WordPiece tokenizer compatible with Hugging Face BertTokenizerFast (the `tokenizers` BertNormalizer +
// BertPreTokenizer + WordPiece model + [CLS]/[SEP] template) and, for ordinary text, the slow BertTokenizer.
// It turns text into the input ids, token type ids and attention mask that a BERT-family encoder consumes.
//
//   BRISK_ASSIGN_OR_RETURN(brisk::WordPieceTokenizer tok,
//                          brisk::WordPieceTokenizer::from_model_dir("/models/all-MiniLM-L6-v2"));
//   BRISK_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tok.encode("How do I reset my PIN?", 128));
//   std::string_view texts[] = {"hello", "where is my parcel?"};
//   BRISK_ASSIGN_OR_RETURN(brisk::BatchEncoding batch, tok.encode_batch(texts, 128));
//   // A query/passage pair for a cross-encoder: [CLS] query [SEP] passage [SEP], HF "longest_first" truncation.
//   BRISK_ASSIGN_OR_RETURN(brisk::EncodedPair pair, tok.encode_pair("reset PIN", "To reset your PIN...", 512));
//
// Pipeline per text, as HF tokenizers' AddedVocabulary and BertNormalizer/BertPreTokenizer/WordPiece run it: split
// out the special and added tokens written literally in the raw text ("[MASK]"; AddedToken::normalized false), then
// per segment: drop NUL, U+FFFD and control characters; pad CJK ideographs with spaces; strip accents (NFD, drop Mn)
// and lowercase; split out the added tokens matched in that normalised text (AddedToken::normalized true, by their
// normalised content: "COVID19" matches "covid19" and "Covid19"); split on whitespace and punctuation; greedy
// longest-match-first WordPiece with "##" pieces.
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

// A token matched as a whole in the text before WordPiece: one of tokenizer.json's "added_tokens" (transformers'
// tokenizer.add_tokens and add_special_tokens write them), with the same flags.
struct AddedToken {
  std::string content;
  bool special = false;     // skipped when TokenizerOptions::recognize_special_tokens is false
  bool normalized = false;  // matched in the normalised text by its normalised content, else in the raw text
  // Whitespace before / after the token belongs to its match. The pre-tokenizer drops all whitespace, so these never
  // change WordPiece's ids. (single_word, the other flag of HF's, is refused where tokenizer.json sets it.)
  bool lstrip = false, rstrip = false;
  bool operator==(const AddedToken&) const = default;
};

struct TokenizerOptions {
  bool lowercase = true;              // do_lower_case
  std::optional<bool> strip_accents;  // nullopt: follows lowercase (HF semantics)
  bool tokenize_chinese_chars = true;
  bool clean_text = true;              // drop NUL / U+FFFD / control characters, map whitespace to ' '
  int max_input_chars_per_word = 100;  // longer words (in code points) become [UNK]
  // false: invalid UTF-8 is an InvalidArgument error naming the byte offset; true: each ill-formed sequence
  // (maximal subpart, brisk/core/utf8.h) becomes U+FFFD, which clean_text then drops, as HF does with text
  // decoded using errors="replace".
  bool replace_invalid_utf8 = false;
  // Special tokens written literally in the text ("[SEP]", "[MASK]") map to their ids, as HF does by default
  // (split_special_tokens=False). Set false to tokenize them like ordinary text (added tokens that are not special
  // are still matched, as with HF's split_special_tokens=True).
  bool recognize_special_tokens = true;
  std::string continuing_subword_prefix = "##";
  std::string unk_token = "[UNK]";
  std::string cls_token = "[CLS]";
  std::string sep_token = "[SEP]";
  std::string pad_token = "[PAD]";
  std::string mask_token = "[MASK]";  // optional: may be absent from the vocabulary
  // More tokens to recognise (tokenizer.json's added_tokens), each needing an id in the vocabulary. The five tokens
  // above are recognised too, as special tokens matched in the raw text, unless listed here with other flags.
  std::vector<AddedToken> added_tokens;
  // How many tokens, from id 0, are the WordPiece model's own vocabulary (tokenizer.json's model.vocab); 0: every
  // token (vocab.txt). The ids past it are added tokens only: as in HF tokenizers, WordPiece never produces them, so
  // one is matched only as an added token, by its flags ("covid19" with normalized false matches the raw "covid19"
  // only; the lowercased "COVID19" goes through WordPiece as co ##vid ##19). An added token that the model's
  // vocabulary has (an id below this) can come out of WordPiece too.
  int model_vocab_size = 0;
};

// Row-major [batch, seq_len], padded with [PAD] to the longest sequence in the batch.
struct BatchEncoding {
  int64_t batch = 0, seq_len = 0;
  std::vector<int32_t> input_ids, token_type_ids, attention_mask;
  std::vector<int32_t> lengths;  // real tokens per row ([CLS] and [SEP] included)
};

// A sentence pair as a cross-encoder consumes it: ids = [CLS] first [SEP] second [SEP]. The token type ids are 0
// up to and including the first [SEP] and 1 from `second_start` on (the second text and the closing [SEP]), as in
// the BERT pair template, so they are not stored.
struct EncodedPair {
  std::vector<int32_t> ids;
  int32_t second_start = 0;  // index of the second text's first piece (or of the final [SEP] when it is empty)

  std::vector<int32_t> token_type_ids() const {
    std::vector<int32_t> types(ids.size(), 0);
    for (size_t i = static_cast<size_t>(second_start); i < types.size(); ++i) types[i] = 1;
    return types;
  }
};

// How many pieces of each text Hugging Face tokenizers' truncation="longest_first" keeps (checked against
// tokenizers 0.19, src/utils/truncation.rs) when `budget` pieces fit (max_length minus the 3 special tokens):
//   - first + second <= budget: both whole;
//   - else, with `shorter` the smaller length (the first text on a tie): when shorter <= budget / 2 it stays
//     whole and the longer text is cut to budget - shorter;
//   - else both are cut: the shorter (the first on a tie) to floor(budget / 2), the longer to ceil(budget / 2).
// Pieces are removed from the end of a text. This differs from removing one piece at a time from the longer text,
// from the second on a tie (what transformers 4.44's slow Python tokenizers, e.g. BertTokenizer, compute), only
// in who gets the odd piece of an odd budget: here the longer text, the second on a tie. E.g. with a budget of 5,
// 8 + 9 pieces keep 2 + 3 and 7 + 7 keep 2 + 3, where the slow rule keeps 3 + 2 in both.
struct PairLengths {
  size_t first = 0, second = 0;
};
BRISK_API PairLengths longest_first_lengths(size_t first_len, size_t second_len, size_t budget);

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
  // [CLS] first [SEP] second [SEP] with at most max_seq_len ids, the two texts' pieces truncated as HF tokenizers'
  // truncation="longest_first" does (longest_first_lengths above; the 3 special tokens count against
  // max_seq_len). Each text goes through the same path as encode(), whole: the rule needs both full lengths, so
  // the cost is linear in both texts however small max_seq_len is. Invalid UTF-8 is handled as in encode(); the
  // message starts "encode_pair: first text: " or "encode_pair: second text: " and gives the offset in that text.
  // max_seq_len < 3 is an InvalidArgument error (HF tokenizers does not fail there: its budget of
  // max_length - 3 wraps around and nothing is truncated at all). An empty text keeps its segment:
  // encode_pair("abc", "", n) is [CLS] abc [SEP] [SEP], as in `tokenizers` (transformers' unbatched call
  // tokenizer("abc", "") instead drops the empty pair and encodes one text).
  StatusOr<EncodedPair> encode_pair(std::string_view first, std::string_view second, int max_seq_len) const;

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
