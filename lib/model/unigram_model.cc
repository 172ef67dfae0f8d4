// The SentencePiece Unigram model, as Hugging Face tokenizers computes it (unigram_model.h).
#include "unigram_model.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "brisk/core/utf8.h"

namespace brisk::detail {
namespace {

constexpr double kUnknownPenalty = 10.0;  // tokenizers' K_UNK_PENALTY

}  // namespace

StatusOr<UnigramModel> UnigramModel::create(std::vector<std::pair<std::string, double>> pieces, int32_t unk_id,
                                            std::string_view source) {
  if (pieces.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(source), ": the Unigram vocab is empty; expected pieces"));
  }
  if (unk_id < 0 || static_cast<size_t>(unk_id) >= pieces.size()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(source), ": the Unigram unk_id is ", unk_id,
                                                   "; expected an id in [0, ", pieces.size(), ")"));
  }
  UnigramModel m;
  m.unk_id_ = unk_id;
  double min_score = pieces[0].second;
  m.ids_.reserve(pieces.size());
  for (size_t id = 0; id < pieces.size(); ++id) {
    const auto& [piece, score] = pieces[id];
    if (piece.empty() || !is_valid_utf8(piece)) {
      return absl::InvalidArgumentError(absl::StrCat(std::string(source), ": Unigram piece ", id,
                                                     " is empty or not UTF-8; expected a non-empty UTF-8 string"));
    }
    if (!std::isfinite(score)) {
      return absl::InvalidArgumentError(absl::StrCat(std::string(source), ": Unigram piece ", id, " has the score ",
                                                     score, "; expected a finite number"));
    }
    if (!m.ids_.emplace(piece, static_cast<int32_t>(id)).second) {
      return absl::InvalidArgumentError(absl::StrCat(std::string(source), ": Unigram piece ", id, " repeats piece ",
                                                     m.ids_[piece], "; expected each piece once"));
    }
    m.max_piece_bytes_ = std::max(m.max_piece_bytes_, piece.size());
    min_score = std::min(min_score, score);
  }
  m.unk_score_ = min_score - kUnknownPenalty;
  m.pieces_ = std::move(pieces);
  return m;
}

int32_t UnigramModel::piece_to_id(std::string_view piece) const {
  auto it = ids_.find(piece);
  return it == ids_.end() ? -1 : it->second;
}

void UnigramModel::segment(std::string_view text, std::vector<Span>& spans) const {
  spans.clear();
  const size_t n = text.size();
  struct Node {
    double score = 0.0;
    std::optional<size_t> start;
    int32_t id = 0;
  };
  std::vector<Node> best(n + 1);
  best[0].start = 0;
  auto offer = [&](size_t start, size_t end, int32_t id, double score) {
    Node& node = best[end];
    const double candidate = score + best[start].score;
    if (!node.start || candidate > node.score) {
      node.score = candidate;
      node.start = start;
      node.id = id;
    }
  };
  for (size_t start = 0; start < n;) {
    const auto char_bytes = static_cast<size_t>(decode_utf8(text, start).length);
    bool single_char_piece = false;
    // The vocabulary's pieces that prefix text[start..], shortest first: the trie's common-prefix order.
    const size_t longest = std::min(max_piece_bytes_, n - start);
    for (size_t len = 1; len <= longest; ++len) {
      auto it = ids_.find(text.substr(start, len));
      if (it == ids_.end()) continue;
      offer(start, start + len, it->second, pieces_[static_cast<size_t>(it->second)].second);
      if (len == char_bytes) single_char_piece = true;
    }
    if (!single_char_piece) offer(start, start + char_bytes, unk_id_, unk_score_);
    start += char_bytes;
  }
  // Back from the end; runs of unknown characters become one span.
  for (size_t end = n; end > 0;) {
    const Node& node = best[end];
    const size_t start = *node.start;
    if (node.id == unk_id_ && !spans.empty() && spans.back().id == unk_id_) {
      spans.back().start = start;
    } else {
      spans.push_back({start, end, node.id});
    }
    end = start;
  }
  std::reverse(spans.begin(), spans.end());
}

void UnigramModel::encode(std::string_view text, std::vector<int32_t>& ids) const {
  thread_local std::vector<Span> spans;
  segment(text, spans);
  for (const Span& s : spans) ids.push_back(s.id);
}

void UnigramModel::tokenize(std::string_view text, std::vector<std::string>& pieces) const {
  std::vector<Span> spans;
  segment(text, spans);
  for (const Span& s : spans) pieces.emplace_back(text.substr(s.start, s.end - s.start));
}

}  // namespace brisk::detail
