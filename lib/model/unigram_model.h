// Internal to lib/model: the SentencePiece Unigram model of a tokenizer.json, as Hugging Face tokenizers 0.19
// computes it (models/unigram, encode_optimized): the Viterbi segmentation of a piece of text that maximises the
// sum of the pieces' scores (f64), the vocabulary's pieces tried shortest first with ties kept by the first found;
// a character that no piece starts with costs the unknown token's score (the lowest score minus 10) and adjacent
// unknown characters fuse into one unknown token.
//
//   BRISK_ASSIGN_OR_RETURN(UnigramModel m, UnigramModel::create({{"<unk>", 0}, {"▁hi", -1.5}}, 0, "tokenizer.json"));
//   std::vector<int32_t> ids;
//   m.encode("▁hi", ids);
//
// Thread safety: immutable after create(); encode() may run concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "brisk/core/status.h"

namespace brisk::detail {

class UnigramModel {
 public:
  // pieces: (piece, score) in id order; unk_id indexes them. Errors name `source`: no pieces, an empty or
  // repeated piece, a piece that is not UTF-8, a score that is not finite, unk_id out of range.
  static StatusOr<UnigramModel> create(std::vector<std::pair<std::string, double>> pieces, int32_t unk_id,
                                       std::string_view source);

  // Appends the ids of `text`'s segmentation (text: valid UTF-8).
  void encode(std::string_view text, std::vector<int32_t>& ids) const;
  // The pieces of the same segmentation (a fused unknown run is the run's text).
  void tokenize(std::string_view text, std::vector<std::string>& pieces) const;

  int32_t unk_id() const { return unk_id_; }
  int32_t size() const { return static_cast<int32_t>(pieces_.size()); }
  const std::string& piece(int32_t id) const { return pieces_[static_cast<size_t>(id)].first; }
  int32_t piece_to_id(std::string_view piece) const;  // -1 when absent

 private:
  struct Span {
    size_t start, end;
    int32_t id;
  };
  void segment(std::string_view text, std::vector<Span>& spans) const;

  std::vector<std::pair<std::string, double>> pieces_;
  struct Hash {  // transparent: find(std::string_view) without a std::string
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> ids_;
  size_t max_piece_bytes_ = 0;
  int32_t unk_id_ = 0;
  double unk_score_ = 0.0;
};

}  // namespace brisk::detail
