// A model's tokenizer, whichever kind its files hold: WordPiece (the BERT family: WordPieceTokenizer, tokenizer.h)
// or a tokenizer.json whose model is Unigram (XLM-RoBERTa) or byte-level BPE (Qwen, GPT-2, Llama 3: HfTokenizer,
// hf_tokenizer.h). The loader, the runtime and the tools hold this one type; the calls that only WordPiece has
// (its options, the vocabulary's special tokens) go through wordpiece().
//
//   BRISK_ASSIGN_OR_RETURN(brisk::TextTokenizer tok, brisk::TextTokenizer::from_model_dir("/models/e5-multilingual"));
//   BRISK_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tok.encode("¿Dónde está mi paquete?", 128));
//   tok.kind();  // "Unigram"
//
// Thread safety: immutable after construction; every const method may run concurrently. Copies are cheap.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/model/hf_tokenizer.h"
#include "brisk/model/tokenizer.h"

namespace brisk {

class BRISK_API TextTokenizer {
 public:
  TextTokenizer(WordPieceTokenizer tokenizer);  // NOLINT(google-explicit-constructor): a WordPiece tokenizer is one
  // With replace_invalid_utf8, each ill-formed UTF-8 sequence (maximal subpart, brisk/core/utf8.h) becomes one
  // U+FFFD before encoding (as text decoded with errors="replace" reaches tokenizers); else such a text is an
  // error naming the offset.
  explicit TextTokenizer(HfTokenizer tokenizer, bool replace_invalid_utf8 = false);

  // The files of a model directory: tokenizer.json when its model is Unigram or BPE, else WordPiece's loaders
  // (tokenizer.json, vocab.txt, tokenizer_config.json).
  static StatusOr<TextTokenizer> from_model_dir(const std::string& dir, bool replace_invalid_utf8 = false);
  // The same over files in memory (a quantized model file's), by path relative to the model directory.
  static StatusOr<TextTokenizer> from_model_files(const std::map<std::string, std::string>& files,
                                                  bool replace_invalid_utf8, std::string_view source);

  // The ids with the model's special tokens, at most max_seq_len of them (see each tokenizer's encode()).
  StatusOr<std::vector<int32_t>> encode(std::string_view text, int max_seq_len) const;
  Status encode_into(std::string_view text, int max_seq_len, std::vector<int32_t>& ids) const;
  StatusOr<EncodedPair> encode_pair(std::string_view first, std::string_view second, int max_seq_len) const;
  // The pieces, without the special tokens of the template.
  StatusOr<std::vector<std::string>> tokenize(std::string_view text) const;

  int vocab_size() const;
  // The padding id: WordPiece's [PAD]; for the others "<pad>", else "<|endoftext|>", else 0.
  int32_t pad_id() const;
  std::string_view kind() const;  // "WordPiece", "Unigram" or "BPE"
  const WordPieceTokenizer* wordpiece() const { return std::get_if<WordPieceTokenizer>(&impl_); }
  const HfTokenizer* hf() const { return std::get_if<HfTokenizer>(&impl_); }

 private:
  // tokenizer.json's text parsed once: an HfTokenizer when its model is Unigram or BPE; nullopt when it is not JSON
  // or names another model (WordPiece's loaders then read it, and say what is wrong with it).
  static StatusOr<std::optional<HfTokenizer>> hf_tokenizer_of(std::string_view tokenizer_json, std::string_view source);

  std::variant<WordPieceTokenizer, HfTokenizer> impl_;
  bool replace_invalid_utf8_ = false;
};

}  // namespace brisk
