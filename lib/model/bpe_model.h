// Internal to lib/model: the BPE model of a tokenizer.json, as Hugging Face tokenizers 0.19 computes it for
// byte-level vocabularies: a word (one pre-token, already byte-level mapped) starts as its characters and the
// adjacent pair of lowest merge rank is merged, the leftmost first on a tie, until no pair has a rank (in
// O(n log n) with a heap of candidate pairs, as tokenizers' Word::merge_all); each part is then looked up in the
// vocabulary. With ignore_merges (Llama 3), a word that is itself in the vocabulary is one token.
//
//   BRISK_ASSIGN_OR_RETURN(BpeModel m, BpeModel::create(vocab, {{"h", "i"}}, false, "tokenizer.json"));
//   std::vector<int32_t> ids;
//   m.encode("hi", ids);
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

class BpeModel {
 public:
  // vocab: token -> id; merges in rank order, each a pair whose concatenation must be in the vocabulary. Errors
  // name `source`: an empty vocabulary, a negative or repeated id, a merge of tokens not in the vocabulary.
  static StatusOr<BpeModel> create(std::vector<std::pair<std::string, int32_t>> vocab,
                                   const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges,
                                   std::string_view source);

  // Appends the ids of word (valid UTF-8); a character not in the vocabulary (none, with a byte-level alphabet) is
  // left out before the merges, as tokenizers does without an unk_token. With `pieces`, their strings too.
  void encode(std::string_view word, std::vector<int32_t>& ids, std::vector<std::string>* pieces = nullptr) const;

  int32_t token_to_id(std::string_view token) const;  // -1 when absent
  std::string_view id_to_token(int32_t id) const;     // "" when absent
  int32_t max_id() const { return max_id_; }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> ids_;
  std::vector<std::string> tokens_;  // by id ("" for ids no token has)
  // (left id, right id) -> (rank, merged id)
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;
  bool ignore_merges_ = false;
  int32_t max_id_ = -1;
};

}  // namespace brisk::detail
