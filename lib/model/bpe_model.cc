// The byte-level BPE model, as Hugging Face tokenizers computes it (bpe_model.h).
#include "bpe_model.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "brisk/core/utf8.h"
#include "token_id.h"

namespace brisk::detail {
namespace {

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

}  // namespace

StatusOr<BpeModel> BpeModel::create(std::vector<std::pair<std::string, int32_t>> vocab,
                                    const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges,
                                    std::string_view source) {
  const std::string where(source);
  if (vocab.empty())
    return absl::InvalidArgumentError(absl::StrCat(where, ": the BPE vocab is empty; expected tokens"));
  BpeModel m;
  m.ignore_merges_ = ignore_merges;
  for (auto& [token, id] : vocab) {
    if (!detail::is_token_id(id) || token.empty() || !is_valid_utf8(token)) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": BPE vocab entry \"", is_valid_utf8(token) ? token : "?",
                                                     "\" has the id ", id,
                                                     "; expected a non-empty UTF-8 token and an id in [0, 2^30)"));
    }
    m.max_id_ = std::max(m.max_id_, id);
    if (!m.ids_.emplace(token, id).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": BPE token \"", token, "\" appears twice"));
    }
  }
  m.tokens_.resize(static_cast<size_t>(m.max_id_) + 1);
  for (const auto& [token, id] : m.ids_) {
    if (!m.tokens_[static_cast<size_t>(id)].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": BPE id ", id, " has two tokens"));
    }
    m.tokens_[static_cast<size_t>(id)] = token;
  }
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const int32_t l = m.token_to_id(left), r = m.token_to_id(right), merged = m.token_to_id(left + right);
    if (l < 0 || r < 0 || merged < 0) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": BPE merge ", rank, " (\"", left, "\" \"", right,
                                                     "\") names a token not in the vocabulary"));
    }
    // A merge listed twice takes its last rank, as tokenizers builds its map in list order.
    m.merges_.insert_or_assign(pair_key(l, r), std::make_pair(static_cast<int32_t>(rank), merged));
  }
  return m;
}

int32_t BpeModel::token_to_id(std::string_view token) const {
  auto it = ids_.find(token);
  return it == ids_.end() ? -1 : it->second;
}

std::string_view BpeModel::id_to_token(int32_t id) const {
  return id >= 0 && id <= max_id_ ? std::string_view(tokens_[static_cast<size_t>(id)]) : std::string_view();
}

void BpeModel::encode(std::string_view word, std::vector<int32_t>& ids, std::vector<std::string>* pieces) const {
  if (ignore_merges_) {
    if (const int32_t id = token_to_id(word); id >= 0) {
      ids.push_back(id);
      if (pieces != nullptr) pieces->emplace_back(word);
      return;
    }
  }
  // The merges as tokenizers' Word::merge_all makes them, in O(n log n): the parts are a linked list, and a
  // min-heap holds every adjacent pair that has a merge, ordered by (rank, position). A popped pair is applied
  // unless it is stale (its left part was merged away or either part has changed since it was pushed); each
  // merge pushes the two pairs it forms with its neighbours. This is the lowest rank first, the leftmost first
  // on a tie (the same pair at several places, as in "aaaa"), exactly as a rescan of all pairs per merge gives.
  struct Part {
    int32_t id;
    size_t prev, next;  // kNone at the ends
  };
  struct Candidate {
    int32_t rank, merged, left, right;
    size_t pos;  // the left part's index
  };
  constexpr size_t kNone = std::numeric_limits<size_t>::max();
  thread_local std::vector<Part> parts;
  thread_local std::vector<Candidate> heap;
  parts.clear();
  heap.clear();
  for (size_t pos = 0; pos < word.size();) {
    const auto n = static_cast<size_t>(decode_utf8(word, pos).length);
    // A character outside the vocabulary is left out before the merges, as tokenizers does without an unk_token.
    if (const int32_t id = token_to_id(word.substr(pos, n)); id >= 0) {
      parts.push_back(Part{id, parts.empty() ? kNone : parts.size() - 1, kNone});
      if (parts.size() > 1) parts[parts.size() - 2].next = parts.size() - 1;
    }
    pos += n;
  }
  // std::push_heap keeps the greatest first: "greater" here is the lower rank, then the lower position.
  const auto later = [](const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  };
  const auto push_pair = [&](size_t left) {
    const size_t right = parts[left].next;
    if (right == kNone) return;
    auto it = merges_.find(pair_key(parts[left].id, parts[right].id));
    if (it == merges_.end()) return;
    heap.push_back(Candidate{it->second.first, it->second.second, parts[left].id, parts[right].id, left});
    std::push_heap(heap.begin(), heap.end(), later);
  };
  for (size_t i = 0; i + 1 < parts.size(); ++i) push_pair(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const Candidate c = heap.back();
    heap.pop_back();
    Part& left = parts[c.pos];
    if (left.id != c.left || left.next == kNone || parts[left.next].id != c.right) continue;  // stale
    const size_t right = left.next;
    left.id = c.merged;
    left.next = parts[right].next;
    if (left.next != kNone) parts[left.next].prev = c.pos;
    parts[right].id = -1;  // merged away
    if (left.prev != kNone) push_pair(left.prev);
    push_pair(c.pos);
  }
  for (size_t i = parts.empty() ? kNone : 0; i != kNone; i = parts[i].next) {
    const int32_t id = parts[i].id;
    ids.push_back(id);
    if (pieces != nullptr) pieces->emplace_back(tokens_[static_cast<size_t>(id)]);
  }
}

}  // namespace brisk::detail
